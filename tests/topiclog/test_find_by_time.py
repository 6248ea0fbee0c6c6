"""find_by_time: the first seq-id published at or after a time, across ledgers."""

from hedwig.config.settings import LogSettings
from hedwig.testing.deferreds import fired
from tests.topiclog.harness import message_set, settle


def build(make_stack):
    """Entries of 2 messages published 1 s apart, 3 entries a ledger: times[i] -> seq 2i+1."""
    stack = make_stack(LogSettings(max_ledger_entries=3))
    topic_log = settle(stack, stack.manager().open("t"))
    times = []
    for _ in range(10):
        stack.clock.advance(1)
        times.append(settle(stack, topic_log.append(message_set(2), 2)).publish_time_us)
    return stack, topic_log, times


def test_exact_times_find_their_entry(make_stack):
    _stack, topic_log, times = build(make_stack)
    for i, t in enumerate(times):
        assert fired(topic_log.find_by_time(t)) == 2 * i + 1


def test_times_between_entries_find_the_next_one(make_stack):
    _stack, topic_log, times = build(make_stack)
    for i, t in enumerate(times):
        assert fired(topic_log.find_by_time(t + 1)) == (
            2 * i + 3 if i + 1 < len(times) else topic_log.last_seq + 1
        )
        assert fired(topic_log.find_by_time(t - 1)) == 2 * i + 1


def test_before_everything_and_after_everything(make_stack):
    _stack, topic_log, times = build(make_stack)
    assert fired(topic_log.find_by_time(0)) == 1
    assert fired(topic_log.find_by_time(times[-1] + 1)) == topic_log.last_seq + 1 == 21


def test_empty_topic(make_stack):
    stack = make_stack()
    topic_log = settle(stack, stack.manager().open("t"))
    assert fired(topic_log.find_by_time(0)) == 1


def test_after_gc_the_answer_is_within_what_is_retained(make_stack):
    stack, topic_log, times = build(make_stack)
    settle(stack, topic_log.collect_garbage(12))  # ledgers 1..6 and 7..12 go
    assert topic_log.first_seq == 13
    assert fired(topic_log.find_by_time(0)) == 13
    assert fired(topic_log.find_by_time(times[7])) == 15


def test_after_reopen(make_stack):
    stack, _topic_log, times = build(make_stack)
    reopened = settle(stack, stack.restart().open("t"))
    assert [fired(reopened.find_by_time(t)) for t in times] == list(range(1, 21, 2))
    stack.clock.advance(5)
    entry = settle(stack, reopened.append(message_set(1), 1))
    assert fired(reopened.find_by_time(times[-1] + 1)) == entry.first_seq == 21


def test_equal_times_find_the_first_of_them(make_stack):
    stack = make_stack(LogSettings(max_ledger_entries=2))
    topic_log = settle(stack, stack.manager().open("t"))
    stack.clock.advance(1)
    entries = [settle(stack, topic_log.append(message_set(1), 1)) for _ in range(5)]  # same instant
    assert len({e.publish_time_us for e in entries}) == 1
    assert fired(topic_log.find_by_time(entries[0].publish_time_us)) == 1


def test_a_clock_stepping_back_keeps_the_search_valid(make_stack):
    stack = make_stack(LogSettings(max_ledger_entries=2))
    topic_log = settle(stack, stack.manager().open("t"))
    stack.clock.advance(100)
    first = settle(stack, topic_log.append(message_set(1), 1))
    stack.clock.rightNow -= 50
    settle(stack, topic_log.append(message_set(1), 1))
    stack.clock.advance(60)
    third = settle(stack, topic_log.append(message_set(1), 1))
    assert fired(topic_log.find_by_time(first.publish_time_us + 1)) == third.first_seq
