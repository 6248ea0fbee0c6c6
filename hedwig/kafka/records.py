"""Kafka record batches (magic v2) to and from hedwig message sets.

A Produce request's records are record batches: a 61-byte header (base offset, length,
leader epoch, magic, CRC-32C of the rest, attributes, offsets, timestamps, producer id,
epoch and sequence, record count) and the records, compressed as a whole by the codec
the attributes name (gzip, snappy, lz4, zstd). Each record holds varint-framed
timestamp and offset deltas, key, value and headers. A batch becomes one message set:
its records' values the payloads, their keys the keys, their headers the properties.

A Fetch answer is one batch per stored entry, uncompressed, with the log-append-time
flag: every record's timestamp is the entry's publish time, and its offset its seq-id - 1;
the last batch of an answer is cut to the records that fit the partition's max bytes.
An entry a Kafka producer's batch became is answered, while produced.py keeps it, with
the records as the producer sent them (records_as_stored: no work per record); any other
is framed record by record from the entry (entry_batch).
Everything a client sends is checked before anything is stored: lengths, CRC, magic,
codec, the decompressed size (bounded before it is made), every varint and length.
"""

import struct
import zlib

import crc32c

from hedwig.protocol.compression import plain_message_set
from hedwig.protocol.entry import decode_entry_header, message_part
from hedwig.protocol.messageset import (
    encode_message_set,
    message_set_count,
    parse_message_set,
    properties_and_keys,
)

# base offset, batch length, partition leader epoch, magic, crc
_BATCH_HEAD = struct.Struct("!qiibI")
# attributes, last offset delta, base and max timestamp, producer id, epoch, base sequence, count
_BATCH_REST = struct.Struct("!hiqqqhii")
BATCH_OVERHEAD = _BATCH_HEAD.size + _BATCH_REST.size  # 61
_CRC_FROM = _BATCH_HEAD.size  # the CRC covers the attributes to the end
_ATTRIBUTES_AT = _BATCH_HEAD.size
CODEC_MASK = 0x07
TIMESTAMP_LOG_APPEND = 0x08
TRANSACTIONAL = 0x10
CONTROL = 0x20
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_XERIAL_MAGIC = b"\x82SNAPPY\x00"


class RecordsError(ValueError):
    """Records that cannot be stored: `code` is the Kafka error to answer (CORRUPT_MESSAGE,
    INVALID_RECORD, MESSAGE_TOO_LARGE, UNSUPPORTED_COMPRESSION_TYPE, ...)."""

    def __init__(self, code: int, reason: str):
        super().__init__(reason)
        self.code = code


CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
UNSUPPORTED_COMPRESSION_TYPE = 76
INVALID_RECORD = 87


class Batch:
    """One decoded record batch: its producer fields and its records as parallel lists.
    `records`: the batch's records region (uncompressed) when a Fetch may answer with it
    as it is (records_as_stored), else None."""

    __slots__ = (
        "base_sequence",
        "count",
        "headers",
        "keys",
        "producer_epoch",
        "producer_id",
        "records",
        "values",
    )

    def __init__(self, producer_id, producer_epoch, base_sequence, keys, values, headers, records=None):
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.keys = keys
        self.values = values
        self.headers = headers
        self.count = len(values)
        self.records = records

    def message_set(self) -> bytes:
        """The hedwig message set of these records (no key: None; a null value: empty)."""
        keys = self.keys if any(self.keys) else None
        properties = self.headers if any(self.headers) else None
        return encode_message_set(self.values, properties, keys)


def read_batches(data, max_message_bytes: int, max_plain_bytes: int) -> list:
    """Every record batch of a Produce request's partition records, decoded and checked
    (RecordsError saying which rule was broken). `max_plain_bytes` bounds each batch's
    records once decompressed; `max_message_bytes` each record's key, value and headers."""
    if data is None:
        raise RecordsError(CORRUPT_MESSAGE, "no records")
    data = bytes(data)
    batches = []
    offset = 0
    end = len(data)
    while offset < end:
        if end - offset < BATCH_OVERHEAD:
            raise RecordsError(CORRUPT_MESSAGE, "a record batch is cut short")
        _base, length, _epoch, magic, crc = _BATCH_HEAD.unpack_from(data, offset)
        if magic != 2:
            raise RecordsError(
                UNSUPPORTED_FOR_MESSAGE_FORMAT, f"record batch magic {magic} (only v2 is taken)"
            )
        batch_end = offset + 12 + length
        if length < BATCH_OVERHEAD - 12 or batch_end > end:
            raise RecordsError(CORRUPT_MESSAGE, f"a record batch of length {length} does not fit the request")
        if crc32c.crc32c(data[offset + _CRC_FROM : batch_end]) != crc:
            raise RecordsError(CORRUPT_MESSAGE, "a record batch's CRC does not match its bytes")
        batches.append(_read_batch(data, offset, batch_end, max_message_bytes, max_plain_bytes))
        offset = batch_end
    if not batches:
        raise RecordsError(CORRUPT_MESSAGE, "no record batch")
    return batches


def _read_batch(data: bytes, offset: int, end: int, max_message_bytes: int, max_plain_bytes: int) -> Batch:
    attributes, _last_delta, _t0, _tmax, producer_id, epoch, base_sequence, count = _BATCH_REST.unpack_from(
        data, _ATTRIBUTES_AT + offset
    )
    if attributes & (TRANSACTIONAL | CONTROL):
        raise RecordsError(INVALID_RECORD, "transactional and control batches are not taken")
    if count < 1:
        raise RecordsError(INVALID_RECORD, f"a record batch of {count} records")
    codec = attributes & CODEC_MASK
    body = data[offset + BATCH_OVERHEAD : end]
    if codec:
        body = decompress(codec, body, max_plain_bytes)
    elif len(body) > max_plain_bytes:
        raise RecordsError(MESSAGE_TOO_LARGE, f"a record batch of {len(body)} bytes")
    keys, values, headers, as_stored = _read_records(body, count, max_message_bytes)
    return Batch(producer_id, epoch, base_sequence, keys, values, headers, body if as_stored else None)


def _varint(buf: bytes, at: int) -> tuple:
    """A zigzag varint (records' signed varints and varlongs) and where it ends."""
    value = shift = 0
    while True:
        byte = buf[at]  # IndexError past the end: the caller's RecordsError
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), at
        shift += 7
        if shift > 63:
            raise RecordsError(CORRUPT_MESSAGE, "a varint of more than 10 bytes")


# A one-byte zigzag varint's value, by the byte (the usual deltas, counts and short lengths).
_ONE_BYTE = [(b >> 1) ^ -(b & 1) for b in range(128)]


def _read_records(body: bytes, count: int, max_message_bytes: int) -> tuple:
    """Keys, values and headers of `count` records, and whether the records read back
    from the stored entry would be these bytes' records (records_as_stored): offset
    deltas 0, 1, 2..., no empty key, no null value, headers of distinct names without
    null values. One- and two-byte varints read inline (a record costs a few
    microseconds of Python: this is the produce path's loop)."""
    as_stored = True
    keys = []
    values = []
    headers = []
    at = 0
    size = len(body)
    one = _ONE_BYTE
    deltas = _ZIGZAG
    limit = max_message_bytes
    try:
        for n in range(count):
            b = body[at]
            if b < 0x80:
                length = one[b]
                at += 1
            elif body[at + 1] < 0x80:  # (two bytes: a record of 64 to 8191 bytes)
                v = (b & 0x7F) | (body[at + 1] << 7)
                length = (v >> 1) ^ -(v & 1)
                at += 2
            else:
                length, at = _varint(body, at)
            record_end = at + length
            if length < 6 or record_end > size:
                raise RecordsError(CORRUPT_MESSAGE, f"a record of length {length} does not fit its batch")
            at += 1  # attributes
            while body[at] & 0x80:  # timestamp delta (the hub keeps its own time)
                at += 1
            at += 1
            # The offset delta: n's varint, as producers write it (records are taken in
            # their order; any other delta is read past and the records not kept as sent).
            delta = deltas[n] if n < _TABLE else b""
            if delta and body.startswith(delta, at):
                at += len(delta)
            else:
                delta, at = _varint(body, at)
                as_stored = as_stored and delta == n
            b = body[at]
            if b < 0x80:
                key_length = one[b]
                at += 1
            else:
                key_length, at = _varint(body, at)
            if key_length > 0:
                key = body[at : at + key_length]
                at += key_length
            elif key_length < -1:
                raise RecordsError(CORRUPT_MESSAGE, "a record's key has a negative length")
            else:
                key = None
                if key_length == 0:  # (stored as no key: read back null)
                    as_stored = False
            b = body[at]
            if b < 0x80:
                value_length = one[b]
                at += 1
            elif body[at + 1] < 0x80:
                v = (b & 0x7F) | (body[at + 1] << 7)
                value_length = (v >> 1) ^ -(v & 1)
                at += 2
            else:
                value_length, at = _varint(body, at)
            if value_length > 0:
                value = body[at : at + value_length]
                at += value_length
            elif value_length < -1:
                raise RecordsError(CORRUPT_MESSAGE, "a record's value has a negative length")
            else:
                value = b""
                if value_length:  # (null: stored empty, read back empty but in a compacted topic)
                    as_stored = False
            if at >= record_end:
                raise RecordsError(CORRUPT_MESSAGE, "a record's fields run past its length")
            b = body[at]
            at += 1
            if b == 0:
                record_headers = None
            else:
                at -= 1
                record_headers, at, exact = _read_headers(body, at, record_end, length)
                if not exact:
                    as_stored = False
            if at != record_end:
                raise RecordsError(CORRUPT_MESSAGE, "a record's length does not match its fields")
            if length > limit and len(value) + (key_length if key_length > 0 else 0) > limit:
                raise RecordsError(MESSAGE_TOO_LARGE, f"a record over max_message_bytes ({limit})")
            keys.append(key)
            values.append(value)
            headers.append(record_headers)
    except IndexError:
        raise RecordsError(CORRUPT_MESSAGE, "a record runs past its batch") from None
    except UnicodeDecodeError:
        raise RecordsError(CORRUPT_MESSAGE, "a record header's key is not UTF-8") from None
    if at != size:
        raise RecordsError(CORRUPT_MESSAGE, f"{size - at} bytes follow a batch's last record")
    return keys, values, headers, as_stored


def _read_headers(body: bytes, at: int, record_end: int, length: int) -> tuple:
    header_count, at = _varint(body, at)
    if header_count < 0 or header_count > length:
        raise RecordsError(CORRUPT_MESSAGE, f"a record with {header_count} headers")
    record_headers = {}
    exact = True  # (no null value, no name twice: the properties give these headers back)
    for _ in range(header_count):
        name_length, at = _varint(body, at)
        if name_length < 0 or at + name_length > record_end:
            raise RecordsError(CORRUPT_MESSAGE, "a record header's key does not fit the record")
        name = body[at : at + name_length].decode("utf-8")
        at += name_length
        header_length, at = _varint(body, at)
        if header_length < -1 or at + header_length > record_end:
            raise RecordsError(CORRUPT_MESSAGE, "a record header's value does not fit the record")
        if header_length < 0 or name in record_headers:
            exact = False
        record_headers[name] = body[at : at + header_length] if header_length > 0 else b""
        at += max(header_length, 0)
    return record_headers, at, exact


def decompress(codec: int, frame: bytes, limit: int) -> bytes:
    """A batch's records decompressed, never more than `limit` bytes made (RecordsError:
    MESSAGE_TOO_LARGE past it, CORRUPT_MESSAGE for a frame that does not decompress)."""
    try:
        if codec == 1:
            inflater = zlib.decompressobj(47)  # gzip or zlib header
            plain = inflater.decompress(frame, limit + 1)
            if not inflater.eof and len(plain) <= limit:
                raise RecordsError(CORRUPT_MESSAGE, "a gzip frame cut short")
        elif codec == 2:
            plain = _snappy(frame, limit)
        elif codec == 3:
            import lz4.frame

            inflater = lz4.frame.LZ4FrameDecompressor()
            plain = inflater.decompress(frame, max_length=limit + 1)
            if not inflater.eof and len(plain) <= limit:
                raise RecordsError(CORRUPT_MESSAGE, "an lz4 frame cut short")
        elif codec == 4:
            import zstandard

            reader = zstandard.ZstdDecompressor().stream_reader(frame)
            plain = reader.read(limit + 1)
        else:
            raise RecordsError(UNSUPPORTED_COMPRESSION_TYPE, f"compression codec {codec}")
    except RecordsError:
        raise
    except Exception as e:  # each library's own error for a damaged frame
        raise RecordsError(
            CORRUPT_MESSAGE, f"a {CODECS[codec]} frame that does not decompress: {e}"
        ) from None
    if len(plain) > limit:
        raise RecordsError(MESSAGE_TOO_LARGE, f"a record batch of more than {limit} bytes decompressed")
    return plain


def _snappy(frame: bytes, limit: int) -> bytes:
    """Raw snappy (librdkafka) or the xerial framing the Java client writes: blocks of
    u32 length and raw snappy, behind a 16-byte header."""
    import cramjam

    if frame.startswith(_XERIAL_MAGIC):
        parts = []
        total = 0
        at = 16
        while at < len(frame):
            if at + 4 > len(frame):
                raise RecordsError(CORRUPT_MESSAGE, "a snappy block cut short")
            (size,) = struct.unpack_from("!I", frame, at)
            at += 4
            block = frame[at : at + size]
            if len(block) != size:
                raise RecordsError(CORRUPT_MESSAGE, "a snappy block cut short")
            total += _snappy_length(block)
            if total > limit:
                raise RecordsError(
                    MESSAGE_TOO_LARGE, f"a record batch of more than {limit} bytes decompressed"
                )
            parts.append(bytes(cramjam.snappy.decompress_raw(block)))
            at += size
        return b"".join(parts)
    if _snappy_length(frame) > limit:
        raise RecordsError(MESSAGE_TOO_LARGE, f"a record batch of more than {limit} bytes decompressed")
    return bytes(cramjam.snappy.decompress_raw(frame))


def _snappy_length(block: bytes) -> int:
    """The decompressed length a raw snappy block states (its leading varint)."""
    value = shift = 0
    for at in range(min(len(block), 5)):
        byte = block[at]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
        shift += 7
    raise RecordsError(CORRUPT_MESSAGE, "a snappy block without its length")


# -- fetch: stored entries as record batches -----------------------------------------------


def _zigzag(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# Varints of 0 .. _TABLE - 1: offset deltas, lengths and record sizes, looked up.
_TABLE = 1 << 14
_ZIGZAG = [_zigzag(i) for i in range(_TABLE)]
_NULL = _zigzag(-1)


def _varbytes(value) -> bytes:
    n = len(value)
    return (_ZIGZAG[n] if n < _TABLE else _zigzag(n)) + value


def _header_value(value) -> bytes:
    """A typed property as a Kafka header's bytes: bytes as they are, str as UTF-8, the
    other types as their text (true/false, 12, 1.5)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, bool):
        return b"true" if value else b"false"
    return str(value).encode("utf-8")


# A plain record's bytes after its size and before its value's length: attributes and
# timestamp delta (0, 0), the offset delta, a null key; by the offset delta.
_PLAIN_HEAD = [b"\0\0" + delta + _NULL for delta in _ZIGZAG]
# A plain record's bytes besides its value, at most: three varints of up to 5 bytes
# (size, offset delta, value length) and 4 bytes (attributes, timestamp, key, headers).
_MOST_PLAIN_FRAMING = 19


def records_as_stored(first_seq: int, publish_time_us: int, count: int, records: bytes) -> bytes:
    """The record batch of an entry whose messages a producer sent as `records` (a Batch's
    records: what the entry's messages read back as, record for record): the records as
    they came, behind the header entry_batch writes. Log-append time makes every record's
    timestamp the batch's (a Kafka broker with LogAppendTime leaves records' deltas as
    they are too); the CRC runs on from the header over the records, which are not copied
    but once, into the batch."""
    time_ms = publish_time_us // 1000
    rest = _BATCH_REST.pack(TIMESTAMP_LOG_APPEND, count - 1, time_ms, time_ms, -1, -1, -1, count)
    crc = crc32c.crc32c(records, crc32c.crc32c(rest))
    return b"".join((_BATCH_HEAD.pack(first_seq - 1, len(rest) + len(records) + 9, 0, 2, crc), rest, records))


def entry_batch(data, from_seq: int, compacted: bool, max_bytes: int | None = None) -> tuple:
    """(record batch, whole) of a stored entry's messages from `from_seq` on (none
    before): offsets seq-id - 1, timestamps the entry's publish time (log-append time).
    With `max_bytes` the batch holds only the records that fit in it (always the first):
    `whole` says whether it holds every message to the entry's end. In a compacted topic
    a message without a payload is a tombstone: a null value."""
    header = decode_entry_header(data)
    message_set, offset = plain_message_set(data, header.body_offset)
    if header.sparse:  # (its messages are the last of its seq-ids: first_seq is theirs)
        header = message_part(header, message_set_count(message_set, offset), 0, None)[0]
    layout = parse_message_set(message_set, offset)
    first = header.first_seq
    start = max(from_seq - first, 0)
    count = layout.count - start
    plain = layout.property_offsets is None and layout.key_offsets is None and not compacted
    bounds = layout.payload_offsets
    room = None if max_bytes is None else max_bytes - BATCH_OVERHEAD
    if room is not None and plain and bounds[-1] - bounds[start] + _MOST_PLAIN_FRAMING * count <= room:
        room = None  # (every record fits: no size is summed)
    if not plain:
        properties, keys = properties_and_keys(message_set, offset, start=start, layout=layout)
    view = message_set if isinstance(message_set, bytes) else bytes(message_set)
    table = _ZIGZAG
    records = []
    append = records.append
    taken = count
    total = 0
    if plain:
        # The usual entry: payloads alone. A record is its size, the head by its offset
        # delta, the value's length, the value and no headers: pieces appended to one
        # list, joined once (no bytes made per record but the payload's slice).
        heads = _PLAIN_HEAD
        for n in range(count):
            i = start + n
            low, high = bounds[i], bounds[i + 1]
            length = high - low
            head = heads[n] if n < _TABLE else b"\0\0" + _zigzag(n) + _NULL
            prefix = table[length] if length < _TABLE else _zigzag(length)
            size = len(head) + len(prefix) + length + 1
            size_bytes = table[size] if size < _TABLE else _zigzag(size)
            if room is not None:
                total += len(size_bytes) + size
                if total > room and n:
                    taken = n
                    break
            append(size_bytes)
            append(head)
            append(prefix)
            append(view[low:high])
            append(b"\0")
    else:
        for n in range(count):
            i = start + n
            payload = view[bounds[i] : bounds[i + 1]]
            key = keys[n]
            parts = [b"\0\0", table[n] if n < _TABLE else _zigzag(n)]
            parts.append(_NULL if key is None else _varbytes(key))
            parts.append(_NULL if compacted and not payload and key is not None else _varbytes(payload))
            props = properties[n]
            if props:
                parts.append(_zigzag(len(props)))
                for name, value in props.items():
                    parts.append(_varbytes(name.encode("utf-8")))
                    parts.append(_varbytes(_header_value(value)))
            else:
                parts.append(b"\0")
            record = b"".join(parts)
            size = len(record)
            size_bytes = table[size] if size < _TABLE else _zigzag(size)
            if room is not None:
                total += len(size_bytes) + size
                if total > room and n:
                    taken = n
                    break
            append(size_bytes)
            append(record)
    time_ms = header.publish_time_us // 1000
    rest = _BATCH_REST.pack(TIMESTAMP_LOG_APPEND, taken - 1, time_ms, time_ms, -1, -1, -1, taken) + b"".join(
        records
    )
    batch = _BATCH_HEAD.pack(first - 1 + start, len(rest) + 9, 0, 2, crc32c.crc32c(rest)) + rest
    return batch, taken == count
