"""Entries: a message set as the hub stores and delivers it, behind a small header.

The hub prefixes the publisher's message set with this header once, at publish; the
ledger stores the result and every subscriber receives those same bytes:

    u8  version (1)
    u8  flags              bit 0 (ENTRY_FLAG_PRODUCER): the producer fields below are
                           present; bit 1 (ENTRY_FLAG_SPARSE): written by compaction,
                           the message set holds fewer messages than `count`: they are
                           the last seq-ids of first_seq..first_seq + count - 1, the
                           seq-ids before them were removed; every other bit is 0
    u64 first_seq          local seq-id of the first message
    u32 count              messages in the set (so last_seq = first_seq + count - 1)
    u64 publish_time_us    when the hub accepted the publish, microseconds since the epoch
    u64 origin_seq         origin seq-id of the first message (= first_seq when local and
                           dense; in a sparse entry, of the first message it holds)
    u8  origin_region length, then the region name in utf-8
    u8  via length, then the neighbour region the entry was relayed from (empty when
        published here): a relay forwards to a neighbour only entries not via it
    [u64 producer_id, u32 sequence]   only with ENTRY_FLAG_PRODUCER: the idempotent
        producer (hedwig.hub.producer_state) that published the set and its number, written
        atomically with the entry so that a hub recovering the log knows what it acknowledged
    the message set (see messageset.py)

A compacted topic's sealed ledgers are rewritten (hedwig/topiclog/compaction.py) with
sparse entries: each covers its seq-ids densely, so reads, the cache and delivery find
an entry for every seq-id as before, and only a decoder learns that the first
(count - messages) of them are gaps; a position inside a gap so moves to the entry's
first message, the next retained one. A sparse entry always ends with a message. Its
origin_seq is its first message's own (the gaps of a relayed copy's seq-ids are not its
origin's), and its messages' origin seq-ids are consecutive from there.

An entry always holds messages of one origin region with consecutive origin seq-ids:
relays republish whole entries (or a tail of one), so that stays true across regions.
"""

import struct
from itertools import accumulate
from typing import NamedTuple

from hedwig.protocol.compression import plain_message_set
from hedwig.protocol.message import NO_PROPERTIES, KeyedMessage, Message
from hedwig.protocol.messageset import (
    ONE_MESSAGE_HEADER,
    SET_VERSION,
    MessageSetError,
    decode_properties,
    decode_typed_properties,
    extended_set_layout,
    length_arrays,
    message_set_count,
    parse_message_set,
    plain_set_layout,
    read_extended,
    read_u32_array,
)
from hedwig.protocol.status import Status

ENTRY_VERSION = 1
_ENTRY_HEADER = struct.Struct("!BBQIQQB")
ENTRY_FLAG_PRODUCER = 0x01
ENTRY_FLAG_SPARSE = 0x02
_ENTRY_FLAGS = ENTRY_FLAG_PRODUCER | ENTRY_FLAG_SPARSE
_PRODUCER = struct.Struct("!QI")  # producer id, sequence
# The header's size without its two names: the struct plus the via length byte.
ENTRY_HEADER_FIXED_SIZE = _ENTRY_HEADER.size + 1


class EntryHeader(NamedTuple):
    first_seq: int
    count: int
    publish_time_us: int
    origin_seq: int
    origin_region: str
    body_offset: int  # where the message set begins
    via: str = ""  # the neighbour region this entry was relayed from; "" when published here
    producer_id: int = 0  # the idempotent producer that published it (0: none)
    sequence: int = 0  # that producer's number for the set
    sparse: bool = False  # compacted: the set holds the last messages of count seq-ids only

    @property
    def last_seq(self) -> int:
        return self.first_seq + self.count - 1


def encode_entry_header(
    first_seq: int,
    count: int,
    publish_time_us: int,
    origin_region: bytes,
    origin_seq: int,
    via: bytes = b"",
    producer=None,
    sparse: bool = False,
) -> bytes:
    """`producer`: (producer id, sequence) of an idempotent publish, or None; `sparse`:
    the set holds only the last messages of the `count` seq-ids (compaction)."""
    if len(origin_region) > 255 or len(via) > 255:
        raise ValueError("region names are at most 255 bytes")
    flags = (0 if producer is None else ENTRY_FLAG_PRODUCER) | (ENTRY_FLAG_SPARSE if sparse else 0)
    parts = [
        _ENTRY_HEADER.pack(
            ENTRY_VERSION, flags, first_seq, count, publish_time_us, origin_seq, len(origin_region)
        ),
        origin_region,
        bytes((len(via),)),
        via,
    ]
    if producer is not None:
        parts.append(_PRODUCER.pack(*producer))
    return b"".join(parts)


class LocalEntryHeaders:
    """The headers of entries published in `origin_region` (no via, no producer: every
    client's publish), each packed in one call of a layout made once for the region;
    the same bytes as encode_entry_header(first_seq, count, time, region, first_seq)."""

    __slots__ = ("_length", "_pack", "_region")

    def __init__(self, origin_region: bytes):
        if len(origin_region) > 255:
            raise ValueError("region names are at most 255 bytes")
        self._region = origin_region
        self._length = len(origin_region)
        self._pack = struct.Struct(f"{_ENTRY_HEADER.format}{len(origin_region)}sB").pack

    def header(self, first_seq: int, count: int, publish_time_us: int) -> bytes:
        return self._pack(
            ENTRY_VERSION, 0, first_seq, count, publish_time_us, first_seq, self._length, self._region, 0
        )


def decode_entry_header(buf, offset: int = 0) -> EntryHeader:
    if len(buf) - offset < _ENTRY_HEADER.size:
        raise MessageSetError(Status.MALFORMED_REQUEST, "entry shorter than its header")
    version, flags, first_seq, count, publish_time_us, origin_seq, region_len = _ENTRY_HEADER.unpack_from(
        buf, offset
    )
    if version != ENTRY_VERSION:
        raise MessageSetError(Status.MALFORMED_REQUEST, f"unknown entry version {version}")
    region_start = offset + _ENTRY_HEADER.size
    via_length_at = region_start + region_len
    if via_length_at >= len(buf):
        raise MessageSetError(Status.MALFORMED_REQUEST, "entry truncated in its origin region")
    via_start = via_length_at + 1
    body_offset = via_start + buf[via_length_at]
    if body_offset > len(buf):
        raise MessageSetError(Status.MALFORMED_REQUEST, "entry truncated in its via region")
    if flags & ~_ENTRY_FLAGS:
        raise MessageSetError(Status.MALFORMED_REQUEST, f"unknown entry flags {flags:#x}")
    via_end = body_offset
    producer_id = sequence = 0
    if flags & ENTRY_FLAG_PRODUCER:
        body_offset += _PRODUCER.size
        if body_offset > len(buf):
            raise MessageSetError(Status.MALFORMED_REQUEST, "entry truncated in its producer")
        producer_id, sequence = _PRODUCER.unpack_from(buf, via_end)
    try:
        origin_region = bytes(buf[region_start:via_length_at]).decode("utf-8")
        via = bytes(buf[via_start:via_end]).decode("utf-8") if via_end > via_start else ""
    except UnicodeDecodeError:
        # A relayed entry's header comes from another hub: a name that is not UTF-8 is a
        # malformed request (MessageSetError), never an error nothing expects.
        raise MessageSetError(Status.MALFORMED_REQUEST, "entry region names are not UTF-8") from None
    return EntryHeader(
        first_seq,
        count,
        publish_time_us,
        origin_seq,
        origin_region,
        body_offset,
        via,
        producer_id,
        sequence,
        bool(flags & ENTRY_FLAG_SPARSE),
    )


def message_part(header: EntryHeader, message_count: int, start: int, stop: int | None):
    """(header, start, stop) of a sparse entry's messages: its seq-ids [start, stop)
    (offsets from first_seq, as deliveries name them) as indexes of its messages, and a
    header whose first_seq and count are its messages' (as if the entry were dense; its
    origin_seq is the first message's already)."""
    gap = header.count - message_count
    if gap < 0:
        raise MessageSetError(
            Status.MALFORMED_REQUEST,
            f"a sparse entry of {header.count} seq-ids holds {message_count} messages",
        )
    dense = header._replace(
        first_seq=header.first_seq + gap,
        count=message_count,
        sparse=False,
    )
    return dense, max(0, start - gap), None if stop is None else max(0, stop - gap)


def held_messages(data, header: EntryHeader) -> int:
    """The messages an entry holds: its count, or a sparse entry's set's (read from the
    set's header alone, compressed or not)."""
    return message_set_count(data, header.body_offset) if header.sparse else header.count


def origin_last(data, header: EntryHeader) -> int:
    """The origin seq-id of an entry's last message."""
    return header.origin_seq + held_messages(data, header) - 1


def decode_entry(topic: str, buf, start: int = 0, stop: int | None = None, header=None, indexes=None):
    """Decode messages [start, stop) of an entry (indexes within the entry) as Messages.
    `header`: its decode_entry_header, when the caller has it already; `indexes`: only
    the messages of these indexes (ascending, within [start, stop): a SUBSET_DELIVERY's),
    never of a compacted entry."""
    if header is None:
        header = decode_entry_header(buf)
    body_offset = header.body_offset
    if indexes is not None:
        if header.sparse:
            raise MessageSetError(Status.MALFORMED_REQUEST, "a subset of a compacted entry")
        message_set, offset = plain_message_set(buf, body_offset)
        return read_extended(_decode_extended, topic, header, message_set, offset, start, stop, indexes)
    if header.sparse:  # (compacted: seq-ids [start, stop) name messages at the set's end)
        message_set, offset = plain_message_set(buf, body_offset)
        header, start, stop = message_part(header, message_set_count(message_set, offset), start, stop)
        if stop is not None and start >= stop:
            return []
    if len(buf) - body_offset >= ONE_MESSAGE_HEADER.size:  # one plain message: one unpack
        version, flags, count, length = ONE_MESSAGE_HEADER.unpack_from(buf, body_offset)
        if count == 1 and version == SET_VERSION and not flags and start == 0 and stop != 0:
            payload_at = body_offset + ONE_MESSAGE_HEADER.size
            if payload_at + length != len(buf):
                raise MessageSetError(Status.MALFORMED_REQUEST, "message set lengths do not match its size")
            view = buf if isinstance(buf, bytes) else bytes(buf)
            first_seq = header.first_seq
            return [
                Message(
                    topic,
                    first_seq,
                    view[payload_at:],
                    header.publish_time_us,
                    {},
                    header.origin_region,
                    header.origin_seq,
                )
            ]
    # A compressed set (compression.py) is decompressed here, once per entry decoded.
    message_set, offset = plain_message_set(buf, body_offset)
    try:
        layout = plain_set_layout(message_set, offset)
    except KeyError:  # keys or typed properties
        return read_extended(_decode_extended, topic, header, message_set, offset, start, stop)
    if stop is None or stop > layout.count:
        stop = layout.count
    payload_offsets = layout.payload_offsets
    property_offsets = layout.property_offsets
    view = message_set if isinstance(message_set, bytes) else bytes(message_set)
    first_seq = header.first_seq
    origin_seq = header.origin_seq
    region = header.origin_region
    time_us = header.publish_time_us
    messages = []
    append = messages.append
    for i in range(start, stop):
        properties = (
            decode_properties(view[property_offsets[i] : property_offsets[i + 1]])
            if property_offsets is not None and property_offsets[i] != property_offsets[i + 1]
            else {}
        )
        append(
            Message(
                topic,
                first_seq + i,
                view[payload_offsets[i] : payload_offsets[i + 1]],
                time_us,
                properties,
                region,
                origin_seq + i,
            )
        )
    return messages


def _decode_extended(topic: str, header, message_set, offset: int, start: int, stop, indexes=None):
    """decode_entry of a set with keys or typed properties (or any set, of `indexes`):
    a KeyedMessage for each message with a key, a Message for each without."""
    layout = extended_set_layout(message_set, offset)
    if stop is None or stop > layout.count:
        stop = layout.count
    if indexes is not None and indexes and (indexes[0] < 0 or indexes[-1] >= layout.count):
        raise MessageSetError(
            Status.MALFORMED_REQUEST, f"a subset up to message {indexes[-1]} of an entry of {layout.count}"
        )
    payload_offsets = layout.payload_offsets
    property_offsets = layout.property_offsets
    key_offsets = layout.key_offsets
    decode = decode_typed_properties if layout.typed else decode_properties
    view = message_set if isinstance(message_set, bytes) else bytes(message_set)
    first_seq = header.first_seq
    origin_seq = header.origin_seq
    region = header.origin_region
    time_us = header.publish_time_us
    messages = []
    append = messages.append
    for i in range(start, stop) if indexes is None else indexes:
        properties = (
            decode(view[property_offsets[i] : property_offsets[i + 1]])
            if property_offsets is not None and property_offsets[i] != property_offsets[i + 1]
            else {}
        )
        payload = view[payload_offsets[i] : payload_offsets[i + 1]]
        if key_offsets is not None and key_offsets[i] != key_offsets[i + 1]:
            key = view[key_offsets[i] : key_offsets[i + 1]]
            append(
                KeyedMessage(topic, first_seq + i, payload, time_us, properties, region, origin_seq + i, key)
            )
        else:
            append(Message(topic, first_seq + i, payload, time_us, properties, region, origin_seq + i))
    return messages


# Origin region names as decoded, by their bytes: a subscriber sees a few regions, and
# the plain-entry path below then decodes none. Bounded: past it, names are decoded.
_REGION_NAMES: dict = {}
_REGION_NAMES_KEPT = 64
_REGION_LENGTH_AT = _ENTRY_HEADER.size - 1
_PLAIN_ENTRY_MIN = _ENTRY_HEADER.size + 1 + ONE_MESSAGE_HEADER.size
# A plain entry's fixed fields up to its payload lengths, by the length of its region's
# name (at most 255: as many layouts), read in one unpack: the version and flags as one
# field (flags 0), the seq-id, the count, the publish time and the origin seq-id, the
# region's name, then the via length (0), the set's version and flags (0: no
# properties, not compressed) as one field, and the set's count.
_PLAIN_LAYOUTS: dict = {}
_PLAIN_HEAD = ENTRY_VERSION << 8
_PLAIN_MIDDLE = bytes((0, SET_VERSION, 0))
_U32 = struct.Struct("!I")


def _plain_layout(region_length: int) -> struct.Struct:
    layout = _PLAIN_LAYOUTS[region_length] = struct.Struct(f"!HQIQQx{region_length}s3sI")
    return layout


def decode_plain_entry(topic: str, buf, start: int, stop: int):
    """Messages [start, stop) of an entry of plain messages (no properties, not
    compressed), published here or relayed without a via region and without an
    idempotent producer: every client's publish and publish_many without properties.
    One unpack for the header, one for the lengths of the messages, then the Messages,
    where decode_entry_header and decode_entry take a dozen calls. None for any other
    entry, or one whose lengths do not add up: decode_entry decodes it (or says what is
    wrong with it)."""
    size = len(buf)
    if size < _PLAIN_ENTRY_MIN or buf.__class__ is not bytes:  # (as every driver hands it)
        return None
    layout = _PLAIN_LAYOUTS.get(buf[_REGION_LENGTH_AT]) or _plain_layout(buf[_REGION_LENGTH_AT])
    lengths_at = layout.size
    if lengths_at + 4 > size:
        return None
    head, first_seq, count, time_us, origin_seq, region_bytes, middle, set_count = layout.unpack_from(buf)
    if head != _PLAIN_HEAD or middle != _PLAIN_MIDDLE or set_count != count or stop > count or start < 0:
        return None
    region = _REGION_NAMES.get(region_bytes)
    if region is None:
        try:
            region = region_bytes.decode("utf-8")
        except UnicodeDecodeError:
            return None  # (the general path refuses it, saying why)
        if len(_REGION_NAMES) < _REGION_NAMES_KEPT:
            _REGION_NAMES[region_bytes] = region
    if count == 1:  # (a single publish: its length in one unpack)
        payload_at = lengths_at + 4
        if payload_at + _U32.unpack_from(buf, lengths_at)[0] != size:
            return None
        if start >= stop:
            return []
        return [Message(topic, first_seq, buf[payload_at:], time_us, NO_PROPERTIES, region, origin_seq)]
    payload_at = lengths_at + 4 * count
    if payload_at > size:
        return None
    offsets = list(accumulate(read_u32_array(buf, lengths_at, count), initial=payload_at))
    if offsets[-1] != size:
        return None
    # Per message, only what is its own: its Message, its payload and its seq-id (one int
    # for both seq-ids of a local entry, where they are equal); the properties are the one
    # shared NO_PROPERTIES, and the offsets are walked in pairs without indexing.
    seqs = range(first_seq + start, first_seq + stop)
    starts, ends = offsets[start:stop], offsets[start + 1 : stop + 1]
    if origin_seq == first_seq:
        return [
            Message(topic, seq, buf[at:end], time_us, NO_PROPERTIES, region, seq)
            for seq, at, end in zip(seqs, starts, ends, strict=True)
        ]
    origin_seqs = range(origin_seq + start, origin_seq + stop)
    return [
        Message(topic, seq, buf[at:end], time_us, NO_PROPERTIES, region, origin)
        for seq, origin, at, end in zip(seqs, origin_seqs, starts, ends, strict=True)
    ]


def entry_messages(data):
    """(header, sparse, plain set, its offset, keys, which payloads are empty) of a stored
    entry, its messages read no further than their keys and payload lengths (what
    compaction and a table read of a compacted topic need); a sparse entry's header as if
    it were dense (first_seq and count its messages')."""
    header = decode_entry_header(data)
    message_set, offset = plain_message_set(data, header.body_offset)
    sparse = header.sparse
    if sparse:
        header = message_part(header, message_set_count(message_set, offset), 0, None)[0]
    layout = parse_message_set(message_set, offset)
    view = message_set if isinstance(message_set, bytes) else bytes(message_set)
    key_offsets = layout.key_offsets
    count = layout.count
    if key_offsets is None:
        keys = [None] * count
    else:
        keys = [view[key_offsets[i] : key_offsets[i + 1]] or None for i in range(count)]
    payloads = layout.payload_offsets
    empty = [payloads[i] == payloads[i + 1] for i in range(count)]
    return header, sparse, message_set, offset, keys, empty


class EntrySlices:
    """Entries of their own cut from one stored entry: messages [start, stop) of it
    behind a header of their own (first_seq, count and origin_seq theirs; the publish
    time, origin and via the entry's; no producer), their message set plain.

    What a filtered subscriber is sent of an entry it takes little of: a run of a few
    messages costs their own bytes, not the whole entry's again for each run. The entry
    is read once (decompressed, if it is, and its length arrays summed) however many
    runs are cut from it; each cut is a few slices, with no loop over its messages."""

    __slots__ = ("_arrays", "_body", "_flags", "_header", "_sections", "_version")

    def __init__(self, data, header=None):
        header = self._header = header or decode_entry_header(data)
        body, offset = plain_message_set(data, header.body_offset)
        self._version, self._flags, count = _SET_HEAD.unpack_from(body, offset)
        arrays_at = offset + _SET_HEAD.size
        self._arrays = []  # per length array: (where it lies, cumulative offsets of its section)
        section_at = arrays_at + 4 * count * length_arrays(self._flags)
        for i in range(length_arrays(self._flags)):
            lengths = read_u32_array(body, arrays_at + 4 * count * i, count)
            offsets = list(accumulate(lengths, initial=section_at))
            self._arrays.append((arrays_at + 4 * count * i, offsets))
            section_at = offsets[-1]
        self._body = body

    def cut(self, start: int, stop: int) -> bytes:
        """The entry of messages [start, stop) (indexes within this entry)."""
        header = self._header
        body = self._body
        head = [
            encode_entry_header(
                header.first_seq + start,
                stop - start,
                header.publish_time_us,
                header.origin_region.encode("utf-8"),
                header.origin_seq + start,
                header.via.encode("utf-8"),
            ),
            _SET_HEAD.pack(self._version, self._flags, stop - start),
        ]
        sections = []
        for array_at, offsets in self._arrays:
            head.append(body[array_at + 4 * start : array_at + 4 * stop])
            sections.append(body[offsets[start] : offsets[stop]])
        return b"".join(head + sections)


_SET_HEAD = struct.Struct("!BBI")
