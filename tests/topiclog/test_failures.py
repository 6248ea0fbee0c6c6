"""Failed appends: no gaps, order kept, the log recovers or stops as it must."""

import pytest

from hedwig.config.settings import LogSettings
from hedwig.ledger import LedgerError, LedgerStoreFull
from hedwig.topiclog import LogClosed, LogFailed, TopicFenced
from tests.topiclog.harness import failure_of, message_set, settle


@pytest.fixture
def memory_stack(make_stack, backend):
    if backend != "memory":
        pytest.skip("scripted store failures are an in-memory store feature")
    return make_stack


def test_storage_full_leaves_no_gap_and_the_next_append_succeeds(memory_stack):
    stack = memory_stack(capacity_bytes=400)
    topic_log = settle(stack, stack.manager().open("t"))
    stored = []
    while True:
        outcome = settle(stack, topic_log.append(message_set(2, 50), 2), check=False)
        if not hasattr(outcome, "first_seq"):
            break
        stored.append(outcome)
    assert outcome.check(LedgerStoreFull)
    assert topic_log.last_seq == stored[-1].last_seq
    stack.ledgers.capacity_bytes = None  # space returns
    after = settle(stack, topic_log.append(message_set(2, 50), 2))
    assert after.first_seq == stored[-1].last_seq + 1
    got = settle(stack, topic_log.read(1, 100, 1 << 20))
    assert [e.first_seq for e in got] == [e.first_seq for e in [*stored, after]]


def test_storage_full_frees_nothing_and_a_later_gc_makes_room(memory_stack):
    stack = memory_stack(LogSettings(max_ledger_entries=2), capacity_bytes=500)
    topic_log = settle(stack, stack.manager().open("t"))
    last = None
    for _ in range(20):
        outcome = settle(stack, topic_log.append(message_set(1, 60), 1), check=False)
        if not hasattr(outcome, "first_seq"):
            break
        last = outcome
    assert outcome.check(LedgerStoreFull)
    settle(stack, topic_log.collect_garbage(last.last_seq))
    assert settle(stack, topic_log.append(message_set(1, 60), 1)).first_seq == last.last_seq + 1


def test_a_refused_append_among_pipelined_ones_fails_in_its_place(memory_stack):
    stack = memory_stack()
    topic_log = settle(stack, stack.manager().open("t"))
    stack.ledgers.hold_acks()
    order = []

    def track(d, i):
        d.addCallbacks(lambda e: order.append((i, e.first_seq)), lambda f: order.append((i, f.type.__name__)))

    track(topic_log.append(message_set(1), 1), 0)
    stack.ledgers.fail_appends(LedgerStoreFull("disk full"))
    track(topic_log.append(message_set(1), 1), 1)
    track(topic_log.append(message_set(1), 1), 2)
    assert order == []  # the refusal waits for the append before it
    stack.ledgers.release_acks()
    assert order == [(0, 1), (1, "LedgerStoreFull"), (2, 2)]
    assert topic_log.last_seq == 2


def test_a_store_exception_raised_synchronously_is_a_refusal(memory_stack):
    stack = memory_stack()
    topic_log = settle(stack, stack.manager().open("t"))
    settle(stack, topic_log.append(message_set(1), 1))
    stack.ledgers.fail_appends(LedgerError("I/O error writing the page"))
    failure = failure_of(stack, topic_log.append(message_set(1), 1))
    assert failure.check(LedgerError) and "I/O error" in str(failure.value)
    assert topic_log.is_open
    assert settle(stack, topic_log.append(message_set(1), 1)).first_seq == 2


def test_a_failure_after_storing_stops_the_log_and_reopen_recovers_it(memory_stack):
    stack = memory_stack()
    manager = stack.manager()
    topic_log = settle(stack, manager.open("t"))
    settle(stack, topic_log.append(message_set(1), 1))
    stack.ledgers.hold_acks()
    stack.ledgers.fail_appends(LedgerError("fsync failed"), after_storing=True)
    failed = topic_log.append(message_set(1), 1)  # stored, then its sync fails
    later = topic_log.append(message_set(1), 1)  # handed over before the failure was known
    stack.ledgers.release_acks()
    assert failure_of(stack, failed).check(LedgerError)
    assert failure_of(stack, later).check(LogFailed)
    assert not topic_log.is_open
    assert failure_of(stack, topic_log.append(message_set(1), 1)).check(LogFailed)  # says why
    assert manager.get("t") is None

    reopened = settle(stack, manager.open("t"))
    assert reopened is not topic_log
    # The unacknowledged entries were stored: recovery keeps them (no gap, at least once).
    assert reopened.last_seq == 3
    assert settle(stack, reopened.append(message_set(1), 1)).first_seq == 4


def test_an_append_to_a_ledger_another_hub_recovered_fails_the_log(memory_stack):
    stack = memory_stack()
    first = stack.manager()
    topic_log = settle(stack, first.open("t"))
    settle(stack, topic_log.append(message_set(1), 1))
    taken = settle(stack, stack.manager().open("t"))  # recovers (closes) first's ledger
    assert failure_of(stack, topic_log.append(message_set(1), 1)).check(LogFailed)
    assert first.get("t") is None
    assert settle(stack, taken.append(message_set(1), 1)).first_seq == 2


def test_a_roll_after_another_hub_took_the_topic_is_fenced(make_stack):
    stack = make_stack(LogSettings(max_ledger_entries=2))
    topic_log = settle(stack, stack.manager().open("t"))
    settle(stack, topic_log.append(message_set(1), 1))
    other = stack.manager()
    # The other hub changes the ranges (as an acquire would) without touching our ledger.
    stored = settle(stack, stack.metadata.get_topic("t"))
    settle(stack, stack.metadata.put_topic("t", stored.value, stored.version))
    d = topic_log.append(message_set(1), 1)  # fills the ledger: the roll's CAS loses
    assert settle(stack, d).first_seq == 2
    assert failure_of(stack, topic_log.append(message_set(1), 1)).check(TopicFenced)
    assert not topic_log.is_open
    del other


def test_a_failed_roll_fails_waiting_appends_and_the_next_append_retries(memory_stack):
    stack = memory_stack(LogSettings(max_ledger_entries=1))
    topic_log = settle(stack, stack.manager().open("t"))
    settle(stack, topic_log.append(message_set(1), 1))  # full: the roll ran
    real_create = stack.ledgers.create

    def create_fails():
        raise LedgerStoreFull("no room for a ledger")

    stack.ledgers.create = create_fails
    try:
        settle(stack, topic_log.append(message_set(1), 1))  # fills ledger 2, roll fails
        failure = failure_of(stack, topic_log.append(message_set(1), 1))
        assert failure.check(LedgerStoreFull)
    finally:
        stack.ledgers.create = real_create
    assert topic_log.is_open
    assert settle(stack, topic_log.append(message_set(1), 1)).first_seq == 3
    assert [(r.first_seq, r.last_seq) for r in topic_log.ranges[:3]] == [(1, 1), (2, 2), (3, 3)]


def test_close_waits_for_accepted_appends_then_refuses_more(memory_stack):
    stack = memory_stack()
    topic_log = settle(stack, stack.manager().open("t"))
    stack.ledgers.hold_acks()
    accepted = topic_log.append(message_set(1), 1)
    closed = topic_log.close()
    refused = topic_log.append(message_set(1), 1)
    assert not closed.called and not refused.called  # the refusal keeps its place in order
    stack.ledgers.release_acks()
    assert settle(stack, accepted).first_seq == 1
    assert failure_of(stack, refused).check(LogClosed)
    settle(stack, closed)
    assert stack.ledgers.is_closed(topic_log.open_ledger_id)


def test_a_roll_that_cannot_reach_the_metadata_store_fails_its_appends_as_service_down(memory_stack):
    """ZooKeeper gone (or the hub's session expired) while a ledger rolls: the appends
    waiting on the roll fail with MetadataUnavailable, which a publisher is answered
    SERVICE_DOWN for (it retries), not STORAGE_ERROR; the next append rolls again."""
    from hedwig.hub.errors import status_for
    from hedwig.meta.interface import MetadataUnavailable
    from hedwig.protocol.status import Status

    stack = memory_stack(LogSettings(max_ledger_entries=1))
    topic_log = settle(stack, stack.manager().open("t"))
    settle(stack, topic_log.append(message_set(1), 1))  # full: the roll ran
    real_put = stack.metadata.put_topic

    def put_fails(*args, **kwargs):
        raise MetadataUnavailable("ZooKeeper is not reachable now (SessionExpiredError)")

    stack.metadata.put_topic = put_fails
    try:
        settle(stack, topic_log.append(message_set(1), 1))  # fills ledger 2, its roll fails
        failure = failure_of(stack, topic_log.append(message_set(1), 1))
    finally:
        stack.metadata.put_topic = real_put
    assert failure.check(MetadataUnavailable)
    assert status_for(failure.value)[0] is Status.SERVICE_DOWN
    assert settle(stack, topic_log.append(message_set(1), 1)).first_seq == 3
