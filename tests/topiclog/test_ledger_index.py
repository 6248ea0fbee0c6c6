"""LedgerIndex (compact per-ledger index) and EntryLocator (closed ledgers, bounded memory)."""

import random
from itertools import pairwise

from hedwig.config.settings import LogSettings
from hedwig.topiclog.ledger_index import LedgerIndex
from tests.topiclog.harness import message_set, settle


def test_index_finds_the_entry_holding_each_seq():
    index = LedgerIndex(100)
    firsts = [100, 101, 105, 106, 200]
    for first in firsts:
        index.append(first)
    assert [index.find(s) for s in (99, 100, 101, 104, 105, 106, 199, 200, 10**6)] == [
        -1,
        0,
        1,
        1,
        2,
        3,
        3,
        4,
        4,
    ]
    assert [index.first_seq(i) for i in range(5)] == firsts
    index.pop()
    assert len(index) == 4 and index.find(250) == 3


def test_index_costs_four_bytes_an_entry_and_widens_only_when_needed():
    index = LedgerIndex(1)
    for first in range(1, 1_000_001):
        index.append(first)
    assert index.nbytes == 4_000_000
    index.append(1 + (1 << 32))  # a ledger spanning more than 2**32 seq-ids
    assert index.nbytes == 8 * 1_000_001
    assert index.find(1 + (1 << 32)) == 1_000_000
    assert index.find(500_000) == 499_999


def closed_ledgers_log(make_stack, entries=60, per_ledger=20, index_cache_bytes=64 << 20):
    """A log whose entries hold 1-4 messages each (random), split over closed ledgers."""
    stack = make_stack(LogSettings(max_ledger_entries=per_ledger, index_cache_bytes=index_cache_bytes))
    topic_log = settle(stack, stack.manager().open("t"))
    rng = random.Random(7)
    for _ in range(entries):
        n = rng.randint(1, 4)
        settle(stack, topic_log.append(message_set(n), n))
    return stack, topic_log


def test_after_restart_closed_ledgers_are_searched_by_probes_and_found_right(make_stack):
    stack, topic_log = closed_ledgers_log(make_stack)
    expected = settle(stack, topic_log.read(1, 1000, 1 << 30))
    reopened = settle(stack, stack.restart().open("t"))
    locator = reopened._locator
    assert locator.index_bytes == 0  # a fresh hub has no index of closed ledgers
    for entry in expected:
        for seq in (entry.first_seq, entry.last_seq):
            (got,) = settle(stack, reopened.read(seq, 1, 1 << 30))
            assert (got.first_seq, got.data) == (entry.first_seq, entry.data)
    assert locator.probes > 0
    # log2(20 entries) probes at most per lookup
    assert locator.probes <= 2 * len(expected) * 5


def test_sequential_readers_follow_hints_and_never_probe(make_stack):
    stack, topic_log = closed_ledgers_log(make_stack)
    last = topic_log.last_seq
    reopened = settle(stack, stack.restart().open("t"))
    locator = reopened._locator
    cursors = {}
    for reader, start in (("a", 1), ("b", 30)):  # "b" starts inside the first ledger: it probes
        got = settle(stack, reopened.read(start, 3, 1 << 30))
        cursors[reader] = got[-1].last_seq + 1
    probes_after_start = locator.probes
    assert probes_after_start > 0
    while any(seq <= last for seq in cursors.values()):
        for reader, seq in cursors.items():  # interleaved, 3 entries a read, across ledgers
            if seq <= last:
                got = settle(stack, reopened.read(seq, 3, 1 << 30))
                assert got[0].first_seq == seq
                cursors[reader] = got[-1].last_seq + 1
    assert locator.probes == probes_after_start


def test_ledgers_closed_by_rolls_keep_their_index_within_the_budget(make_stack):
    stack, topic_log = closed_ledgers_log(make_stack, entries=100, per_ledger=10, index_cache_bytes=500)
    locator = topic_log._locator
    assert 0 < locator.index_bytes <= 500
    kept = [r.ledger_id for r in topic_log.ranges[:-1] if locator.has_index(r.ledger_id)]
    assert kept and kept == [r.ledger_id for r in topic_log.ranges[:-1]][-len(kept) :]  # the newest
    # every closed ledger still reads right, indexed or not
    got = settle(stack, topic_log.read(1, 1000, 1 << 30))
    assert [e.first_seq for e in got][:3] == [1, got[1].first_seq, got[2].first_seq]
    assert all(b.first_seq == a.last_seq + 1 for a, b in pairwise(got))
    assert got[-1].last_seq == topic_log.last_seq


def test_gc_drops_the_indexes_of_deleted_ledgers(make_stack):
    stack, topic_log = closed_ledgers_log(make_stack, entries=60, per_ledger=20)
    locator = topic_log._locator
    first = topic_log.ranges[0].ledger_id
    assert locator.has_index(first)
    settle(stack, topic_log.collect_garbage(topic_log.ranges[0].last_seq))
    assert not locator.has_index(first)
