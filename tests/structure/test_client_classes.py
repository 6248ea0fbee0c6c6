"""The clients are built from collaborators: every class of hedwig/client has at most one
base class of hedwig's own (no mixins sharing private state), and the client core's
seams are declared and provided."""

import importlib
import inspect
import pkgutil

from zope.interface.verify import verifyClass

import hedwig.client
from hedwig.client.blocking import BlockingConnections
from hedwig.client.core import IConnections, LoopConnections


def _client_classes():
    for module_info in pkgutil.iter_modules(hedwig.client.__path__, "hedwig.client."):
        module = importlib.import_module(module_info.name)
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__:
                yield cls


def test_no_client_class_has_more_than_one_base_of_hedwigs_own():
    classes = list(_client_classes())
    assert len(classes) > 30  # (the package was read)
    mixed = {
        cls.__qualname__: [
            base.__qualname__ for base in cls.__bases__ if base.__module__.startswith("hedwig.")
        ]
        for cls in classes
    }
    assert {name: bases for name, bases in mixed.items() if len(bases) > 1} == {}


def test_the_connections_of_every_client_provide_iconnections():
    assert verifyClass(IConnections, BlockingConnections)
    assert verifyClass(IConnections, LoopConnections)
