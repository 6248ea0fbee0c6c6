"""The classes of the hedwig package, read by importing every module of it."""

import importlib
import inspect
import pkgutil

import hedwig


def hedwig_modules():
    """Every module of hedwig but the command line's entry point (which runs when imported)."""
    for info in pkgutil.walk_packages(hedwig.__path__, f"{hedwig.__name__}."):
        if info.name.rpartition(".")[2] != "__main__":
            yield importlib.import_module(info.name)


def classes_of(modules):
    """The classes each module declares itself (not those it imports)."""
    for module in modules:
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__:
                yield cls
