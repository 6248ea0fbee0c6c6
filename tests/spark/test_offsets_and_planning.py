"""Offsets, admission control, data loss and partition planning (no Spark session)."""

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hedwig.spark.offsets import (
    DataLoss,
    TopicBounds,
    admit,
    last_seq_of,
    messages_between,
    offset_before,
    skip_lost,
)
from hedwig.spark.options import EARLIEST, LATEST
from hedwig.spark.planning import SeqRange, plan_partitions, split_range


def test_offsets_before_each_kind_of_start():
    bounds = TopicBounds(first_seq=40, last_seq=90)
    assert offset_before(EARLIEST, bounds) == 39
    assert offset_before(LATEST, bounds) == 90
    assert offset_before(55, bounds) == 54
    assert offset_before(EARLIEST, TopicBounds(1, 0)) == 0  # an empty topic


def test_ending_positions():
    bounds = TopicBounds(1, 90)
    assert last_seq_of("t", LATEST, bounds) == 90
    assert last_seq_of("t", 70, bounds) == 70
    with pytest.raises(ValueError, match="endingSeq 91 is beyond its last published seq-id 90"):
        last_seq_of("t", 91, bounds)


def test_a_removed_range_fails_with_a_clear_message_or_is_skipped():
    bounds = TopicBounds(first_seq=101, last_seq=200)
    assert skip_lost("t", 100, bounds, fail=True) == 100  # nothing lost: 101 is next
    with pytest.raises(DataLoss, match=r"seq-ids 51\.\.100 of topic 't' were removed.*failOnDataLoss"):
        skip_lost("t", 50, bounds, fail=True)
    said = []
    assert skip_lost("t", 50, bounds, fail=False, log=said.append) == 100
    assert "skipping seq-ids 51..100" in said[0]


def test_admit_without_limit_or_under_it_reads_everything():
    assert admit({"a": 5, "b": 0}, {"a": 10, "b": 3}, None) == {"a": 10, "b": 3}
    assert admit({"a": 5, "b": 0}, {"a": 10, "b": 3}, 8) == {"a": 10, "b": 3}


def test_admit_never_moves_an_offset_backwards():
    assert admit({"a": 12}, {"a": 10}, None) == {"a": 12}


@given(
    st.dictionaries(
        st.sampled_from("abcde"), st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), min_size=1
    ),
    st.integers(1, 10**6),
)
def test_admit_reads_exactly_the_limit_in_proportion(spec, limit):
    start = {t: s for t, (s, _) in spec.items()}
    latest = {t: s + n for t, (s, n) in spec.items()}
    end = admit(start, latest, limit)
    backlog = messages_between(start, latest)
    assert messages_between(start, end) == min(limit, backlog)
    for t in spec:
        assert start[t] <= end[t] <= latest[t]
        if backlog > limit:
            share = (latest[t] - start[t]) * limit / backlog
            assert abs((end[t] - start[t]) - share) <= len(spec)
    assert admit(start, latest, limit) == end  # planned again after a restart: the same batch


@given(st.integers(1, 10**9), st.integers(0, 5000), st.integers(1, 700))
def test_split_covers_the_range_exactly_in_even_pieces(first, count, most):
    pieces = split_range("t", first, first + count - 1, most)
    covered = [seq for p in pieces for seq in range(p.from_seq, p.to_seq + 1)]
    assert covered == list(range(first, first + count))
    assert all(1 <= p.count <= most for p in pieces)
    if pieces:
        assert len(pieces) == -(-count // most)
        assert max(p.count for p in pieces) - min(p.count for p in pieces) <= 1


def test_plan_partitions_per_topic():
    parts = plan_partitions({"a": 0, "b": 10, "c": 7}, {"a": 5, "b": 14, "c": 7}, 3)
    assert parts == [SeqRange("a", 1, 3), SeqRange("a", 4, 5), SeqRange("b", 11, 12), SeqRange("b", 13, 14)]


def test_partitions_survive_pickling():
    part = pickle.loads(pickle.dumps(SeqRange("a", 3, 9)))
    assert (part.topic, part.from_seq, part.to_seq, part.count) == ("a", 3, 9, 7)
