"""The package's shape: no import circles, and the layers import downwards only."""

from tests.structure.imports import cycles, import_graph, imported_names, module_names


def test_no_import_circle():
    assert cycles(import_graph()) == []


def test_cycles_finds_a_circle_through_a_lazy_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_nothing_below_the_hub_imports_the_reactor():
    """Time and scheduling come in as arguments, so these layers run under task.Clock."""
    below_hub = ("cache", "delivery", "ledger", "meta", "protocol", "selector", "topiclog")
    offenders = [
        name
        for name, path in module_names().items()
        if name.split(".")[1:2]
        and name.split(".")[1] in below_hub
        and "twisted.internet.reactor" in set(imported_names(path))
    ]
    assert offenders == []
