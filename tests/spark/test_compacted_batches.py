"""A compacted topic's sparse entries -> Arrow record batches: the rows are the messages
kept, at their seq-ids, whatever pieces (inside gaps included) a read cuts them into."""

from hypothesis import given, settings
from hypothesis import strategies as st

from hedwig.protocol import encode_entry_header, encode_message_set
from hedwig.spark.batches import RecordBatchBuilder
from hedwig.topiclog.compaction import compacted
from tests.spark.test_batches import as_rows, expected_rows

T0 = 1_700_000_000_000_000


def compacted_entries(rounds):
    """Entries of `rounds` sets of keys, compacted (the latest of each key kept)."""
    entries, seq = [], 1
    for keys in rounds:
        payloads = [f"{seq + i}".encode() for i in range(len(keys))]
        entries.append(
            encode_entry_header(seq, len(keys), T0, b"eu", seq) + encode_message_set(payloads, None, keys)
        )
        seq += len(keys)
    last = seq - 1
    out, covered = [], 0
    for entry, entry_last in compacted(entries, last, 0):
        out.append((entry, covered + 1, entry_last))
        covered = entry_last
    return out, last


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from([b"a", b"b", b"c", b"d"]), min_size=1, max_size=5), min_size=1, max_size=8
    ),
    st.data(),
)
def test_pieces_of_compacted_entries_become_the_rows_kept(rounds, data):
    entries, last = compacted_entries(rounds)
    start_seq = data.draw(st.integers(1, last))
    up_to = data.draw(st.integers(start_seq, last))
    builder = RecordBatchBuilder("t", next_seq=start_seq)
    pieces = []
    for entry, first, entry_last in entries:
        if entry_last < start_seq or first > up_to:
            continue
        start = max(start_seq, first) - first
        stop = entry_last - first + 1
        builder.add(start, stop, entry, up_to=up_to)
        pieces.append((start, min(stop, up_to - first + 1), entry))
    assert builder.next_seq == up_to + 1
    want = expected_rows("t", pieces)
    assert as_rows(builder.build()) == want if want else builder.rows == 0
    assert [row["seq"] for row in want] == sorted({row["seq"] for row in want})
