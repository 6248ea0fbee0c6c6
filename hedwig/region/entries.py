"""Stored entries as relays see them: where an entry came from, and a tail of its messages.

Relays work per entry. The filter that keeps an entry from going back to the neighbour it
came from reads one header field (`via`) in place; cutting off the head of an entry that
straddles what a region already holds builds one new message set from slices of the old
one's length arrays and bytes, with no Python loop over its messages.
"""

import struct

from hedwig.protocol.compression import (
    compress_message_set,
    decompress_message_set,
    set_codec,
    validate_published_set,
)
from hedwig.protocol.entry import decode_entry_header
from hedwig.protocol.messageset import MessageSetError, length_arrays, read_u32_array
from hedwig.protocol.status import Status
from hedwig.region.settings import is_region_name

# The entry header up to the origin region's length byte (hedwig.protocol.entry).
_ORIGIN_LENGTH_AT = 30
_SET_HEADER = struct.Struct("!BBI")
SEQ_LIMIT = 1 << 64  # seq-ids are u64 and never 0


def via_filter(region: str):
    """A predicate of LogEntries relayed from `region` (their header's via is that name):
    the entries a relay subscriber for `region` must not be sent back."""
    name = region.encode("utf-8")
    size = len(name)

    def came_from(entry) -> bool:
        data = entry.data
        at = _ORIGIN_LENGTH_AT + 1 + data[_ORIGIN_LENGTH_AT]
        return data[at] == size and data[at + 1 : at + 1 + size] == name

    return came_from


def entry_via(data) -> str:
    """The via region of a stored entry ("" when published where it is stored)."""
    return decode_entry_header(data).via


def slice_message_set(buf, start: int, stop: int) -> bytes:
    """Messages [start, stop) of a (validated) message set, as a message set of their own.

    A compressed set (hedwig/protocol/compression.py) cannot be cut where it lies: its
    tail is cut from the plain set and compressed again with the same codec, so what the
    region stores stays compressed. (Only a relay re-sending an entry that straddles what
    the region holds does this; a whole entry is relayed as it is.)"""
    codec = set_codec(buf)
    if codec:
        _, _, count = _SET_HEADER.unpack_from(buf, 0)
        if start == 0 and stop == count:
            return bytes(buf)
        return compress_message_set(slice_message_set(decompress_message_set(buf), start, stop), codec)
    version, flags, count = _SET_HEADER.unpack_from(buf, 0)
    if not 0 <= start < stop <= count:
        raise ValueError(f"messages [{start}, {stop}) are not within a set of {count}")
    if start == 0 and stop == count:
        return bytes(buf)
    # The set's length arrays (payloads, then properties and keys if it has them) and
    # the sections of bytes they measure, in the same order: each cut alike.
    arrays = [
        read_u32_array(buf, _SET_HEADER.size + 4 * count * i, count) for i in range(length_arrays(flags))
    ]
    head = [_SET_HEADER.pack(version, flags, stop - start)]
    sections = []
    section_at = _SET_HEADER.size + 4 * count * len(arrays)
    for i, lengths in enumerate(arrays):
        array_at = _SET_HEADER.size + 4 * count * i
        head.append(buf[array_at + 4 * start : array_at + 4 * stop])
        kept_at = section_at + sum(lengths[:start])
        sections.append(buf[kept_at : kept_at + sum(lengths[start:stop])])
        section_at += sum(lengths)
    return b"".join(head + sections)


def _malformed(reason: str) -> MessageSetError:
    return MessageSetError(Status.MALFORMED_REQUEST, reason)


class RelayedPart:
    """The part of a relayed entry a region appends: messages [start, stop) of it (indexes
    of its message set), their origin and origin seq-ids. Built once per entry from its
    header and the seq-ids [start, stop) relayed (offsets from its first seq-id).

    A compacted topic's sparse entry (hedwig.protocol.entry) covers more seq-ids than it
    holds messages: the seq-ids relayed are mapped to the messages among them, each with
    its own origin seq-id, and a part of gaps alone holds none (`empty`). The region
    appends them as a dense entry of its own seq-ids; their origin seq-ids keep the gaps.

    Building one checks every field of the entry, and its message set completely, raising
    MessageSetError (nothing else) for any that is out of range: an entry comes from
    another hub, and what is queued or stored here must never fail later, where nothing
    could answer for it (a stuck inbox, a topic no reader can read)."""

    __slots__ = ("body_offset", "count", "origin", "origin_first", "start", "stop")

    def __init__(
        self,
        data,
        start: int,
        stop: int,
        max_message_bytes: int | None = None,
        max_plain_bytes: int | None = None,
    ):
        # MessageSetError: truncated, not UTF-8, reserved flags. (An idempotent producer's
        # fields are its origin region's: stepped over, the entry stored without them.)
        header = decode_entry_header(data)
        if not 0 <= start < stop <= header.count:
            raise _malformed(f"messages [{start}, {stop}) are not within an entry of {header.count}")
        if not header.origin_region:
            raise _malformed("a relayed entry names no origin region")
        if not is_region_name(header.origin_region):
            raise _malformed(f"a relayed entry's origin {header.origin_region[:60]!r} is not a region name")
        if header.via and not is_region_name(header.via):
            raise _malformed(f"a relayed entry's via {header.via[:60]!r} is not a region name")
        count = validate_published_set(data, header.body_offset, max_message_bytes, max_plain_bytes)
        if header.sparse:
            if not 0 < count <= header.count:
                raise _malformed(f"a sparse entry of {header.count} seq-ids holds {count} messages")
        elif count != header.count:
            raise _malformed(f"the entry header counts {header.count} messages, its message set {count}")
        for name, first, size in (
            ("seq-id", header.first_seq, header.count),
            ("origin seq-id", header.origin_seq, count),
        ):
            if not 1 <= first <= SEQ_LIMIT - size:
                raise _malformed(
                    f"a relayed entry's {name}s {first}..{first + size - 1} are not 1..{SEQ_LIMIT - 1}"
                )
        gap = header.count - count  # (0 unless sparse: seq-ids before its first message)
        self.origin = header.origin_region
        self.count = count
        self.body_offset = header.body_offset
        self.start = max(0, start - gap)
        self.stop = max(0, stop - gap)
        self.origin_first = header.origin_seq + self.start

    @property
    def empty(self) -> bool:
        """The seq-ids relayed are gaps of a sparse entry only: nothing to append."""
        return self.stop <= self.start

    @property
    def origin_last(self) -> int:
        return self.origin_first + self.stop - self.start - 1

    def drop_through(self, origin_seq: int) -> None:
        """Cut the messages whose origin seq-id is at or below `origin_seq` (held already)."""
        cut = origin_seq - self.origin_first + 1
        if cut > 0:
            self.start += cut
            self.origin_first += cut
