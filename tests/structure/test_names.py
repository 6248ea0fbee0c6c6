"""Each exception of hedwig has a name of its own: a caller who catches SeqOutOfRange
means one thing (the client's, raised for the hub's SEQ_OUT_OF_RANGE), never the topic
log's (SeqNotRetained) that the hub maps to it. Protocol and hub once each had a
RequestError, a ServiceDown and a SeqOutOfRange; ledger and client a StorageFull; topic
log and client a TooManyTopics."""

from collections import defaultdict

from tests.structure.classes import classes_of, hedwig_modules


def test_no_two_exceptions_of_hedwig_share_a_name():
    declared = defaultdict(set)
    for cls in classes_of(hedwig_modules()):
        if issubclass(cls, BaseException):
            declared[cls.__qualname__].add(cls.__module__)
    assert {"SeqOutOfRange", "StorageFull", "HubUnavailable"} <= set(declared)  # (all was read)
    assert {name: sorted(modules) for name, modules in declared.items() if len(modules) > 1} == {}
