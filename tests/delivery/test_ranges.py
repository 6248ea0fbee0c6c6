"""The range sets and holdings a shared subscription keeps, checked against a plain set of
seq-ids as their model, and the compact bytes its acknowledgements are written as."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hedwig.delivery.leases import Holdings, Lease
from hedwig.delivery.ranges import RangeSet, decode_ranges, encode_ranges

ranges = st.lists(
    st.tuples(st.integers(1, 300), st.integers(0, 20)).map(lambda r: (r[0], r[0] + r[1])), max_size=40
)


def members_of(range_set):
    return {seq for start, end in range_set for seq in range(start, end + 1)}


@given(ranges, ranges)
def test_a_range_set_is_the_set_of_its_seq_ids(added, probed):
    model = set()
    range_set = RangeSet()
    for first, last in added:
        new = range_set.add(first, last)
        wanted = set(range(first, last + 1)) - model
        assert members_of(new) == wanted and sum(e - s + 1 for s, e in new) == len(wanted)
        model |= wanted
    assert members_of(range_set) == model and range_set.count() == len(model)
    assert all(e + 1 < s for (_, e), (s, _) in zip(list(range_set), list(range_set)[1:], strict=False)), (
        "ranges are sorted, apart and never adjacent"
    )
    for first, _last in probed:
        assert range_set.next_gap(first) == min(s for s in range(first, 400) if s not in model)
        following = [s for s in range_set.starts if s >= first]
        assert range_set.next_start(first) == (following[0] if following else None)


@given(ranges, st.integers(0, 330))
def test_dropping_through_a_seq_id_counts_what_it_dropped(added, seq):
    range_set = RangeSet(added)
    model = members_of(range_set)
    assert range_set.drop_through(seq) == len({s for s in model if s <= seq})
    assert members_of(range_set) == {s for s in model if s > seq}


@given(ranges, st.integers(0, 50))
def test_acknowledged_ranges_come_back_from_their_bytes(added, shift):
    range_set = RangeSet([(first + shift, last + shift) for first, last in added])
    data = encode_ranges(range_set, shift, 1 << 20)
    assert members_of(decode_ranges(data, shift)) == members_of(range_set)
    assert (data == b"") == (not range_set)


def test_a_set_too_large_for_its_record_keeps_its_lowest_ranges():
    sparse = RangeSet((seq, seq) for seq in range(2, 400_000, 7) if seq % 3)
    data = encode_ranges(sparse, 0, 4096)
    assert 0 < len(data) <= 4096
    kept = decode_ranges(data, 0)
    assert list(kept) == list(sparse)[: len(kept)], "a prefix: what is left out comes again"


@pytest.mark.parametrize(
    "data", [b"\x09\x01\x01", b"\x01\x81", b"\x01\x01", b"\x02not zlib", b"\x01\x00\x00"]
)
def test_bytes_it_did_not_write_are_refused(data):
    with pytest.raises(ValueError):
        decode_ranges(data, 0)


class _Member:
    held = 0


def leased_holdings(leased):
    """Holdings of leases (first, length) of one member, and seq-id -> its lease."""
    holdings, model, member = Holdings(), {}, _Member()
    for first, length in leased:
        seqs = set(range(first, first + length + 1))
        if seqs & model.keys():
            continue  # a seq-id is leased once at a time
        lease = Lease(member, first, first + length, 1, 0.0)
        holdings.add(lease)
        member.held += len(seqs)
        model.update(dict.fromkeys(seqs, lease))
    return holdings, model, member


@given(st.lists(st.tuples(st.integers(1, 60), st.integers(0, 8)), max_size=25), ranges)
def test_holdings_release_exactly_what_is_held(leased, released):
    holdings, model, member = leased_holdings(leased)
    for first, last in released:
        pieces = holdings.release(first, last)
        gone = {seq for start, end, _ in pieces for seq in range(start, end + 1)}
        assert gone == {seq for seq in model if first <= seq <= last}
        assert all(model[seq] is lease for start, end, lease in pieces for seq in range(start, end + 1))
        for seq in gone:
            del model[seq]
    assert member.held == len(model)
    assert sum(lease.held for lease in set(model.values())) == len(model)


def disjoint(added):
    """Sorted, disjoint ranges covering what `added` covers (as an ACK's ranges become)."""
    return list(RangeSet(added))


@given(ranges, ranges)
def test_many_ranges_added_at_once_are_the_set_of_their_seq_ids(before, added):
    range_set = RangeSet(before)
    model = members_of(range_set)
    batch = disjoint(added)
    new = range_set.add_many(batch) if batch else []
    wanted = members_of(RangeSet(batch)) - model
    assert members_of(new) == wanted and sum(e - s + 1 for s, e in new) == len(wanted)
    assert new == sorted(new), "the new pieces come in order"
    assert members_of(range_set) == model | wanted
    assert list(range_set) == list(RangeSet(before + added)), "sorted, apart, never adjacent"


@given(st.lists(st.tuples(st.integers(1, 60), st.integers(0, 8)), max_size=25), ranges)
def test_holdings_release_many_ranges_at_once_exactly_what_is_held(leased, released):
    holdings, model, member = leased_holdings(leased)
    batch = disjoint(released)
    if batch:
        holdings.release_many(batch)
    gone = members_of(RangeSet(batch))
    left = {seq: lease for seq, lease in model.items() if seq not in gone}
    held = {
        seq: lease
        for start, end, lease in zip(holdings.starts, holdings.ends, holdings.leases, strict=True)
        for seq in range(start, end + 1)
    }
    assert held == left
    assert holdings.starts == sorted(holdings.starts)
    assert member.held == len(left)
    for lease in set(model.values()):
        assert lease.held == sum(1 for kept in left.values() if kept is lease)
