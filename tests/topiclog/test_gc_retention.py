"""Garbage collection and retention delete exactly the whole ledgers they should."""

import pytest

from hedwig.config.settings import LogSettings
from hedwig.topiclog import LogClosed, SeqNotRetained, TopicFenced
from tests.topiclog.harness import failure_of, message_set, settle


def build(make_stack, entries=12, per_ledger=3, size=64, **settings):
    """A topic whose closed ledgers hold seq-ids 1-3, 4-6, ... (one message an entry)."""
    stack = make_stack(LogSettings(max_ledger_entries=per_ledger, **settings))
    topic_log = settle(stack, stack.manager().open("t"))
    for _ in range(entries):
        settle(stack, topic_log.append(message_set(1, size), 1))
        stack.clock.advance(10)
    return stack, topic_log


def spans(topic_log):
    return [(r.first_seq, r.last_seq) for r in topic_log.ranges]


def test_deletes_ledgers_wholly_consumed_and_nothing_else(make_stack):
    stack, topic_log = build(make_stack)
    assert spans(topic_log) == [(1, 3), (4, 6), (7, 9), (10, 12), (13, None)]
    doomed = [r.ledger_id for r in topic_log.ranges[:2]]
    assert settle(stack, topic_log.collect_garbage(8)) == 2  # 7..9 is not wholly consumed
    assert spans(topic_log) == [(7, 9), (10, 12), (13, None)]
    assert topic_log.first_seq == 7
    assert not set(doomed) & set(stack.ledgers.list_ledgers())
    assert settle(stack, stack.metadata.get_topic("t")).value == topic_log.ranges
    assert [e.first_seq for e in settle(stack, topic_log.read(7, 100, 1 << 20))] == list(range(7, 13))
    assert failure_of(stack, topic_log.read(6, 1, 1000)).check(SeqNotRetained)


def test_consumed_exactly_to_a_ledger_end_deletes_it(make_stack):
    stack, topic_log = build(make_stack)
    assert settle(stack, topic_log.collect_garbage(6)) == 2
    assert topic_log.first_seq == 7


def test_nothing_consumed_deletes_nothing(make_stack):
    stack, topic_log = build(make_stack)
    version = settle(stack, stack.metadata.get_topic("t")).version
    assert settle(stack, topic_log.collect_garbage(0)) == 0
    assert settle(stack, topic_log.collect_garbage(2)) == 0
    assert settle(stack, stack.metadata.get_topic("t")).version == version  # nothing written


def test_never_deletes_the_open_ledger(make_stack):
    stack, topic_log = build(make_stack, entries=14)
    open_id = topic_log.open_ledger_id
    assert settle(stack, topic_log.collect_garbage(10**9)) == 4
    assert topic_log.ranges[0].ledger_id == open_id
    assert (topic_log.first_seq, topic_log.last_seq) == (13, 14)
    assert [e.first_seq for e in settle(stack, topic_log.read(13, 10, 1 << 20))] == [13, 14]
    assert settle(stack, topic_log.append(message_set(1), 1)).first_seq == 15


def test_retention_by_age_deletes_ledgers_entirely_older_than_retention(make_stack):
    # Entries are published every 10 s: ledger k (0-based) ends at about t0 + 30k + 20.
    stack, topic_log = build(make_stack, retention_secs=45)
    # now = t0 + 120; cutoff = t0 + 75: ledgers ending at t0+20, t0+50 go; t0+80 stays.
    assert settle(stack, topic_log.collect_garbage(0)) == 2
    assert spans(topic_log)[0] == (7, 9)
    stack.clock.advance(30)  # cutoff = t0 + 105: the ledger ending at t0+80 goes too
    assert settle(stack, topic_log.collect_garbage(0)) == 1
    assert spans(topic_log)[0] == (10, 12)


def test_retention_by_size_deletes_oldest_ledgers_until_within_it(make_stack):
    stack, topic_log = build(make_stack, entries=13)
    ledger_bytes = stack.ledgers.ledger_bytes(topic_log.ranges[0].ledger_id)
    entry_bytes = ledger_bytes // 3
    stack.settings.retention_bytes = 2 * ledger_bytes + entry_bytes  # two closed + the open one
    assert settle(stack, topic_log.collect_garbage(0)) == 2
    assert spans(topic_log) == [(7, 9), (10, 12), (13, None)]
    kept = sum(stack.ledgers.ledger_bytes(r.ledger_id) for r in topic_log.ranges)
    assert kept <= stack.settings.retention_bytes


def test_retention_by_size_never_takes_the_open_ledger(make_stack):
    stack, topic_log = build(make_stack, entries=13, retention_bytes=1)
    assert settle(stack, topic_log.collect_garbage(0)) == 4
    assert len(topic_log.ranges) == 1 and topic_log.last_seq == 13


def test_consumption_and_retention_combine(make_stack):
    stack, topic_log = build(make_stack, retention_secs=85)  # cutoff = t0 + 35: one ledger by age
    assert settle(stack, topic_log.collect_garbage(6)) == 2  # consumption takes two anyway
    assert settle(stack, topic_log.collect_garbage(0)) == 0


def test_disk_usage_drops(make_stack, backend):
    if backend != "mmap":
        pytest.skip("disk usage is a property of the file-backed store")
    stack, topic_log = build(make_stack, entries=40, per_ledger=10, size=20_000)
    before = stack.disk_bytes()
    assert settle(stack, topic_log.collect_garbage(30)) == 3
    after = stack.disk_bytes()
    # three of four full ledgers (~200 KB of entries each) left the disk
    assert before - after >= 3 * 10 * 20_000
    assert [e.first_seq for e in settle(stack, topic_log.read(31, 100, 1 << 30))] == list(range(31, 41))


def test_gc_survives_restart(make_stack):
    stack, topic_log = build(make_stack)
    settle(stack, topic_log.collect_garbage(6))
    reopened = settle(stack, stack.restart().open("t"))
    assert (reopened.first_seq, reopened.last_seq) == (7, 12)
    assert failure_of(stack, reopened.read(3, 1, 100)).check(SeqNotRetained)


def test_gc_of_a_closed_log_is_refused(make_stack):
    stack, topic_log = build(make_stack)
    settle(stack, topic_log.close())
    assert failure_of(stack, topic_log.collect_garbage(100)).check(LogClosed)


@pytest.mark.parametrize("bad", [-1, "3", None, 2.0])
def test_gc_refuses_nonsense(make_stack, bad):
    stack, topic_log = build(make_stack, entries=4)
    assert failure_of(stack, topic_log.collect_garbage(bad)).check(ValueError)


def test_gc_after_another_hub_took_the_topic_is_fenced_and_deletes_nothing(make_stack):
    stack, topic_log = build(make_stack)
    settle(stack, stack.manager().open("t"))  # another hub over the same stores acquires it
    ledgers = stack.ledgers.list_ledgers()
    failure = failure_of(stack, topic_log.collect_garbage(100))
    assert failure.check(TopicFenced)
    assert stack.ledgers.list_ledgers() == ledgers
    assert not topic_log.is_open
