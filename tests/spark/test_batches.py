"""Entries -> Arrow record batches, checked against the protocol's own decoder."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hedwig.protocol import decode_entry, encode_entry_header, encode_message_set
from hedwig.spark.batches import CorruptEntry, RecordBatchBuilder, entries_to_batch
from hedwig.spark.schema import ARROW_SCHEMA

payloads = st.lists(st.binary(max_size=40), min_size=1, max_size=12)
property_maps = st.dictionaries(st.text(min_size=1, max_size=6), st.binary(max_size=8), max_size=3)
T0 = 1_700_000_000_000_000


def make_entry(first_seq, messages, properties=None, time_us=T0, region=b"eu", origin_seq=None, keys=None):
    header = encode_entry_header(
        first_seq, len(messages), time_us, region, first_seq if origin_seq is None else origin_seq
    )
    return header + encode_message_set(messages, properties, keys)


def expected_rows(topic, pieces):
    """What the protocol's per-message decoder says the rows are."""
    rows = []
    for start, stop, entry in pieces:
        for m in decode_entry(topic, bytes(entry), start, stop):
            rows.append(
                {
                    "topic": m.topic,
                    "seq": m.seq,
                    "publish_time": m.publish_time,
                    "origin_region": m.origin_region,
                    "origin_seq": m.origin_seq,
                    "key": None if m.key is None else bytes(m.key),
                    "properties": sorted(m.properties.items()),
                    "payload": bytes(m.payload),
                }
            )
    return rows


def as_rows(batch):
    rows = batch.to_pylist()
    for row in rows:
        row["properties"] = sorted(row["properties"])
    return rows


@given(
    st.lists(st.tuples(payloads, st.booleans(), st.booleans(), st.data()), min_size=1, max_size=6), st.data()
)
def test_pieces_of_entries_become_the_rows_the_protocol_decodes(specs, data):
    """Random entries (some with properties, some with keys, different regions and
    origin seq-ids), cut into pieces at random: the batch holds exactly the decoder's
    messages, in order, keys included (null for none)."""
    pieces = []
    seq = data.draw(st.integers(20, 10**12))  # the first entry may begin up to 12 seq-ids before it
    for i, (messages, with_properties, with_keys, piece_data) in enumerate(specs):
        properties = (
            piece_data.draw(st.lists(property_maps, min_size=len(messages), max_size=len(messages)))
            if with_properties
            else None
        )
        key = st.one_of(st.none(), st.binary(min_size=1, max_size=6))
        keys = (
            piece_data.draw(st.lists(key, min_size=len(messages), max_size=len(messages)))
            if with_keys
            else None
        )
        start = piece_data.draw(st.integers(0, len(messages) - 1)) if i == 0 else 0
        last = i == len(specs) - 1
        stop = piece_data.draw(st.integers(start + 1, len(messages))) if last else len(messages)
        entry = make_entry(
            seq - start,
            messages,
            properties,
            time_us=T0 + i * 1_000_003,
            region=f"r{i % 3}".encode(),
            origin_seq=piece_data.draw(st.integers(1, 10**12)),
            keys=keys,
        )
        pieces.append((start, stop, memoryview(entry) if i % 2 else entry))
        seq += stop - start
    batch = entries_to_batch("orders", pieces)
    assert batch.schema.equals(ARROW_SCHEMA)
    assert as_rows(batch) == expected_rows("orders", pieces)


def test_builder_starts_over_after_each_batch():
    builder = RecordBatchBuilder("t")
    builder.add(0, 3, make_entry(1, [b"a", b"b", b"c"]))
    first = builder.build()
    assert builder.rows == 0 and builder.payload_bytes == 0
    builder.add(0, 2, make_entry(4, [b"dd", b"e"]))
    second = builder.build()
    assert first.column("seq").to_pylist() == [1, 2, 3]
    assert second.column("seq").to_pylist() == [4, 5]
    assert second.column("payload").to_pylist() == [b"dd", b"e"]


def test_gaps_are_caught_across_batches_too():
    builder = RecordBatchBuilder("t", next_seq=1)
    builder.add(0, 2, make_entry(1, [b"a", b"b"]))
    builder.build()
    with pytest.raises(CorruptEntry, match="expected seq 3 next, the hub sent 4"):
        builder.add(0, 1, make_entry(4, [b"d"]))
    with pytest.raises(CorruptEntry, match="expected seq 5 next, the hub sent 1"):
        RecordBatchBuilder("t", next_seq=5).add(0, 2, make_entry(1, [b"a", b"b"]))


def test_pieces_are_clipped_at_up_to():
    builder = RecordBatchBuilder("t")
    assert builder.add(0, 3, make_entry(1, [b"a", b"b", b"c"]), up_to=2) == 2
    assert builder.add(0, 1, make_entry(3, [b"c"]), up_to=2) == 0
    assert builder.next_seq == 3
    assert builder.build().column("payload").to_pylist() == [b"a", b"b"]


def test_an_empty_builder_gives_an_empty_batch_of_the_schema():
    batch = RecordBatchBuilder("t").build()
    assert batch.num_rows == 0
    assert batch.schema.equals(ARROW_SCHEMA)


def test_a_gap_between_pieces_is_refused():
    builder = RecordBatchBuilder("t")
    builder.add(0, 2, make_entry(1, [b"a", b"b"]))
    with pytest.raises(CorruptEntry, match="expected seq 3 next, the hub sent 4"):
        builder.add(0, 1, make_entry(4, [b"d"]))
    assert builder.rows == 2  # the refused piece left nothing behind
    assert builder.build().column("seq").to_pylist() == [1, 2]


@pytest.mark.parametrize(
    "mangle, message",
    [
        (lambda e: e[:-1], "lengths add up to"),
        (lambda e: e + b"x", "lengths add up to"),
        (lambda e: e[:10], "shorter than its header"),
        (lambda e: b"\x09" + e[1:], "unknown entry version 9"),
        (lambda e: e[:41], "truncated in its length arrays"),
        (lambda e: e[:35], "ends before its message set"),
    ],
)
def test_malformed_entries_get_a_clear_error(mangle, message):
    entry = make_entry(1, [b"abc", b"de"], region=b"eu")
    with pytest.raises(CorruptEntry, match=message):
        RecordBatchBuilder("t").add(0, 2, mangle(entry))


def test_a_piece_outside_the_entry_is_refused():
    with pytest.raises(CorruptEntry, match=r"piece \[1, 3\) is outside its 2 messages"):
        RecordBatchBuilder("t").add(1, 3, make_entry(1, [b"a", b"b"]))


def test_header_and_message_set_counts_must_agree():
    entry = encode_entry_header(1, 3, T0, b"eu", 1) + encode_message_set([b"a", b"b"])
    with pytest.raises(CorruptEntry, match="header says 3 messages, message set 2"):
        RecordBatchBuilder("t").add(0, 2, entry)


def test_large_entries_keep_payload_bytes_exact():
    messages = [bytes([i % 256]) * (i * 37 % 5000) for i in range(2000)]
    batch = entries_to_batch("big", [(0, 2000, make_entry(7, messages))])
    assert batch.column("payload").to_pylist() == messages
    assert batch.column("seq").to_pylist() == list(range(7, 2007))


def test_entries_with_keys_and_typed_properties_become_rows():
    """A set with keys and typed values: the rows are its messages, typed values in the
    binary properties column as their text (booleans true / false), keys in the key
    column (null for a message without one)."""
    properties = [{"n": 150, "price": 9.5, "ok": True, "color": "red", "raw": b"\xff"}, None, {"s": b"x"}]
    entry = encode_entry_header(5, 3, T0, b"eu", 5) + encode_message_set(
        [b"a", b"b", b"c"], properties, [b"k1", None, b"k3"]
    )
    rows = entries_to_batch("t", [(0, 3, entry)]).to_pylist()
    assert [row["payload"] for row in rows] == [b"a", b"b", b"c"]
    assert [row["seq"] for row in rows] == [5, 6, 7]
    assert [row["key"] for row in rows] == [b"k1", None, b"k3"]
    assert dict(rows[0]["properties"]) == {
        "n": b"150",
        "price": b"9.5",
        "ok": b"true",
        "color": b"red",
        "raw": b"\xff",
    }
    assert [dict(row["properties"]) for row in rows[1:]] == [{}, {"s": b"x"}]
    keyed_only = encode_entry_header(1, 2, T0, b"eu", 1) + encode_message_set(
        [b"p", b"q"], None, [b"k", b"l"]
    )
    batch = entries_to_batch("t", [(1, 2, keyed_only)])
    assert batch.column("payload").to_pylist() == [b"q"] and batch.column("key").to_pylist() == [b"l"]
    plain_then_keyed = entries_to_batch(
        "t", [(0, 1, make_entry(1, [b"x"])), (0, 2, make_entry(2, [b"y", b"z"], keys=[None, b"kz"]))]
    )
    assert plain_then_keyed.column("key").to_pylist() == [None, None, b"kz"]


def test_an_entry_with_flags_no_set_has_is_corrupt():
    entry = bytearray(make_entry(1, [b"a"]))
    entry[-10] = 0x40  # the set's flags byte (u8 version, u8 flags, u32 count, u32 length, 1-byte payload)
    with pytest.raises(CorruptEntry, match="unknown message set flags 0x40"):
        entries_to_batch("t", [(0, 1, bytes(entry))])
