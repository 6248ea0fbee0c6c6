"""Rolling to new ledgers at the limits and at the first append after every acquire (an
acquire, and a read, creates none); ranges written with CAS."""

import pytest

from hedwig.config.settings import LogSettings
from hedwig.meta import NEW, LedgerRange
from hedwig.meta.interface import NO_LEDGER
from hedwig.topiclog import LogCorrupt, TopicFenced
from tests.topiclog.harness import failure_of, message_set, settle


def ranges_in_metadata(stack, topic="t"):
    return settle(stack, stack.metadata.get_topic(topic))


def entries_per_ledger(stack, topic_log):
    return [stack.ledgers.last_entry_id(r.ledger_id) + 1 for r in topic_log.ranges]


def test_rolls_every_max_ledger_entries(make_stack):
    stack = make_stack(LogSettings(max_ledger_entries=3))
    topic_log = settle(stack, stack.manager().open("t"))
    for _ in range(10):
        settle(stack, topic_log.append(message_set(2), 2))
    assert entries_per_ledger(stack, topic_log) == [3, 3, 3, 1]
    assert topic_log.ranges[:-1] == [
        LedgerRange(topic_log.ranges[0].ledger_id, 1, 6),
        LedgerRange(topic_log.ranges[1].ledger_id, 7, 12),
        LedgerRange(topic_log.ranges[2].ledger_id, 13, 18),
    ]
    assert topic_log.ranges[-1].first_seq == 19 and topic_log.ranges[-1].last_seq is None
    assert all(stack.ledgers.is_closed(r.ledger_id) for r in topic_log.ranges[:-1])
    assert not stack.ledgers.is_closed(topic_log.open_ledger_id)
    assert ranges_in_metadata(stack).value == topic_log.ranges


def test_rolls_before_an_entry_would_pass_max_ledger_bytes(make_stack):
    stack = make_stack(LogSettings(max_ledger_bytes=1000))
    topic_log = settle(stack, stack.manager().open("t"))
    size = settle(stack, topic_log.append(message_set(1, 200), 1)).size
    per_ledger = 1000 // size
    for _ in range(2 * per_ledger):
        settle(stack, topic_log.append(message_set(1, 200), 1))
    sizes = [stack.ledgers.ledger_bytes(r.ledger_id) for r in topic_log.ranges]
    assert sizes[:2] == [per_ledger * size] * 2
    assert all(s <= 1000 for s in sizes)
    assert entries_per_ledger(stack, topic_log) == [per_ledger, per_ledger, 1]


def test_an_entry_larger_than_max_ledger_bytes_gets_a_ledger_of_its_own(make_stack):
    stack = make_stack(LogSettings(max_ledger_bytes=500))
    topic_log = settle(stack, stack.manager().open("t"))
    settle(stack, topic_log.append(message_set(1, 100), 1))
    settle(stack, topic_log.append(message_set(1, 2000), 1))
    settle(stack, topic_log.append(message_set(1, 100), 1))
    assert entries_per_ledger(stack, topic_log) == [1, 1, 1]
    assert [e.first_seq for e in settle(stack, topic_log.read(1, 10, 1 << 20))] == [1, 2, 3]


def test_no_limits_means_no_rolls(make_stack):
    stack = make_stack(LogSettings(max_ledger_bytes=0, max_ledger_entries=0))
    topic_log = settle(stack, stack.manager().open("t"))
    for _ in range(50):
        settle(stack, topic_log.append(message_set(1), 1))
    assert len(topic_log.ranges) == 1 and topic_log.rolls == 0


def test_first_open_records_the_topic_and_its_first_append_creates_its_ledger(make_stack):
    stack = make_stack()
    topic_log = settle(stack, stack.manager().open("t"))
    stored = ranges_in_metadata(stack)
    assert stored.version == 0
    assert stored.value == [LedgerRange(NO_LEDGER, 1, None)]
    assert stack.ledgers.list_ledgers() == []
    assert settle(stack, topic_log.append(message_set(1), 1)).first_seq == 1
    assert stack.ledgers.list_ledgers() == [topic_log.open_ledger_id]
    assert ranges_in_metadata(stack).value == [LedgerRange(topic_log.open_ledger_id, 1, None)]
    assert topic_log.rolls == 0  # (the first ledger is no roll)


def test_reopen_recovers_and_seals_the_previous_ledger_and_the_next_append_opens_a_new_one(make_stack):
    stack = make_stack()
    topic_log = settle(stack, stack.manager().open("t"))
    for _ in range(4):
        settle(stack, topic_log.append(message_set(3), 3))
    old = topic_log.open_ledger_id
    version = ranges_in_metadata(stack).version

    reopened = settle(stack, stack.restart().open("t"))
    assert stack.ledgers.is_closed(old)
    assert reopened.open_ledger_id == NO_LEDGER
    stored = ranges_in_metadata(stack)
    assert stored.version == version + 1
    assert stored.value == [LedgerRange(old, 1, 12), LedgerRange(NO_LEDGER, 13, None)]
    assert (reopened.first_seq, reopened.last_seq) == (1, 12)
    assert settle(stack, reopened.append(message_set(1), 1)).first_seq == 13
    assert reopened.open_ledger_id not in (old, NO_LEDGER)
    assert not stack.ledgers.is_closed(reopened.open_ledger_id)
    assert ranges_in_metadata(stack).value == [
        LedgerRange(old, 1, 12),
        LedgerRange(reopened.open_ledger_id, 13, None),
    ]
    assert [e.first_seq for e in settle(stack, reopened.read(1, 100, 1 << 20))] == [1, 4, 7, 10, 13]


def test_reading_a_topic_acquired_again_and_again_creates_no_ledger(make_stack):
    """Issue 37: acquiring a topic to read it (a READ, a SUBSCRIBE, a DESCRIBE) created a
    ledger and recorded it in the topic's ranges, on every store. Only an append does."""
    stack = make_stack(LogSettings(max_ledger_age_s=1))
    topic_log = settle(stack, stack.manager().open("t"))
    for _ in range(3):
        settle(stack, topic_log.append(message_set(2), 2))
    settle(stack, topic_log.close())
    ledgers = stack.ledgers.list_ledgers()
    named = [r.ledger_id for r in ranges_in_metadata(stack).value]
    for _round in range(3):
        reader = settle(stack, stack.restart().open("t"))
        assert [e.first_seq for e in settle(stack, reader.read(1, 100, 1 << 20))] == [1, 3, 5]
        assert settle(stack, reader.find_by_time(0)) == 1
        assert [d["ledger_id"] for d in reader.describe()["ledgers"]] == named
        stack.clock.advance(5)  # (a quiet topic's age roll: nothing to roll)
        assert settle(stack, reader.roll_if_aged()) is False
        assert settle(stack, reader.collect_garbage(0)) == 0
        settle(stack, reader.close())
        assert stack.ledgers.list_ledgers() == ledgers
        assert ranges_in_metadata(stack).value == [
            LedgerRange(named[0], 1, 6),
            LedgerRange(NO_LEDGER, 7, None),
        ]
    writer = settle(stack, stack.restart().open("t"))
    assert settle(stack, writer.append(message_set(1), 1)).first_seq == 7
    assert len(stack.ledgers.list_ledgers()) == len(ledgers) + 1


def test_reopen_without_a_clean_close_recovers_the_ledger_end_from_its_entries(make_stack):
    """The previous owner vanished: its ranges still say the ledger is open (last_seq None)."""
    stack = make_stack()
    topic_log = settle(stack, stack.manager().open("t"))
    for _ in range(3):
        settle(stack, topic_log.append(message_set(2), 2))
    assert ranges_in_metadata(stack).value[-1].last_seq is None
    # A second manager over the same stores takes over without the first closing anything.
    taken = settle(stack, stack.manager().open("t"))
    assert (taken.first_seq, taken.last_seq) == (1, 6)
    assert ranges_in_metadata(stack).value[0] == LedgerRange(topic_log.open_ledger_id, 1, 6)


def test_an_empty_previous_ledger_is_dropped_and_seq_ids_continue(make_stack):
    stack = make_stack(LogSettings(max_ledger_entries=2))
    topic_log = settle(stack, stack.manager().open("t"))
    for _ in range(4):
        settle(stack, topic_log.append(message_set(1), 1))
    settle(stack, topic_log.collect_garbage(4))  # every closed ledger goes; the open one is empty
    assert (topic_log.first_seq, topic_log.last_seq) == (5, 4)
    empty = topic_log.open_ledger_id

    reopened = settle(stack, stack.restart().open("t"))
    assert empty not in stack.ledgers.list_ledgers()
    assert ranges_in_metadata(stack).value == [LedgerRange(reopened.open_ledger_id, 5, None)]
    assert (reopened.first_seq, reopened.last_seq) == (5, 4)
    assert settle(stack, reopened.append(message_set(1), 1)).first_seq == 5


def test_many_reopens_keep_seq_ids_dense(make_stack):
    stack = make_stack()
    manager = stack.manager()
    expected = 1
    for round_ in range(5):
        topic_log = settle(stack, manager.open("t"))
        for _ in range(round_):  # round 0 leaves an empty ledger behind
            assert settle(stack, topic_log.append(message_set(2), 2)).first_seq == expected
            expected += 2
        manager = stack.restart()
    final = settle(stack, manager.open("t"))
    got = settle(stack, final.read(1, 1000, 1 << 20))
    assert [e.first_seq for e in got] == list(range(1, expected, 2))


def test_losing_the_compare_and_set_on_acquire_fails_the_open_and_leaves_no_ledger(make_stack):
    stack = make_stack()
    manager = stack.manager()
    topic_log = settle(stack, manager.open("t"))
    before = set(stack.ledgers.list_ledgers())
    # Another hub writes the ranges between this hub's read and its write.
    metadata = stack.metadata
    real_get = metadata.get_topic

    def get_then_race(topic):
        d = real_get(topic)

        def race(versioned):
            settle(stack, metadata.put_topic(topic, versioned.value, versioned.version))
            return versioned

        return d.addCallback(race)

    metadata.get_topic = get_then_race
    try:
        settle(stack, topic_log.close())
        failure = failure_of(stack, manager.open("t"))
    finally:
        del metadata.get_topic
    assert failure.check(TopicFenced)
    assert set(stack.ledgers.list_ledgers()) == before


def test_ranges_naming_a_missing_open_ledger_fail_the_open_clearly(make_stack):
    stack = make_stack()
    settle(stack, stack.metadata.put_topic("t", [LedgerRange(999, 1, 5), LedgerRange(1000, 6, None)], NEW))
    failure = failure_of(stack, stack.manager().open("t"))
    assert failure.check(LogCorrupt)
    assert "open ledger 1000 is missing" in str(failure.value)
    assert ranges_in_metadata(stack).version == 0  # nothing was written


def test_ranges_that_do_not_match_the_ledger_fail_the_open_clearly(make_stack):
    stack = make_stack()
    topic_log = settle(stack, stack.manager().open("t"))
    settle(stack, topic_log.append(message_set(1), 1))
    settle(stack, topic_log.close())
    # Someone rewrote the ranges: the open ledger's entries start at seq-id 1, not 50.
    stored = ranges_in_metadata(stack)
    settle(
        stack,
        stack.metadata.put_topic("t", [LedgerRange(topic_log.open_ledger_id, 50, None)], stored.version),
    )
    failure = failure_of(stack, stack.restart().open("t"))
    assert failure.check(LogCorrupt)
    assert "begins at seq-id 1" in str(failure.value)


def test_appends_during_a_roll_wait_and_land_in_the_new_ledger_in_order(make_stack, backend):
    if backend != "memory":
        pytest.skip("holds acknowledgements: an in-memory store feature")
    stack = make_stack(LogSettings(max_ledger_entries=2))
    topic_log = settle(stack, stack.manager().open("t"))
    stack.ledgers.hold_acks()
    fired = []
    ds = [topic_log.append(message_set(1), 1) for _ in range(5)]
    for i, d in enumerate(ds):
        d.addCallback(lambda entry, i=i: fired.append((i, entry.first_seq, topic_log.last_seq)))
    # Two appends reached the first ledger; the roll waits for them, the rest wait for the roll.
    assert stack.ledgers.held == 2 and fired == []
    assert topic_log.describe()["pending_appends"] == 5
    while stack.ledgers.held:
        stack.ledgers.release_acks(keep_holding=True)
    stack.ledgers.release_acks()
    assert fired == [(i, i + 1, i + 1) for i in range(5)]  # call order; last_seq moved first
    assert entries_per_ledger(stack, topic_log) == [2, 2, 1]


def test_a_roll_does_not_wait_for_the_old_ledgers_final_sync(make_stack, backend):
    if backend != "memory":
        pytest.skip("holds ledger closes: an in-memory store feature")
    stack = make_stack(LogSettings(max_ledger_entries=2))
    topic_log = settle(stack, stack.manager().open("t"))
    stack.ledgers.hold_closes()
    entries = [settle(stack, topic_log.append(message_set(1), 1)) for _ in range(5)]
    assert [e.first_seq for e in entries] == [1, 2, 3, 4, 5]  # acknowledged across two rolls
    old = [r.ledger_id for r in topic_log.ranges[:-1]]
    assert len(old) == 2 and all(stack.ledgers.is_closed(ledger_id) for ledger_id in old)
    closing = topic_log.close()
    assert not closing.called  # close() does wait for those syncs
    assert stack.ledgers.release_closes() == 3  # two rolled ledgers and the open one
    settle(stack, closing)
