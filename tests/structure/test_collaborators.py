"""A class owns its parts through its constructor (collaborators), not by inheriting
mixins that share its private state: no class of any module of hedwig inherits from
three or more of hedwig's own classes (MmapLedgerStore once did, from four;
DeliveryManager from five; TopicLog from three; the clients' pull subscriptions from
three, through the shared kind).

Exceptions are left out: a hierarchy of errors is a taxonomy callers catch by (a closed
topic log is a LogError and a LedgerError), not parts sharing state.
"""

import hedwig
from tests.structure.classes import classes_of, hedwig_modules

LIMIT = 3


def hedwig_ancestors(cls) -> list:
    """The hedwig classes `cls` inherits from, however indirectly."""
    return [base for base in cls.__mro__[1:] if base.__module__.split(".")[0] == hedwig.__name__]


def test_no_class_inherits_from_three_of_hedwigs_own_or_more():
    modules = list(hedwig_modules())
    assert {"hedwig.client.aio_subscriptions", "hedwig.hub.connection", "hedwig.spark.source"} <= {
        module.__name__ for module in modules
    }  # (every package was read)
    offenders = {
        f"{cls.__module__}.{cls.__qualname__}": [base.__name__ for base in hedwig_ancestors(cls)]
        for cls in classes_of(modules)
        if not issubclass(cls, BaseException) and len(hedwig_ancestors(cls)) >= LIMIT
    }
    assert offenders == {}


def test_every_hedwig_class_on_the_way_counts():
    class A:
        pass

    class B(A):
        pass

    class C(B):
        pass

    for cls in (A, B, C):
        cls.__module__ = "hedwig.example"
    assert hedwig_ancestors(C) == [B, A]
