"""The compactor over a real ledger store and SQLite metadata on a deterministic clock:
publishing and rolls go on while it works; a takeover while it works leaves the old
ledgers named and the new one recorded as garbage; a topic reopened reads what it read."""

from itertools import pairwise

import pytest

from hedwig.config.settings import LogSettings
from hedwig.meta.interface import ledger_ids
from hedwig.protocol.entry import decode_entry
from hedwig.protocol.messageset import encode_message_set
from hedwig.topiclog import TopicFenced
from tests.topiclog.harness import failure_of, settle


def keyed(pairs) -> tuple:
    return encode_message_set([p for _, p in pairs], None, [k for k, _ in pairs]), len(pairs)


def build(make_stack, rounds=6, keys=4):
    """A compacted topic with ledgers of 2 entries, each entry a round of every key."""
    stack = make_stack(LogSettings(max_ledger_entries=2, tombstone_retention_s=0))
    manager = stack.manager()
    manager.new_topic_options["t"] = {"compaction": True}
    topic_log = settle(stack, manager.open("t"))
    latest = {}
    for r in range(rounds):
        pairs = [(b"k%d" % i, b"r%d-k%d" % (r, i)) for i in range(keys)]
        entry = settle(stack, topic_log.append(*keyed(pairs)))
        for i, (key, payload) in enumerate(pairs):
            latest[key] = (entry.first_seq + i, payload)
        stack.clock.advance(1)
    return stack, manager, topic_log, latest


def table(stack, topic_log, from_seq=1):
    out = {}
    for entry in settle(stack, topic_log.read(from_seq, 10_000, 1 << 30)):
        for m in decode_entry("t", entry.data):
            out[bytes(m.key)] = (m.seq, bytes(m.payload))
    return out


def test_appends_and_rolls_go_on_while_a_compaction_works(make_stack):
    stack, _manager, topic_log, latest = build(make_stack)
    compacting = topic_log.compact(0)
    assert not compacting.called  # (it gives the clock back between chunks)
    for r in range(5):  # each append fills a ledger half: rolls meanwhile
        pairs = [(b"k0", b"during-%d" % r), (b"new%d" % r, b"x")]
        entry = topic_log.append(*keyed(pairs))
        settle(stack, entry)
        latest[b"k0"] = (topic_log.last_seq - 1, b"during-%d" % r)
        latest[b"new%d" % r] = (topic_log.last_seq, b"x")
    report = settle(stack, compacting)
    assert report["span"] is not None
    assert table(stack, topic_log) == latest
    ranges = topic_log.ranges
    assert ranges[0].ledger_id == report["ledger"]
    assert all(a.last_seq + 1 == b.first_seq for a, b in pairwise(ranges))
    assert settle(stack, stack.metadata.get_topic("t")).value == ranges
    assert settle(stack, stack.metadata.list_garbage()) == {}  # (the old ones deleted, the new one kept)


@pytest.mark.parametrize("written", [False, True])
def test_a_takeover_while_compacting_keeps_the_old_ledgers(make_stack, backend, written):
    """Taken over before the new ledger was recorded (`written` False: it is deleted at
    once) or once it was written, before the swap (True: the fenced compactor leaves it
    recorded as garbage, and the new owner deletes it as it acquires the topic)."""
    if written and backend != "memory":
        pytest.skip("holds ledger closes: an in-memory store feature")
    stack, _manager, topic_log, latest = build(make_stack)
    before = topic_log.ranges
    if written:
        stack.ledgers.hold_closes()  # (the new ledger's close waits: written, not swapped)
    compacting = topic_log.compact(0)
    if written:
        stack.clock.advance(0)
    assert not compacting.called
    if written:  # another hub writes the topic's record meanwhile (its acquisition's write)
        record = settle(stack, stack.metadata.get_topic("t"))
        settle(stack, stack.metadata.put_topic("t", record.value, record.version, options=record.options))
        stack.ledgers.release_closes()
        assert failure_of(stack, compacting).check(TopicFenced)
    other = stack.manager("r2")  # another hub acquires the topic
    taken = settle(stack, other.open("t"))
    if not written:
        assert failure_of(stack, compacting).check(TopicFenced)
    assert taken.compaction
    assert [r.ledger_id for r in taken.ranges[: len(before) - 1]] == [r.ledger_id for r in before[:-1]]
    assert table(stack, taken) == latest
    garbage = settle(stack, stack.metadata.list_garbage())
    named = set(ledger_ids(taken.ranges))  # (its open range names no ledger: none written yet)
    stored = set(stack.ledgers.list_ledgers())
    assert garbage == {} and stored == named
    # The taker compacts it as it would any compacted topic.
    settle(stack, taken.compact(0))
    assert table(stack, taken) == latest


def test_a_reopened_topic_reads_the_compacted_ledgers(make_stack):
    stack, _manager, topic_log, latest = build(make_stack)
    settle(stack, topic_log.compact(0))
    kept = table(stack, topic_log)
    manager = stack.restart()
    reopened = settle(stack, manager.open("t"))
    assert reopened.compaction and table(stack, reopened) == kept == latest
    # A read from every seq-id starts at the next message kept.
    seqs = sorted(seq for seq, _ in kept.values())
    for seq in range(1, seqs[-1] + 1):
        first = settle(stack, reopened.read(seq, 1, 1 << 20))[0]
        messages = [m.seq for m in decode_entry("t", first.data, seq - first.first_seq, first.count)]
        assert messages[0] == min(s for s in seqs if s >= seq)


def test_a_read_in_flight_when_the_compaction_drops_its_ledger_reads_the_new_one(make_stack, backend):
    """A read of the old ledgers that the store answers only after the compaction's swap
    and drop (a RADOS read in flight) meets a deleted ledger: it reads again through the
    ranges as they are now, and returns the compacted entries."""
    if backend != "memory":
        pytest.skip("holds a read: an in-memory store feature")
    stack, _manager, topic_log, latest = build(make_stack)
    before = topic_log.ranges
    stack.ledgers.hold_next_read()
    reading = topic_log.read(1, 10_000, 1 << 30)
    assert not reading.called
    report = settle(stack, topic_log.compact(0))
    assert {r.ledger_id for r in before[:-1]} & set(stack.ledgers.list_ledgers()) == set()  # (dropped)
    assert stack.ledgers.release_reads() == 1
    entries = settle(stack, reading)
    assert entries[0].first_seq == 1
    messages = [m for entry in entries for m in decode_entry("t", entry.data)]
    assert {bytes(m.key): (m.seq, bytes(m.payload)) for m in messages} == latest
    assert len(messages) < report["span"][1]  # (what the compacted ledger keeps)
