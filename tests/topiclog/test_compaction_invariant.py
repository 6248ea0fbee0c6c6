"""The compactor's invariant, over any history of publishes (hypothesis): after
compaction the latest message of every key survives with its seq-id, payload and
properties; nothing is invented; seq-ids keep their order; the rewritten entries cover
the span's seq-ids exactly; compacting the result again changes nothing; and a key map
too small for the span's keys takes several passes that end where one big pass does
(Kafka's LogCleanerTest#testPartialSegmentClean)."""

import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from hedwig.protocol.compression import compress_message_set
from hedwig.protocol.entry import decode_entry, decode_entry_header, encode_entry_header
from hedwig.protocol.messageset import encode_message_set
from hedwig.topiclog.compaction import LatestByKey, compacted

# Short keys, and long ones that differ only at their end (the policy remembers those by
# a digest).
KEYS = [b"a", b"b", b"c", b"d", "é".encode(), b"L" * 15, b"L" * 40, b"L" * 39 + b"M"]

message = st.tuples(
    st.sampled_from([*KEYS, None]),  # None: a keyless message (older data may hold some)
    st.binary(max_size=4),  # b"": a tombstone when keyed
    st.sampled_from([None, {"p": b"1"}, {"n": 7, "s": "x"}]),
)
publish = st.tuples(
    st.lists(message, min_size=1, max_size=5),
    st.integers(0, 1000),  # publish time (ms)
    st.sampled_from([None, "gzip"]),
)


def stored_entries(publishes):
    """(entries as the log stores them, every message as (seq, key, payload, props, time))."""
    entries, messages = [], []
    seq = 1
    for batch, time_ms, codec in publishes:
        keys = [key for key, _, _ in batch]
        body = encode_message_set([p for _, p, _ in batch], [props for _, _, props in batch], keys)
        if codec is not None:
            body = compress_message_set(body, codec)
        time_us = time_ms * 1000
        entries.append(encode_entry_header(seq, len(batch), time_us, b"here", seq) + body)
        for i, (key, payload, props) in enumerate(batch):
            messages.append((seq + i, key, payload, props or {}, time_us))
        seq += len(batch)
    return entries, messages


def compact(entries, span_last: int, cutoff_us: int, max_keys: int = 1 << 20):
    """The entries as the compactor's passes leave them."""
    return [entry for entry, _last in compacted(entries, span_last, cutoff_us, max_keys)]


def decoded(entries):
    return [
        (m.seq, getattr(m, "key", None), bytes(m.payload), m.properties, m.publish_time_us)
        for data in entries
        for m in decode_entry("t", data)
    ]


@settings(max_examples=300, deadline=None)
@given(st.lists(publish, min_size=1, max_size=12), st.integers(0, 1001))
def test_the_latest_of_every_key_survives_and_nothing_is_invented(publishes, cutoff_ms):
    entries, messages = stored_entries(publishes)
    span_last = messages[-1][0]
    cutoff_us = cutoff_ms * 1000
    out = compact(entries, span_last, cutoff_us)
    kept = decoded(out)
    # Nothing invented: every message kept is one published, with all it carried.
    published = {m[0]: m for m in messages}
    for m in kept:
        seq, key, payload, props, time_us = m
        assert published[seq] == (seq, None if key is None else bytes(key), payload, props, time_us)
    # Seq-ids keep their order; the entries cover 1..span_last exactly, each ending with a message.
    seqs = [m[0] for m in kept]
    assert seqs == sorted(set(seqs))
    assert seqs[-1] == span_last
    covered = 0
    for data in out:
        header = decode_entry_header(data)
        assert header.first_seq == covered + 1
        covered = header.last_seq
        assert decode_entry("t", data)[-1].seq == header.last_seq
    assert covered == span_last
    # The latest of every key survives (a tombstone only while younger than the cutoff,
    # or when it is the span's last message); every keyless message stays.
    latest = {}
    for m in messages:
        if m[1] is not None:
            latest[m[1]] = m
    want = (
        {m[0] for m in latest.values() if m[2] != b"" or m[4] >= cutoff_us or m[0] == span_last}
        | {m[0] for m in messages if m[1] is None}
        | {span_last}
    )
    assert set(seqs) == want
    # Compacting the compacted entries again keeps the same messages.
    assert decoded(compact(out, span_last, cutoff_us)) == kept
    # A key map of a few keys: several passes, the same messages in the end.
    for max_keys in (1, 2, 3):
        assert decoded(compact(entries, span_last, cutoff_us, max_keys)) == kept


@settings(max_examples=100, deadline=None)
@given(st.lists(publish, min_size=1, max_size=8), st.integers(1, 40), st.integers(0, 40))
def test_a_piece_of_a_sparse_entry_names_seq_ids(publishes, start, length):
    """A delivery's [start, stop) of a compacted entry gives the messages whose seq-ids
    lie in it, whatever the gaps."""
    entries, messages = stored_entries(publishes)
    span_last = messages[-1][0]
    for data in compact(entries, span_last, 0):
        header = decode_entry_header(data)
        whole = decode_entry("t", data)
        lo = min(start, header.count)
        hi = min(lo + length, header.count)
        piece = decode_entry("t", data, lo, hi)
        assert [m.seq for m in piece] == [
            m.seq for m in whole if header.first_seq + lo <= m.seq < header.first_seq + hi
        ]


def test_the_policy_remembers_a_span_of_megabyte_keys_in_bounded_memory():
    """A key may be as large as a message (a megabyte): the policy remembers every key
    of the span, each by at most 16 bytes, not the key itself (a span of distinct
    megabyte keys would otherwise hold all of them in memory at once)."""
    count, size = 48, 1 << 20
    policy = LatestByKey(span_last=2 * count + 1, tombstone_cutoff_us=0, max_keys=count)

    def key(i):  # (made afresh each time, as each entry read gives its keys)
        return bytes([i]) * size

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for seq in range(1, 2 * count + 1):
            assert policy.see(seq, key(seq % count))
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < size, f"the policy holds {held} bytes for {count} keys of {size}"
    kept = [seq for seq in range(1, 2 * count + 1) if policy.keeps(seq, key(seq % count), False, 0)]
    assert kept == list(range(count + 1, 2 * count + 1))  # the latest of each key
