"""append_now, the publish path's append: the entry itself when it is acknowledged within
the call (no Deferred made), else the same Deferred append gives, firing in call order."""

import pytest
from twisted.internet.defer import Deferred

from hedwig.ledger import LedgerStoreFull
from hedwig.topiclog.entry import LogEntry
from tests.topiclog.harness import failure_of, message_set, settle


@pytest.fixture
def topic_log(make_stack):
    stack = make_stack()
    return stack, settle(stack, stack.manager().open("t"))


def test_an_append_acknowledged_at_once_is_answered_with_its_entry(topic_log):
    stack, log = topic_log
    first = log.append_now(message_set(2, tag=1), 2)
    second = log.append_now(message_set(1, tag=2), 1)
    assert type(first) is LogEntry and type(second) is LogEntry
    assert [(e.first_seq, e.last_seq) for e in (first, second)] == [(1, 2), (3, 3)]
    assert log.last_seq == 3
    # The same entry as append stores and reads back.
    [read_first, read_second] = settle(stack, log.read(1, 10, 1 << 20))
    assert (read_first.data, read_second.data) == (first.data, second.data)


def test_behind_an_append_in_flight_it_is_answered_in_call_order(make_stack, backend):
    if backend != "memory":
        pytest.skip("holds acknowledgements: an in-memory store feature")
    stack = make_stack()
    log = settle(stack, stack.manager().open("t"))
    stack.ledgers.hold_acks()
    waiting = log.append(message_set(1, tag=1), 1)
    stack.ledgers.hold_no_more()
    later = log.append_now(message_set(1, tag=2), 1)  # stored at once, acknowledged after the first
    assert isinstance(later, Deferred) and not later.called and not waiting.called
    order = []
    waiting.addCallback(lambda entry: order.append(entry.first_seq))
    later.addCallback(lambda entry: order.append(entry.first_seq))
    stack.ledgers.release_acks()
    assert order == [1, 2] and log.last_seq == 2


def test_a_refusal_at_once_is_a_failed_deferred_that_takes_no_seq_ids(make_stack, backend):
    if backend != "memory":
        pytest.skip("refuses appends on demand: an in-memory store feature")
    stack = make_stack()
    log = settle(stack, stack.manager().open("t"))
    stack.ledgers.fail_appends(LedgerStoreFull("full"))
    refused = log.append_now(message_set(1), 1)
    assert failure_of(stack, refused).check(LedgerStoreFull)
    entry = log.append_now(message_set(1), 1)
    assert (entry.first_seq, log.last_seq) == (1, 1)


def test_the_common_case_and_the_general_path_store_the_same_entry(make_stack):
    """A client's append to an idle log takes the one-call path (local_append.py); the same
    append naming its origin region takes the general one: the same entry, state and roll."""
    from hedwig.config.settings import LogSettings

    stack = make_stack(LogSettings(max_ledger_entries=2))
    manager = stack.manager()
    fast, general = settle(stack, manager.open("a")), settle(stack, manager.open("b"))
    taken = []
    for log in (fast, general):
        one_call = log._append_local
        log._append_local = lambda *args, one_call=one_call, log=log: taken.append(log) or one_call(*args)
    stored = []
    for k in range(3):  # the third append finds the first ledger full: a roll under each
        one = fast.append_now(message_set(2, tag=k), 2)
        other = general.append_now(message_set(2, tag=k), 2, origin_region="r1")
        if type(other) is not LogEntry:
            other = settle(stack, other)
        if type(one) is not LogEntry:
            one = settle(stack, one)
        stored.append((one, other))
    for one, other in stored:
        assert (one.first_seq, one.last_seq, one.data, one.publish_time_us) == (
            other.first_seq,
            other.last_seq,
            other.data,
            other.publish_time_us,
        )
    assert taken == [fast] * 3
    assert fast.last_seq == general.last_seq == 6
    assert fast.rolls == general.rolls == 1
    assert [r.first_seq for r in fast.ranges] == [r.first_seq for r in general.ranges]
    assert [e.data for e in settle(stack, fast.read(1, 10, 1 << 20))] == [
        e.data for e in settle(stack, general.read(1, 10, 1 << 20))
    ]
