"""Relayed entries arriving at a region (real topic logs over an in-memory ledger store):
new messages stored with their origin kept and `via` set, what is held already dropped or
cut off, outcomes in arrival order, a failure breaking its source, and marks derived from
the log again after a restart."""

import pytest

from hedwig.ledger.interface import LedgerStoreFull
from hedwig.protocol import encode_entry_header, encode_message_set
from hedwig.protocol.messageset import MessageSetError
from hedwig.region.entries import RelayedPart
from hedwig.region.highwater import HighWater
from hedwig.region.inbox import HELD, RelaySource, SourceBroken
from tests.region.harness import RegionHarness, entry, failure_of, fired


def relay(harness, data, start=0, stop=None, source=None, topic="t"):
    stop = stop if stop is not None else _count(data)
    source = source or RelaySource("root")
    return harness.regions.inboxes.receive(topic, data, start, stop, source)


def _count(data):
    from hedwig.protocol import decode_entry_header

    return decode_entry_header(data).count


def test_a_relayed_entry_is_stored_with_its_origin_kept_and_via_its_neighbour(tmp_path):
    mid = RegionHarness(tmp_path).start()
    stored = fired(relay(mid, entry(40, [b"a", b"b", b"c"], origin="asia", origin_seq=7)))
    assert stored == (1, 3)  # this region's seq-ids
    assert mid.stored("t") == [
        ("asia", 7, b"a", "root"),
        ("asia", 8, b"b", "root"),
        ("asia", 9, b"c", "root"),
    ]
    stats = mid.regions.inboxes.stats()
    assert (stats["appended_entries"], stats["appended_messages"], stats["pending_bytes"]) == (1, 3, 0)


def test_what_a_region_holds_already_is_dropped_and_a_straddling_entry_loses_its_head(tmp_path):
    mid = RegionHarness(tmp_path).start()
    fired(relay(mid, entry(1, [b"1", b"2", b"3"], origin="asia", origin_seq=1)))
    assert fired(relay(mid, entry(1, [b"1", b"2", b"3"], origin="asia", origin_seq=1))) == HELD
    assert fired(relay(mid, entry(2, [b"2"], origin="asia", origin_seq=2))) == HELD
    assert fired(relay(mid, entry(2, [b"2", b"3", b"4", b"5"], origin="asia", origin_seq=2))) == (4, 5)
    # Another origin's seq-ids are its own.
    assert fired(relay(mid, entry(9, [b"x"], origin="europe", origin_seq=1))) == (6, 6)
    assert [(o, s, p) for o, s, p, _ in mid.stored("t")] == [
        ("asia", 1, b"1"),
        ("asia", 2, b"2"),
        ("asia", 3, b"3"),
        ("asia", 4, b"4"),
        ("asia", 5, b"5"),
        ("europe", 1, b"x"),
    ]
    stats = mid.regions.inboxes.stats()
    assert (stats["duplicate_entries"], stats["duplicate_messages"], stats["sliced_entries"]) == (2, 6, 1)


def test_a_relay_that_starts_inside_an_entry_stores_only_its_tail(tmp_path):
    mid = RegionHarness(tmp_path).start()
    assert fired(relay(mid, entry(1, [b"a", b"b", b"c"], origin="asia", origin_seq=10), start=2)) == (1, 1)
    assert mid.stored("t") == [("asia", 12, b"c", "root")]


def test_an_entry_of_this_regions_own_origin_is_never_stored_again(tmp_path):
    mid = RegionHarness(tmp_path, name="mid").start()
    assert fired(relay(mid, entry(1, [b"a"], origin="mid"))) == HELD
    assert mid.stored("t") == []
    assert mid.regions.inboxes.stats()["looped_entries"] == 1


def test_outcomes_resolve_in_arrival_order(tmp_path):
    mid = RegionHarness(tmp_path).start()
    fired(relay(mid, entry(1, [b"a"], origin="asia", origin_seq=1)))
    mid.ledgers.hold_acks()
    outcomes = []
    relay(mid, entry(2, [b"b"], origin="asia", origin_seq=2)).addCallback(outcomes.append)
    relay(mid, entry(1, [b"a"], origin="asia", origin_seq=1)).addCallback(outcomes.append)  # held
    assert outcomes == []  # the duplicate waits for the append before it
    mid.ledgers.release_acks()
    assert outcomes == [(2, 2), HELD]


def test_a_malformed_entry_fails_and_breaks_its_source_only(tmp_path):
    mid = RegionHarness(tmp_path).start()
    root, child = RelaySource("root"), RelaySource("leaf")
    bad = entry(1, [b"a", b"b"], origin="asia")[:-1]  # a message set one byte short
    assert failure_of(relay(mid, bad, source=root)).check(MessageSetError)
    later = relay(mid, entry(2, [b"c"], origin="asia", origin_seq=3), source=root)
    assert failure_of(later).check(SourceBroken)
    assert fired(relay(mid, entry(1, [b"z"], origin="europe"), source=child)) == (1, 1)
    assert root.broken is not None and child.broken is None
    assert mid.regions.inboxes.stats()["failed_entries"] == 2


def test_a_refused_append_breaks_the_source_and_the_marks_are_derived_again(tmp_path):
    mid = RegionHarness(tmp_path).start()
    root = RelaySource("root")
    fired(relay(mid, entry(1, [b"a"], origin="asia", origin_seq=1), source=root))
    mid.ledgers.fail_appends(LedgerStoreFull("disk full"))
    assert failure_of(relay(mid, entry(2, [b"b"], origin="asia", origin_seq=2), source=root)).check(
        LedgerStoreFull
    )
    assert failure_of(relay(mid, entry(3, [b"c"], origin="asia", origin_seq=3), source=root)).check(
        SourceBroken
    )
    # The link reconnects (a new source) and re-reads from its consumed seq-id (after 1).
    again = RelaySource("root")
    assert fired(relay(mid, entry(2, [b"b"], origin="asia", origin_seq=2), source=again)) == (2, 2)
    assert fired(relay(mid, entry(3, [b"c"], origin="asia", origin_seq=3), source=again)) == (3, 3)
    assert [s for _, s, _, _ in mid.stored("t")] == [1, 2, 3]


def test_after_a_restart_the_marks_come_from_the_log(tmp_path):
    mid = RegionHarness(tmp_path).start()
    for i in range(1, 6):
        fired(relay(mid, entry(i, [b"%d" % i], origin="asia", origin_seq=i)))
    fired(relay(mid, entry(1, [b"e"], origin="europe", origin_seq=1)))
    fired(mid.logs.close())
    # The hub restarts over the same stores: every part is new but the stored data.
    restarted = RegionHarness(tmp_path, ledgers=mid.ledgers, metadata=mid.metadata).start()
    assert fired(relay(restarted, entry(3, [b"3", b"4", b"5", b"6"], origin="asia", origin_seq=3))) == (7, 7)
    assert fired(relay(restarted, entry(1, [b"e"], origin="europe", origin_seq=1))) == HELD
    assert [(o, s) for o, s, _, _ in restarted.stored("t")][-2:] == [("europe", 1), ("asia", 6)]
    assert restarted.regions.inboxes.stats()["origin_scans"] == 1  # one scan learnt both origins


def test_a_backward_scan_finds_an_old_origin_under_many_entries_and_yields_between_steps(tmp_path):
    mid = RegionHarness(tmp_path).start()
    log = mid.log("t")
    fired(log.append(b"\x01\x00\x00\x00\x00\x01\x00\x00\x00\x01o", 1, "old", 41))
    for i in range(1, 20_001):
        log.append(b"\x01\x00\x00\x00\x00\x01\x00\x00\x00\x01n", 1, "new", i)
    high = HighWater(log, mid.clock)
    assert high.mark("old") is None and high.mark("new") is None
    scanned = high.scan("old")
    assert not scanned.called  # one step, then the reactor is yielded
    mid.clock.advance(0)
    assert fired(scanned) == 41
    assert high.marks == {"new": 20_000, "old": 41}
    assert high.steps > 2 and high.entries_scanned == 20_001
    assert high.mark("never") == 0  # the whole log was read: an origin not in it holds nothing


def sparse(first_seq, count, payloads, origin="asia", origin_seq=1):
    """A compacted entry: seq-ids first_seq..first_seq + count - 1, its messages the last
    len(payloads) of them, the first of which has origin seq-id `origin_seq`."""
    header = encode_entry_header(
        first_seq, count, 1_700_000_000_000_000, origin.encode(), origin_seq, sparse=True
    )
    return header + encode_message_set(payloads, None, [b"k%d" % i for i in range(len(payloads))])


def test_a_compacted_entry_is_stored_dense_with_its_messages_origin_seq_ids(tmp_path):
    mid = RegionHarness(tmp_path).start()
    fired(relay(mid, entry(1, [b"1", b"2"], origin="asia", origin_seq=1)))
    # Seq-ids 3..8 of which 7 and 8 are kept: their origin seq-ids leap from 2 to 7.
    assert fired(relay(mid, sparse(3, 6, [b"7", b"8"], origin_seq=7))) == (3, 4)
    # Relayed again from inside its gap (a reconnect): held, as is a piece of gaps alone.
    assert fired(relay(mid, sparse(3, 6, [b"7", b"8"], origin_seq=7), start=2)) == HELD
    assert fired(relay(mid, sparse(9, 4, [b"12"], origin_seq=12), start=0, stop=2)) == HELD
    assert fired(relay(mid, sparse(9, 4, [b"12"], origin_seq=12), start=1)) == (5, 5)
    assert [(o, s, p) for o, s, p, _ in mid.stored("t")] == [
        ("asia", 1, b"1"),
        ("asia", 2, b"2"),
        ("asia", 7, b"7"),
        ("asia", 8, b"8"),
        ("asia", 12, b"12"),
    ]


@pytest.mark.parametrize(
    "data",
    [
        sparse(3, 2, [b"a", b"b", b"c"]),  # more messages than seq-ids
        sparse(3, 2, [b"a"], origin_seq=0),  # an origin seq-id 0
    ],
)
def test_a_compacted_entry_that_does_not_add_up_is_malformed(data):
    with pytest.raises(MessageSetError):
        RelayedPart(data, 0, 2)
