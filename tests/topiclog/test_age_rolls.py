"""Rolls by age: a ledger whose first entry is older than max_ledger_age_s rolls at the
next append or, on a quiet topic, from roll_if_aged (the GC pass); never an empty one.
Then garbage collection and retention reach the data it held."""

import pytest

from hedwig.config.settings import LogSettings
from hedwig.ledger import LedgerStoreFull
from hedwig.testing.deferreds import fired
from hedwig.topiclog import LogClosed, SeqNotRetained, TopicFenced
from tests.topiclog.harness import failure_of, message_set, settle

AGE = 600.0


def open_log(make_stack, **settings):
    settings.setdefault("max_ledger_age_s", AGE)
    stack = make_stack(LogSettings(**settings))
    return stack, settle(stack, stack.manager().open("t"))


def advance_to(stack, seconds: float) -> None:
    stack.clock.advance(seconds - stack.clock.seconds())


def spans(topic_log):
    return [(r.first_seq, r.last_seq) for r in topic_log.ranges]


def publish(stack, topic_log, count=1, size=16):
    return [settle(stack, topic_log.append(message_set(1, size), 1)) for _ in range(count)]


def test_a_quiet_topic_rolls_from_roll_if_aged_once_its_first_entry_is_older_than_the_age(make_stack):
    stack, topic_log = open_log(make_stack)
    first, *_ = publish(stack, topic_log, 3)
    first_s = first.publish_time_us / 1e6
    stack.clock.advance(AGE / 2)
    assert settle(stack, topic_log.roll_if_aged()) is False
    advance_to(stack, first_s + AGE)  # exactly the age: not older than it yet
    assert settle(stack, topic_log.roll_if_aged()) is False
    assert spans(topic_log) == [(1, None)] and topic_log.rolls == 0
    stack.clock.advance(0.001)
    assert settle(stack, topic_log.roll_if_aged()) is True
    assert spans(topic_log) == [(1, 3), (4, None)] and topic_log.rolls == 1
    closed = topic_log.ranges[0].ledger_id
    assert stack.ledgers.is_closed(closed) and stack.ledgers.last_entry_id(closed) == 2
    assert settle(stack, stack.metadata.get_topic("t")).value == topic_log.ranges
    assert [e.first_seq for e in settle(stack, topic_log.read(1, 10, 1 << 20))] == [1, 2, 3]
    after = settle(stack, topic_log.append(message_set(1), 1))
    assert after.first_seq == 4 and stack.ledgers.last_entry_id(topic_log.open_ledger_id) == 0


def test_a_busy_topic_rolls_at_the_first_append_past_the_age(make_stack):
    stack, topic_log = open_log(make_stack, max_ledger_age_s=60)
    start = stack.clock.seconds()
    for i in range(15):  # one append every 10 s: t0, t0+10, ..., t0+140
        advance_to(stack, start + 10 * i)
        publish(stack, topic_log)
    # t0+60 is exactly 60 s after the first entry: still in; t0+70 rolls, and so on.
    assert spans(topic_log) == [(1, 7), (8, 14), (15, None)] and topic_log.rolls == 2
    for r in topic_log.ranges[:-1]:
        entries = stack.ledgers.last_entry_id(r.ledger_id)
        span_us = fired(stack.ledgers.entry_time(r.ledger_id, entries)) - fired(
            stack.ledgers.entry_time(r.ledger_id, 0)
        )
        assert span_us == 60_000_000
    assert [e.first_seq for e in settle(stack, topic_log.read(1, 100, 1 << 20))] == list(range(1, 16))


def test_appends_waiting_on_an_age_roll_keep_their_order(make_stack, backend):
    if backend != "memory":
        pytest.skip("holds acknowledgements: an in-memory store feature")
    stack, topic_log = open_log(make_stack)
    publish(stack, topic_log)
    stack.clock.advance(AGE - 1)
    stack.ledgers.hold_acks()
    fired = []

    def append(i):
        topic_log.append(message_set(1, tag=i), 1).addCallback(lambda e: fired.append((i, e.first_seq)))

    append(0)  # within the age: stored in the first ledger, its acknowledgement held
    stack.clock.advance(2)
    for i in (1, 2, 3):  # past the age: the first starts a roll, which waits for append 0
        append(i)
    assert stack.ledgers.held == 1 and topic_log.describe()["pending_appends"] == 4
    assert spans(topic_log) == [(1, None)]
    stack.ledgers.release_acks()
    assert fired == [(0, 2), (1, 3), (2, 4), (3, 5)]
    assert spans(topic_log) == [(1, 2), (3, None)]


def test_roll_if_aged_waits_for_appends_in_flight_and_later_ones_land_in_the_new_ledger(make_stack, backend):
    if backend != "memory":
        pytest.skip("holds acknowledgements: an in-memory store feature")
    stack, topic_log = open_log(make_stack)
    publish(stack, topic_log)
    stack.clock.advance(AGE - 1)
    stack.ledgers.hold_acks()
    in_flight = [topic_log.append(message_set(1), 1) for _ in range(2)]  # still within the age
    stack.clock.advance(2)
    rolled = topic_log.roll_if_aged()
    later = topic_log.append(message_set(1), 1)  # arrives during the roll: waits for it
    assert not rolled.called and stack.ledgers.held == 2
    stack.ledgers.release_acks()
    assert settle(stack, rolled) is True
    assert [settle(stack, d).first_seq for d in [*in_flight, later]] == [2, 3, 4]
    assert spans(topic_log) == [(1, 3), (4, None)]


def test_roll_if_aged_during_a_roll_an_append_started_waits_for_it_and_rolls_no_more(make_stack, backend):
    if backend != "memory":
        pytest.skip("holds acknowledgements: an in-memory store feature")
    stack, topic_log = open_log(make_stack)
    publish(stack, topic_log)
    stack.ledgers.hold_acks()
    held = topic_log.append(message_set(1), 1)
    stack.clock.advance(AGE + 1)
    later = topic_log.append(message_set(1), 1)  # past the age: starts a roll, which waits for `held`
    rolled = topic_log.roll_if_aged()
    assert not rolled.called
    stack.ledgers.release_acks()
    assert settle(stack, rolled) is False
    assert [settle(stack, d).first_seq for d in (held, later)] == [2, 3]
    assert spans(topic_log) == [(1, 2), (3, None)] and topic_log.rolls == 1


def test_an_empty_ledger_never_rolls(make_stack):
    stack, topic_log = open_log(make_stack)
    ledgers = stack.ledgers.list_ledgers()
    version = settle(stack, stack.metadata.get_topic("t")).version
    for _ in range(3):
        stack.clock.advance(10 * AGE)
        assert settle(stack, topic_log.roll_if_aged()) is False
    assert topic_log.rolls == 0 and stack.ledgers.list_ledgers() == ledgers
    assert settle(stack, stack.metadata.get_topic("t")).version == version
    # Nor the empty ledger an age roll opened.
    publish(stack, topic_log)
    stack.clock.advance(AGE + 1)
    assert settle(stack, topic_log.roll_if_aged()) is True
    ledgers = stack.ledgers.list_ledgers()
    for _ in range(3):
        stack.clock.advance(10 * AGE)
        assert settle(stack, topic_log.roll_if_aged()) is False
    assert topic_log.rolls == 1 and stack.ledgers.list_ledgers() == ledgers
    # Its first entry, when it comes, starts its age.
    assert settle(stack, topic_log.append(message_set(1), 1)).first_seq == 2
    assert settle(stack, topic_log.roll_if_aged()) is False
    assert spans(topic_log) == [(1, 1), (2, None)]


def test_an_append_the_store_refused_does_not_start_the_age(make_stack, backend):
    if backend != "memory":
        pytest.skip("scripted store failures are an in-memory store feature")
    stack, topic_log = open_log(make_stack)
    stack.ledgers.fail_appends(LedgerStoreFull("no space"))
    assert failure_of(stack, topic_log.append(message_set(1), 1)).check(LedgerStoreFull)
    stack.clock.advance(AGE + 1)
    assert settle(stack, topic_log.roll_if_aged()) is False
    publish(stack, topic_log)  # the first entry stored: its age starts now
    stack.clock.advance(AGE)
    assert settle(stack, topic_log.append(message_set(1), 1)).first_seq == 2
    assert spans(topic_log) == [(1, None)]


@pytest.mark.parametrize("off", [0, -1.0, float("inf"), float("nan")])
def test_an_age_of_zero_or_beyond_reason_never_rolls_by_age(make_stack, off):
    stack, topic_log = open_log(make_stack, max_ledger_age_s=off)
    publish(stack, topic_log)
    stack.clock.advance(365 * 86400)
    assert settle(stack, topic_log.roll_if_aged()) is False
    publish(stack, topic_log)
    assert spans(topic_log) == [(1, None)] and topic_log.rolls == 0


def test_gc_collects_the_ledger_an_age_roll_closed_once_consumed_and_disk_usage_drops(make_stack, backend):
    stack, topic_log = open_log(make_stack)
    publish(stack, topic_log, 60, size=20_000)
    # Before the roll: everything consumed, yet nothing can go (the open ledger never does).
    assert settle(stack, topic_log.collect_garbage(60)) == 0
    stack.clock.advance(AGE + 1)
    assert settle(stack, topic_log.roll_if_aged()) is True
    rolled = topic_log.ranges[0].ledger_id
    assert settle(stack, topic_log.collect_garbage(59)) == 0  # seq-id 60 is not consumed yet
    before = stack.disk_bytes() if backend == "mmap" else None
    assert settle(stack, topic_log.collect_garbage(60)) == 1
    assert rolled not in stack.ledgers.list_ledgers()
    assert spans(topic_log) == [(61, None)] and topic_log.first_seq == 61 and topic_log.last_seq == 60
    assert failure_of(stack, topic_log.read(60, 1, 1 << 20)).check(SeqNotRetained)
    if backend == "mmap":
        assert before - stack.disk_bytes() >= 60 * 20_000  # the rolled ledger's entries left the disk
    assert settle(stack, topic_log.append(message_set(1), 1)).first_seq == 61
    assert [e.first_seq for e in settle(stack, topic_log.read(61, 10, 1 << 20))] == [61]


def test_retention_deletes_an_old_quiet_topics_data(make_stack):
    stack, topic_log = open_log(make_stack, retention_secs=3600)
    start = stack.clock.seconds()
    for i in range(5):
        advance_to(stack, start + 10 * i)
        last = publish(stack, topic_log)[-1]
    advance_to(stack, start + AGE + 1)
    assert settle(stack, topic_log.roll_if_aged()) is True
    assert settle(stack, topic_log.collect_garbage(0)) == 0  # younger than retention_secs
    advance_to(stack, last.publish_time_us / 1e6 + 3600)  # the newest message is exactly 1 h old
    assert settle(stack, topic_log.collect_garbage(0)) == 0
    stack.clock.advance(0.001)
    assert settle(stack, topic_log.collect_garbage(0)) == 1
    assert spans(topic_log) == [(6, None)] and topic_log.first_seq == 6
    assert failure_of(stack, topic_log.read(1, 1, 1 << 20)).check(SeqNotRetained)
    assert settle(stack, stack.metadata.get_topic("t")).value == topic_log.ranges
    assert settle(stack, topic_log.append(message_set(1), 1)).first_seq == 6


def test_nothing_still_needed_is_deleted(make_stack):
    stack, topic_log = open_log(make_stack, retention_secs=1800)
    start = stack.clock.seconds()
    for offset in (0, 300, 700, 1000):  # the append at t0+700 rolls: ledgers 1..2 and 3..4
        advance_to(stack, start + offset)
        publish(stack, topic_log)
    advance_to(stack, start + 1301)
    assert settle(stack, topic_log.roll_if_aged()) is True
    assert spans(topic_log) == [(1, 2), (3, 4), (5, None)]
    # Consumed up to 3: the ledger holding 3..4 stays whole, 4 is still to be read.
    assert settle(stack, topic_log.collect_garbage(3)) == 1
    assert [e.first_seq for e in settle(stack, topic_log.read(3, 10, 1 << 20))] == [3, 4]
    # Retention: at t0+2500 the first ledger (newest t0+300) would be past 1800 s, but
    # the second ledger's newest message (t0+1000) is not: it stays.
    advance_to(stack, start + 2500)
    assert settle(stack, topic_log.collect_garbage(3)) == 0
    assert spans(topic_log) == [(3, 4), (5, None)]
    advance_to(stack, start + 2801)
    assert settle(stack, topic_log.collect_garbage(3)) == 1
    assert spans(topic_log) == [(5, None)]


def test_age_rolls_survive_a_restart_and_the_new_owner_starts_a_fresh_age(make_stack):
    stack, topic_log = open_log(make_stack)
    publish(stack, topic_log, 2)
    stack.clock.advance(AGE + 1)
    settle(stack, topic_log.roll_if_aged())
    publish(stack, topic_log)
    reopened = settle(stack, stack.restart().open("t"))
    assert spans(reopened) == [(1, 2), (3, 3), (4, None)]
    stack.clock.advance(AGE + 1)
    assert settle(stack, reopened.roll_if_aged()) is False  # the acquired ledger is empty
    assert settle(stack, reopened.append(message_set(1), 1)).first_seq == 4


def test_roll_if_aged_after_another_hub_took_the_topic_is_fenced_and_changes_nothing(make_stack):
    stack, topic_log = open_log(make_stack)
    publish(stack, topic_log, 2)
    settle(stack, stack.manager().open("t"))  # another hub over the same stores acquires it
    stored = settle(stack, stack.metadata.get_topic("t"))
    ledgers = stack.ledgers.list_ledgers()
    stack.clock.advance(AGE + 1)
    assert failure_of(stack, topic_log.roll_if_aged()).check(TopicFenced)
    assert settle(stack, stack.metadata.get_topic("t")) == stored
    assert stack.ledgers.list_ledgers() == ledgers  # the roll's new ledger was removed again
    assert not topic_log.is_open


def test_roll_if_aged_of_a_closed_log_is_refused(make_stack):
    stack, topic_log = open_log(make_stack)
    publish(stack, topic_log)
    settle(stack, topic_log.close())
    stack.clock.advance(AGE + 1)
    assert failure_of(stack, topic_log.roll_if_aged()).check(LogClosed)
