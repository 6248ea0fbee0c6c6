"""Record batches against kafka-python's own record builder and reader (a codec nobody
here wrote): what it builds, with any codec, keys and headers, hedwig reads; what hedwig
answers a Fetch with, it reads back. And the idempotent sequence rules, unit by unit."""

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from twisted.internet.defer import Deferred, succeed
from twisted.internet.task import Clock

from hedwig.kafka.records import RecordsError, entry_batch, read_batches, records_as_stored
from hedwig.kafka.sequences import DUPLICATE_SEQUENCE_NUMBER, OUT_OF_ORDER_SEQUENCE_NUMBER, KafkaSequences
from hedwig.protocol.entry import encode_entry_header
from tests.kafka.wire import record_batch

KAFKA_CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

header_names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=8)
records = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(min_size=1, max_size=20)),
        st.binary(max_size=200),
        st.dictionaries(header_names, st.binary(max_size=10), max_size=3),
    ),
    min_size=1,
    max_size=20,
)


@given(records, st.sampled_from(sorted(KAFKA_CODECS)))
def test_what_kafka_python_builds_is_read_as_it_was_built(batch_records, codec):
    built = record_batch([(k, v, list(h.items())) for k, v, h in batch_records], KAFKA_CODECS[codec])
    (batch,) = read_batches(built, 1 << 20, 16 << 20)
    assert batch.keys == [k for k, _v, _h in batch_records]
    assert batch.values == [v for _k, v, _h in batch_records]
    assert [h or {} for h in batch.headers] == [h for _k, _v, h in batch_records]


@given(records, st.integers(1, 1 << 40), st.integers(0, 19))
def test_a_fetched_entry_is_a_batch_kafka_python_reads(batch_records, first_seq, skip):
    (batch,) = read_batches(
        record_batch([(k, v, list(h.items())) for k, v, h in batch_records]), 1 << 20, 1 << 24
    )
    entry = (
        encode_entry_header(first_seq, batch.count, 1_700_000_000_123_456, b"region", first_seq)
        + batch.message_set()
    )
    skip = min(skip, batch.count - 1)
    fetched = DefaultRecordBatch(entry_batch(entry, first_seq + skip, compacted=False)[0])
    assert fetched.validate_crc()
    got = list(fetched)
    assert [r.offset for r in got] == [first_seq - 1 + i for i in range(skip, batch.count)]
    assert [(r.key, r.value, dict(r.headers)) for r in got] == [(k, v, h) for k, v, h in batch_records[skip:]]
    assert {r.timestamp for r in got} == {1_700_000_000_123}


@settings(max_examples=20, deadline=None)
@example(count=3, length=9000, keyed=True, skip=1)  # (three-byte lengths)
@given(st.integers(1, 400), st.integers(0, 2400), st.booleans(), st.integers(0, 399))  # (in 1 MiB)
def test_long_batches_of_long_records_go_through_both_ways(count, length, keyed, skip):
    """Offset deltas past the varint tables' one byte, records of two- and three-byte
    lengths: the fast paths of both directions, held to kafka-python's encoding."""
    values = [bytes([n % 251]) * (length + n % 3) for n in range(count)]
    keys = [b"k%d" % n if keyed else None for n in range(count)]
    (batch,) = read_batches(
        record_batch([(k, v, []) for k, v in zip(keys, values, strict=True)]), 1 << 24, 1 << 26
    )
    assert batch.values == values and batch.keys == keys
    entry = encode_entry_header(5, count, 1_700_000_000_123_456, b"region", 5) + batch.message_set()
    skip = min(skip, count - 1)
    got = list(DefaultRecordBatch(entry_batch(entry, 5 + skip, compacted=False)[0]))
    assert [(r.offset, r.key, r.value) for r in got] == [
        (4 + n, keys[n], values[n]) for n in range(skip, count)
    ]


@given(records, st.integers(0, 19), st.integers(1, 3000), st.booleans())
def test_a_fetched_entry_cut_to_its_room_is_the_records_that_fit(batch_records, skip, room, keyed):
    """With a room of max_bytes, the batch holds the longest run of records from the
    fetch offset that fits (never none): what kafka-python reads of it is that run, and
    `whole` says whether it reaches the entry's end."""
    if not keyed:
        batch_records = [(None, v, {}) for _k, v, _h in batch_records]
    (batch,) = read_batches(
        record_batch([(k, v, list(h.items())) for k, v, h in batch_records]), 1 << 20, 1 << 24
    )
    entry = encode_entry_header(9, batch.count, 1_700_000_000_123_456, b"region", 9) + batch.message_set()
    skip = min(skip, batch.count - 1)
    fetched, whole = entry_batch(entry, 9 + skip, compacted=False, max_bytes=room)
    got = list(DefaultRecordBatch(fetched))
    assert DefaultRecordBatch(fetched).validate_crc()
    assert [(r.offset, r.key, r.value, dict(r.headers)) for r in got] == [
        (8 + skip + n, k, v, h) for n, (k, v, h) in enumerate(batch_records[skip : skip + len(got)])
    ]
    assert whole == (skip + len(got) == batch.count)
    assert len(got) >= 1
    if len(got) > 1:
        assert len(fetched) <= room
    if not whole:  # (one record more would not have fitted)
        one_more, _ = entry_batch(entry, 9 + skip, compacted=False, max_bytes=1 << 30)
        longer = list(DefaultRecordBatch(one_more))[: len(got) + 1]
        assert len(longer) == len(got) + 1
        assert len(fetched) + _record_size(fetched, one_more, len(got)) > room


def _record_size(cut: bytes, whole: bytes, taken: int) -> int:
    """The wire size of record `taken` of `whole`: what the cut batch left out first."""
    at = len(cut)
    value = shift = 0
    while True:
        byte = whole[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    return (at - len(cut)) + ((value >> 1) ^ -(value & 1))


# Records as producers send them, with what does not read back as it came: empty keys,
# null values, header names twice, null header values, and their own timestamps.
produced_records = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=20)),
        st.one_of(st.none(), st.binary(max_size=200)),
        st.lists(
            st.tuples(st.sampled_from(["a", "b", "é"]), st.one_of(st.none(), st.binary(max_size=10))),
            max_size=3,
        ),
        st.integers(0, 1 << 41),
    ),
    min_size=1,
    max_size=20,
)


def _produced_batch(produced, codec=0):
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for offset, (key, value, headers, timestamp) in enumerate(produced):
        builder.append(offset, timestamp=timestamp, key=key, value=value, headers=headers)
    return bytes(builder.build())


@given(produced_records, st.sampled_from(sorted(KAFKA_CODECS)), st.integers(1, 1 << 40))
def test_records_kept_as_produced_are_read_as_the_stored_entry_reads(produced, codec, first_seq):
    """A batch's records are kept (Batch.records) only when the entry they are stored
    as reads back as those records; then the batch made of them (a Fetch's answer with
    no work per record) is what kafka-python reads of the entry's own batch: offsets,
    keys, values, headers, the publish time as every record's timestamp."""
    (batch,) = read_batches(_produced_batch(produced, KAFKA_CODECS[codec]), 1 << 20, 1 << 24)
    exact = all(
        key != b""
        and value is not None
        and len({n for n, _v in headers}) == len(headers)
        and all(v is not None for _n, v in headers)
        for key, value, headers, _t in produced
    )
    assert (batch.records is not None) == exact
    if not exact:
        return
    time_us = 1_700_000_000_123_456
    entry = encode_entry_header(first_seq, batch.count, time_us, b"region", first_seq) + batch.message_set()
    from_entry = DefaultRecordBatch(entry_batch(entry, first_seq, compacted=False)[0])
    as_stored = DefaultRecordBatch(records_as_stored(first_seq, time_us, batch.count, batch.records))
    assert as_stored.validate_crc()
    assert (as_stored.base_offset, as_stored.timestamp_type, as_stored.max_timestamp) == (
        from_entry.base_offset,
        from_entry.timestamp_type,
        from_entry.max_timestamp,
    )

    def read(records):
        return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records]

    got = read(as_stored)
    assert got == read(from_entry)
    assert [r[1] for r in got] == [time_us // 1000] * batch.count


def test_a_decompression_bomb_is_refused_before_it_is_made():
    built = record_batch([(b"k", b"\0" * 500_000, [])], KAFKA_CODECS["gzip"])
    with pytest.raises(RecordsError) as refused:
        read_batches(built, 1 << 20, 64 * 1024)
    assert refused.value.code == 10  # MESSAGE_TOO_LARGE


class _Batch:
    def __init__(self, sequence, count, producer_id=7, epoch=0):
        self.producer_id, self.producer_epoch, self.base_sequence, self.count = (
            producer_id,
            epoch,
            sequence,
            count,
        )


def _outcome(d):
    got = []
    d.addBoth(got.append)
    return got[0] if got else None


class _EmptyLog:
    """A topic log with nothing in it yet: nothing for a recovery to learn."""

    topic = "t"
    first_seq = 1
    last_seq = 0


T = _EmptyLog()


def test_sequences_store_the_next_answer_repeats_and_refuse_gaps():
    sequences = KafkaSequences(Clock())
    stored = []

    def store(value):
        def run(producer):
            assert producer[0] == 7
            stored.append(value)
            return succeed(value)

        return run

    assert _outcome(sequences.publish(T, _Batch(0, 3), store("a"))) == "a"
    assert _outcome(sequences.publish(T, _Batch(3, 2), store("b"))) == "b"
    # Sent again: the first outcome, nothing stored.
    assert _outcome(sequences.publish(T, _Batch(0, 3), store("a again"))) == "a"
    # Past the next sequence (5): out of order; before those kept: a duplicate.
    gap = _outcome(sequences.publish(T, _Batch(9, 1), store("gap")))
    assert gap.value.code == OUT_OF_ORDER_SEQUENCE_NUMBER
    for n in range(6):
        sequences.publish(T, _Batch(5 + n, 1), store(n))
    old = _outcome(sequences.publish(T, _Batch(3, 2), store("old")))
    assert old.value.code == DUPLICATE_SEQUENCE_NUMBER
    assert stored == ["a", "b", 0, 1, 2, 3, 4, 5]


def test_a_repeat_of_a_batch_in_flight_gets_its_outcome():
    sequences = KafkaSequences(Clock())
    pending = Deferred()
    first = sequences.publish(T, _Batch(0, 1), lambda _producer: pending)
    repeat = sequences.publish(T, _Batch(0, 1), lambda _producer: succeed("stored twice"))
    pending.callback("entry")
    assert (_outcome(first), _outcome(repeat)) == ("entry", "entry")
