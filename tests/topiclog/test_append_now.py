"""append_now, the publish path's append: the entry itself when it is acknowledged within
the call (no Deferred made), else the same Deferred append gives, firing in call order."""

import pytest
from twisted.internet.defer import Deferred

from hedwig.ledger import StorageFull
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
    stack.ledgers.fail_appends(StorageFull("full"))
    refused = log.append_now(message_set(1), 1)
    assert failure_of(stack, refused).check(StorageFull)
    entry = log.append_now(message_set(1), 1)
    assert (entry.first_seq, log.last_seq) == (1, 1)
