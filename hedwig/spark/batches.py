"""Stored entries -> Arrow record batches, with work per entry and none per message.

An entry (hedwig/protocol/entry.py) is a small header and the publisher's message set,
whose layout keeps every payload length in one u32 array ahead of the concatenated
payloads. That is already most of an Arrow binary column: the lengths become the
offsets (one cumulative sum in Arrow's C++), the payload bytes become the data buffer
(one join of slices). The other columns are per entry (publish time, origin region,
origin seq delta) and widen to rows through run-end decoding; `seq` is a cumulative
sum. Python touches each entry a handful of times and each message never, except for
the properties of entries that carry any (a rare, opt-in feature of a publish). Keys are
a binary column built as the payloads are (their length array, their bytes), null where
a message has none.

A builder holds one contiguous run of seq-ids of one topic: a gap between the pieces
added means the hub skipped messages, and that is refused rather than written out.
"""

import struct
from array import array
from itertools import accumulate

import pyarrow as pa
import pyarrow.compute as pc

from hedwig.protocol.compression import plain_message_set
from hedwig.protocol.entry import decode_entry_header, message_part
from hedwig.protocol.messageset import (
    FLAG_KEYS,
    FLAG_PROPERTIES,
    FLAG_TYPED,
    SET_FLAGS,
    SET_VERSION,
    MessageSetError,
    decode_properties,
    decode_typed_properties,
    length_arrays,
    read_u32_array,
)
from hedwig.spark.schema import ARROW_SCHEMA, PROPERTIES_TYPE, PUBLISH_TIME_TYPE

_SET_HEADER = struct.Struct("!BBI")
_ONE = pa.scalar(1, pa.int64())
_ZERO32 = pa.scalar(0, pa.int32())
_NO_KEYS = pa.array([], pa.string())
_NO_VALUES = pa.array([], pa.binary())
_OFFSET_ZERO = pa.array([0], pa.int32())
_MAX_OFFSET = 2**31 - 1  # Arrow binary/string columns use int32 offsets


class CorruptEntry(ValueError):
    """An entry whose bytes do not hold what its header and length arrays say."""


def _binary(value) -> bytes:
    """A property value for the binary map column: bytes as they are, a typed value
    (messageset.py) as its text in UTF-8 (true / false for a bool)."""
    if value.__class__ is bytes:
        return value
    if isinstance(value, bool):
        return b"true" if value else b"false"
    return (value if isinstance(value, str) else repr(value)).encode("utf-8")


class RecordBatchBuilder:
    """Collects pieces of entries (messages [start, stop) of each) for one topic and
    turns them into one `pyarrow.RecordBatch` in ARROW_SCHEMA.

    Entries may be bytes or memoryviews (a READ_RANGE reply hands out views into one
    buffer); payloads are copied once, when the batch is built.
    """

    def __init__(self, topic: str, next_seq: int | None = None):
        self.topic = topic
        # The seq-id the next piece must start at (None: any); it carries over from one
        # batch to the next, so a run of batches is checked for gaps as a whole.
        self.next_seq = next_seq
        self._topic_scalar = pa.scalar(topic, pa.string())
        self._reset()

    def _reset(self) -> None:
        self.rows = 0
        self.payload_bytes = 0
        self.first_seq = None
        self._lengths = array("I")
        self._payloads = []
        self._run_ends = []
        self._times = []
        self._regions = []
        self._origin_deltas = []
        self._seq_deltas = []  # per piece: its first message's seq-id - its first row
        self._property_pieces = []  # (row offset, counts, keys, values) of pieces with properties
        self._key_pieces = []  # (row offset, key lengths, key bytes) of pieces with keys

    def add(self, start: int, stop: int, entry, up_to: int | None = None) -> int:
        """Add messages [start, stop) of `entry`, none beyond seq-id `up_to` if given;
        returns how many rows that adds."""
        try:
            header = decode_entry_header(entry)
        except MessageSetError as e:
            raise CorruptEntry(f"topic {self.topic}: {e}") from None
        where = f"topic {self.topic}, entry at seq {header.first_seq}"
        try:
            # A compressed set (hedwig/protocol/compression.py) is read from its plain
            # form, decompressed once here; a plain one is read in place.
            entry, position = plain_message_set(entry, header.body_offset)
        except MessageSetError as e:
            raise CorruptEntry(f"{where}: {e}") from None
        if len(entry) - position < _SET_HEADER.size:
            raise CorruptEntry(f"{where}: entry ends before its message set")
        version, flags, count = _SET_HEADER.unpack_from(entry, position)
        if version != SET_VERSION:
            raise CorruptEntry(f"{where}: unknown message set version {version}")
        # (a compacted entry's set holds the last `count` of its header.count seq-ids)
        if (count > header.count if header.sparse else count != header.count) or count == 0:
            raise CorruptEntry(f"{where}: header says {header.count} messages, message set {count}")
        if not 0 <= start < stop <= header.count:
            raise CorruptEntry(f"{where}: piece [{start}, {stop}) is outside its {header.count} messages")
        if flags & ~SET_FLAGS:
            raise CorruptEntry(f"{where}: unknown message set flags {flags:#x}")
        has_properties = bool(flags & FLAG_PROPERTIES)
        position += _SET_HEADER.size
        arrays_end = position + 4 * count * length_arrays(flags)
        if arrays_end > len(entry):
            raise CorruptEntry(f"{where}: truncated in its length arrays")
        lengths = read_u32_array(entry, position, count)
        property_lengths = read_u32_array(entry, position + 4 * count, count) if has_properties else None
        payload_total = sum(lengths)
        data_end = arrays_end + payload_total + (sum(property_lengths) if has_properties else 0)
        key_lengths = None
        keys_at = data_end
        if flags & FLAG_KEYS:  # (keys lie after the properties)
            key_lengths = read_u32_array(entry, arrays_end - 4 * count, count)
            data_end += sum(key_lengths)
        if data_end != len(entry):
            raise CorruptEntry(f"{where}: its lengths add up to {data_end} bytes, it has {len(entry)}")

        piece_first = header.first_seq + start
        if up_to is not None and header.first_seq + stop - 1 > up_to:
            stop = up_to - header.first_seq + 1
            if stop <= start:
                return 0
        if self.next_seq is not None and piece_first != self.next_seq:
            raise CorruptEntry(
                f"topic {self.topic}: expected seq {self.next_seq} next, the hub sent {piece_first}"
            )
        piece_end = header.first_seq + stop  # the seq-id after the piece
        if header.sparse:  # seq-ids [start, stop) as indexes of the messages kept
            header, start, stop = message_part(header, count, start, stop)
            if start >= stop:  # (a piece of gaps only)
                self.next_seq = piece_end
                return 0
            piece_first = header.first_seq + start
        if start == 0 and stop == count:
            piece_lengths = lengths
            begin = arrays_end
            piece_bytes = payload_total
        else:
            piece_lengths = lengths[start:stop]
            begin = arrays_end + sum(lengths[:start])
            piece_bytes = sum(piece_lengths)
        if self.payload_bytes + piece_bytes > _MAX_OFFSET:
            raise ValueError("a record batch holds at most 2 GiB of payload; build() before adding more")

        rows = stop - start
        if has_properties:
            decode = decode_typed_properties if flags & FLAG_TYPED else decode_properties
            self._add_properties(entry, arrays_end + payload_total, property_lengths, start, stop, decode)
        if key_lengths is not None:
            piece_keys = key_lengths[start:stop]
            keys_begin = keys_at + sum(key_lengths[:start])
            self._key_pieces.append((self.rows, piece_keys, entry[keys_begin : keys_begin + sum(piece_keys)]))
        if self.first_seq is None:
            self.first_seq = piece_first
        self._seq_deltas.append(piece_first - self.rows)
        self.next_seq = piece_end
        self._lengths.extend(piece_lengths)
        self._payloads.append(entry[begin : begin + piece_bytes])
        self.rows += rows
        self.payload_bytes += piece_bytes
        self._run_ends.append(self.rows)
        self._times.append(header.publish_time_us)
        self._regions.append(header.origin_region)
        self._origin_deltas.append(header.origin_seq - header.first_seq)
        return rows

    def _add_properties(
        self, entry, blobs_start: int, property_lengths, start: int, stop: int, decode
    ) -> None:
        offsets = list(accumulate(property_lengths, initial=blobs_start))
        counts, keys, values = [], [], []
        for i in range(start, stop):
            if offsets[i] == offsets[i + 1]:
                counts.append(0)
                continue
            try:
                properties = decode(entry[offsets[i] : offsets[i + 1]])
            except (MessageSetError, UnicodeDecodeError) as e:
                raise CorruptEntry(f"topic {self.topic}: properties of a message: {e}") from None
            counts.append(len(properties))
            keys.extend(properties)
            values.extend(map(_binary, properties.values()))
        self._property_pieces.append((self.rows, counts, keys, values))

    def build(self) -> pa.RecordBatch:
        """The rows added so far as one record batch; the builder starts over empty."""
        rows = self.rows
        if rows == 0:
            self._reset()
            return pa.RecordBatch.from_pylist([], schema=ARROW_SCHEMA)
        run_ends = pa.array(self._run_ends, pa.int32())

        def widen(values, kind):
            if len(values) == 1:
                return pa.repeat(pa.scalar(values[0], kind), rows)
            return pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(run_ends, pa.array(values, kind)))

        if len(set(self._seq_deltas)) == 1:  # dense: one run of seq-ids
            seq = pc.cumulative_sum(pa.repeat(_ONE, rows), start=self._seq_deltas[0] - 1)
        else:  # (a compacted topic's gaps: each piece's row index + its delta)
            row = pc.cumulative_sum(pa.repeat(_ONE, rows), start=-1)
            seq = pc.add(row, widen(self._seq_deltas, pa.int64()))
        origin_seq = pc.add(seq, widen(self._origin_deltas, pa.int64()))
        lengths = pa.Array.from_buffers(pa.uint32(), rows, [None, pa.py_buffer(self._lengths)])
        offsets = pa.concat_arrays([_OFFSET_ZERO, pc.cumulative_sum(lengths).cast(pa.int32())])
        payload = pa.Array.from_buffers(
            pa.binary(), rows, [None, offsets.buffers()[1], pa.py_buffer(b"".join(self._payloads))]
        )
        batch = pa.RecordBatch.from_arrays(
            [
                pa.repeat(self._topic_scalar, rows),
                seq,
                widen(self._times, PUBLISH_TIME_TYPE),
                widen(self._regions, pa.string()),
                origin_seq,
                self._keys(rows),
                self._properties(rows),
                payload,
            ],
            schema=ARROW_SCHEMA,
        )
        self._reset()
        return batch

    def _keys(self, rows: int) -> pa.Array:
        """The key column: null for a message without a key (every row, when no piece
        had keys)."""
        if not self._key_pieces:
            return pa.nulls(rows, pa.binary())
        lengths = array("I", bytes(4 * rows))
        for row, piece_lengths, _ in self._key_pieces:
            lengths[row : row + len(piece_lengths)] = piece_lengths
        lengths = pa.Array.from_buffers(pa.uint32(), rows, [None, pa.py_buffer(lengths)])
        offsets = pa.concat_arrays([_OFFSET_ZERO, pc.cumulative_sum(lengths).cast(pa.int32())])
        present = pc.not_equal(lengths, pa.scalar(0, pa.uint32()))
        data = pa.py_buffer(b"".join(bytes(piece) for _, _, piece in self._key_pieces))
        return pa.Array.from_buffers(pa.binary(), rows, [present.buffers()[1], offsets.buffers()[1], data])

    def _properties(self, rows: int) -> pa.Array:
        if not self._property_pieces:
            return pa.MapArray.from_arrays(
                pa.repeat(_ZERO32, rows + 1), _NO_KEYS, _NO_VALUES, type=PROPERTIES_TYPE
            )
        counts = array("i", bytes(4 * rows))
        keys, values = [], []
        for row, piece_counts, piece_keys, piece_values in self._property_pieces:
            counts[row : row + len(piece_counts)] = array("i", piece_counts)
            keys.extend(piece_keys)
            values.extend(piece_values)
        offsets = array("i", accumulate(counts, initial=0))
        return pa.MapArray.from_arrays(
            pa.array(offsets, pa.int32()),
            pa.array(keys, pa.string()),
            pa.array(values, pa.binary()),
            type=PROPERTIES_TYPE,
        )


def entries_to_batch(topic: str, entries) -> pa.RecordBatch:
    """One record batch from (start, stop, entry bytes) pieces of contiguous seq-ids."""
    builder = RecordBatchBuilder(topic)
    for start, stop, entry in entries:
        builder.add(start, stop, entry)
    return builder.build()
