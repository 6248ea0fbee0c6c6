"""Classes own their parts through their constructors: none is built by inheriting from
three or more of hedwig's own classes (mixins sharing private state by convention).

Exceptions are left out: a hierarchy of errors is a taxonomy callers catch by (a closed
log is a LogError and a LedgerError), not parts sharing state. Packages join the list as
they are rebuilt from collaborators.
"""

import importlib
import inspect
import pkgutil

import pytest

import hedwig

PACKAGES = ("hedwig.cache", "hedwig.delivery", "hedwig.topiclog")
LIMIT = 3


def own_ancestors(cls) -> list:
    """The hedwig classes `cls` inherits from, however indirectly."""
    return [base for base in cls.__mro__[1:] if base.__module__.split(".")[0] == hedwig.__name__]


def classes_of(package_name: str):
    package = importlib.import_module(package_name)
    for info in pkgutil.walk_packages(package.__path__, f"{package_name}."):
        module = importlib.import_module(info.name)
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and not issubclass(cls, BaseException):
                yield cls


@pytest.mark.parametrize("package_name", PACKAGES)
def test_no_class_inherits_from_three_of_hedwigs_own(package_name):
    offenders = {
        f"{cls.__module__}.{cls.__qualname__}": [base.__name__ for base in own_ancestors(cls)]
        for cls in classes_of(package_name)
        if len(own_ancestors(cls)) >= LIMIT
    }
    assert offenders == {}


def test_own_ancestors_counts_every_hedwig_class_on_the_way():
    class A:
        pass

    class B(A):
        pass

    class C(B):
        pass

    for cls in (A, B, C):
        cls.__module__ = "hedwig.example"
    assert own_ancestors(C) == [B, A]
