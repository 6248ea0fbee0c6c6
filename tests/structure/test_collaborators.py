"""A class owns its parts through its constructor (collaborators), not by inheriting
mixins that share its private state: no class of the ledger stores inherits from three
or more of hedwig's own classes (MmapLedgerStore once did, from four)."""

import importlib
import inspect
import pkgutil

import hedwig.ledger

LIMIT = 3


def hedwig_ancestors(cls) -> list:
    return [base for base in cls.__mro__[1:] if base.__module__.startswith("hedwig.")]


def test_no_ledger_store_class_inherits_from_three_hedwig_classes_or_more():
    offenders = {}
    for module_info in pkgutil.iter_modules(hedwig.ledger.__path__, "hedwig.ledger."):
        module = importlib.import_module(module_info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and len(hedwig_ancestors(cls)) >= LIMIT:
                offenders[f"{module.__name__}.{name}"] = [base.__name__ for base in hedwig_ancestors(cls)]
    assert offenders == {}
