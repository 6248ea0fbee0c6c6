"""TopicLogManager: one acquisition per topic, open logs reused, closing everything."""

import pytest
from twisted.internet.defer import Deferred

from hedwig.config.settings import LogSettings
from hedwig.protocol import InvalidName
from hedwig.testing.deferreds import fired
from hedwig.topiclog import LogClosed, TopicLog
from tests.topiclog.harness import failure_of, message_set, settle


@pytest.fixture
def stack(make_stack):
    return make_stack()


def test_open_returns_the_open_log_and_get_finds_it(stack):
    manager = stack.manager()
    assert manager.get("t") is None
    topic_log = settle(stack, manager.open("t"))
    assert isinstance(topic_log, TopicLog)
    assert settle(stack, manager.open("t")) is topic_log
    assert manager.get("t") is topic_log
    assert manager.logs() == [topic_log]


def test_concurrent_opens_share_one_acquisition(stack):
    manager = stack.manager()
    gate = Deferred()
    real_get = stack.metadata.get_topic
    calls = []

    def slow_get(topic):
        calls.append(topic)
        return gate.addCallback(lambda _: real_get(topic))

    stack.metadata.get_topic = slow_get
    try:
        first, second = manager.open("t"), manager.open("t")
        assert first is not second  # each caller has its own Deferred...
        assert not first.called and not second.called
        gate.callback(None)
    finally:
        del stack.metadata.get_topic
    # ...and both get the one log from the one acquisition.
    assert settle(stack, first) is settle(stack, second)
    assert calls == ["t"]
    assert settle(stack, stack.metadata.get_topic("t")).version == 0  # (written once)


def test_a_callers_callbacks_do_not_change_what_another_sees(stack):
    manager = stack.manager()
    gate = Deferred()
    real_get = stack.metadata.get_topic
    stack.metadata.get_topic = lambda topic: gate.addCallback(lambda _: real_get(topic))
    try:
        first, second = manager.open("t"), manager.open("t")
        first.addCallback(lambda _: "replaced")
        gate.callback(None)
    finally:
        del stack.metadata.get_topic
    assert settle(stack, first) == "replaced"
    assert isinstance(settle(stack, second), TopicLog)


@pytest.mark.parametrize("name", ["", "a b", "x" * 256, "é"])
def test_invalid_topic_names_are_refused(stack, name):
    assert failure_of(stack, stack.manager().open(name)).check(InvalidName)
    assert settle(stack, stack.metadata.list_topics()) == []


def test_list_topics_lists_every_topic_with_metadata(stack):
    manager = stack.manager()
    for name in ["b", "a", "c"]:
        settle(stack, manager.open(name))
    assert settle(stack, stack.restart().list_topics()) == ["a", "b", "c"]


def test_a_closed_log_leaves_and_the_next_open_acquires_again(stack):
    manager = stack.manager()
    topic_log = settle(stack, manager.open("t"))
    settle(stack, topic_log.append(message_set(1), 1))
    settle(stack, topic_log.close())
    assert manager.get("t") is None
    again = settle(stack, manager.open("t"))
    assert again is not topic_log
    assert again.open_ledger_id != topic_log.open_ledger_id
    assert again.last_seq == 1


def test_close_closes_every_log_and_refuses_later_opens(stack):
    manager = stack.manager()
    logs = [settle(stack, manager.open(name)) for name in ["a", "b"]]
    for topic_log in logs:  # (each its ledger: the first append makes it)
        settle(stack, topic_log.append(message_set(1), 1))
    settle(stack, manager.close())
    assert all(not topic_log.is_open for topic_log in logs)
    assert all(stack.ledgers.is_closed(topic_log.open_ledger_id) for topic_log in logs)
    assert failure_of(stack, manager.open("a")).check(LogClosed)
    assert manager.logs() == []


def test_close_during_an_open_closes_that_log_too(stack):
    manager = stack.manager()
    gate = Deferred()
    real_get = stack.metadata.get_topic
    stack.metadata.get_topic = lambda topic: gate.addCallback(lambda _: real_get(topic))
    try:
        opening = manager.open("t")
        closing = manager.close()
        assert not closing.called
        gate.callback(None)
    finally:
        del stack.metadata.get_topic
    assert failure_of(stack, opening).check(LogClosed)
    settle(stack, closing)
    assert stack.ledgers.list_ledgers() == []  # (an acquire creates no ledger)


def test_reopening_while_the_previous_log_is_closing_waits_for_it(stack, backend):
    if backend != "memory":
        pytest.skip("holds acknowledgements: an in-memory store feature")
    manager = stack.manager()
    topic_log = settle(stack, manager.open("t"))
    stack.ledgers.hold_acks()
    pending = topic_log.append(message_set(1), 1)
    topic_log.close()
    reopening = manager.open("t")
    assert not reopening.called  # the old log still has an append in flight
    stack.ledgers.release_acks()
    assert settle(stack, pending).first_seq == 1
    again = settle(stack, reopening)
    assert again is not topic_log and again.last_seq == 1


def test_the_sweep_deletes_an_empty_ledger_no_topic_names(make_stack):
    """A crash between creating a ledger and writing the ranges (or the garbage record)
    naming it leaves an empty one behind: it holds nothing, no record names it and no
    topic is open to be writing it, so the sweep deletes it (issue 42). An empty ledger
    a topic names (its open ledger) stays."""
    stack = make_stack(LogSettings(max_ledger_entries=1))
    manager = stack.manager()
    kept = [settle(stack, manager.open(name)) for name in ("a", "b")]
    settle(stack, kept[0].append(message_set(1), 1))  # (a full ledger: rolled to an empty one)
    empty_open = kept[0].open_ledger_id
    assert stack.ledgers.last_entry_id(empty_open) == -1
    orphan = fired(stack.ledgers.create())
    fresh = stack.restart()
    sweep = settle(stack, fresh.sweep_ledgers())
    assert sweep.empty == [orphan] and sweep.deleted == [] and sweep.unknown == []
    assert orphan not in stack.ledgers.list_ledgers()
    assert empty_open in stack.ledgers.list_ledgers()
    assert settle(stack, fresh.open("a")).last_seq == 1
    assert settle(stack, fresh.open("b")).last_seq == 0  # (b: no ledger, none made)


def test_a_ledger_whose_topic_record_was_lost_is_described_by_its_seq_ids(stack):
    topic_log = settle(stack, stack.manager().open("lost"))
    for _ in range(3):
        settle(stack, topic_log.append(message_set(2), 2))
    ledger_id = topic_log.open_ledger_id
    fresh = stack.restart()
    record = settle(stack, stack.metadata.get_topic("lost"))
    settle(stack, stack.metadata.delete_topic("lost", record.version))
    sweep = settle(stack, fresh.sweep_ledgers())
    assert sweep.unknown == [ledger_id] and sweep.deleted == []
    assert sweep.described[ledger_id] == "seq-ids 1..6 in 3 entries"
    assert ledger_id in stack.ledgers.list_ledgers()


def test_the_sweep_deletes_only_what_the_metadata_records_as_garbage(make_stack):
    from hedwig.config.settings import LogSettings

    stack = make_stack(LogSettings(max_ledger_entries=1))
    topic_log = settle(stack, stack.manager().open("t"))
    for _ in range(3):
        settle(stack, topic_log.append(message_set(1), 1))
    doomed = [r.ledger_id for r in topic_log.ranges[:2]]
    # GC commits the shorter ranges and the garbage record together; the deletions fail
    # (or the process dies before them): the files stay, recorded as garbage.
    real_delete = stack.ledgers.delete
    stack.ledgers.delete = lambda ledger_id: (_ for _ in ()).throw(OSError("disk went away"))
    assert settle(stack, topic_log.collect_garbage(2)) == 2
    stack.ledgers.delete = real_delete
    assert set(doomed) <= set(stack.ledgers.list_ledgers())
    assert sorted(settle(stack, stack.metadata.list_garbage())) == doomed
    fresh = stack.restart()
    sweep = settle(stack, fresh.sweep_ledgers())
    assert sweep.deleted == doomed and sweep.unknown == []
    assert not set(doomed) & set(stack.ledgers.list_ledgers())
    assert settle(stack, stack.metadata.list_garbage()) == {}
    assert settle(stack, fresh.open("t")).first_seq == 3


def test_garbage_collection_forgets_what_it_deleted(make_stack):
    from hedwig.config.settings import LogSettings

    stack = make_stack(LogSettings(max_ledger_entries=1))
    topic_log = settle(stack, stack.manager().open("t"))
    for _ in range(3):
        settle(stack, topic_log.append(message_set(1), 1))
    assert settle(stack, topic_log.collect_garbage(2)) == 2
    assert settle(stack, stack.metadata.list_garbage()) == {}


def test_the_sweep_refuses_once_topics_are_open(stack):
    from hedwig.topiclog import LogError

    manager = stack.manager()
    settle(stack, manager.open("a"))
    assert failure_of(stack, manager.sweep_ledgers()).check(LogError)
