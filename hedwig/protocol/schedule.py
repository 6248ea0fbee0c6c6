"""Delayed delivery and expiry: two reserved message properties, and the schedule of an entry.

A message to be delivered later carries the typed int property `hedwig.deliver_at`
(milliseconds since the epoch, the absolute time: a relayed copy, a read after a restart
and every subscriber agree on it); a message that expires carries `hedwig.expire_at`
(the same unit). Both are ordinary properties of the message set (messageset.py): a
hub or client of before them stores, relays and delivers them unchanged and an old
subscriber sees two more properties, so the wire format needs no new bit. The client
turns `deliver_after` / `deliver_at` / `ttl` into them (`scheduled_properties`), with its
own clock: as Pulsar's deliverAfter, the time is the publisher's.

The hub reads them per entry, not per message, and only for entries that hold one
(`EntrySchedule.of`: a set without properties is passed at its flags byte; in one with
properties the properties alone are searched for "hedwig." at C speed, decompressed
first when compressed; once per cached entry).
"""

from array import array

from hedwig.protocol.compression import plain_message_set
from hedwig.protocol.entry import decode_entry_header, held_messages, message_part
from hedwig.protocol.messageset import (
    FLAG_PROPERTIES,
    length_arrays,
    message_set_count,
    parse_message_set,
    properties_and_keys,
    read_u32_array,
)

DELIVER_AT = "hedwig.deliver_at"
EXPIRE_AT = "hedwig.expire_at"
_NAMES = (DELIVER_AT, EXPIRE_AT)
_RESERVED = b"hedwig."
_SET_HEADER_SIZE = 6  # u8 version, u8 flags, u32 count (messageset.py)


def scheduled_properties(properties, now: float, deliver_after=None, deliver_at=None, ttl=None):
    """`properties` (None or a mapping) with the reserved properties of a publish's
    `deliver_after` (seconds from `now`), `deliver_at` (seconds since the epoch) and
    `ttl` (seconds from `now`): the same mapping when none is given."""
    if deliver_after is None and deliver_at is None and ttl is None:
        return properties
    if deliver_after is not None and deliver_at is not None:
        raise ValueError("give deliver_after or deliver_at, not both")
    scheduled = dict(properties or {})
    if deliver_after is not None:
        if deliver_after < 0:
            raise ValueError(f"deliver_after is a number of seconds >= 0, not {deliver_after!r}")
        scheduled[DELIVER_AT] = int((now + deliver_after) * 1000)
    elif deliver_at is not None:
        scheduled[DELIVER_AT] = int(deliver_at * 1000)
    if ttl is not None:
        if ttl <= 0:
            raise ValueError(f"ttl is a number of seconds > 0, not {ttl!r}")
        scheduled[EXPIRE_AT] = int((now + ttl) * 1000)
    return scheduled


# What run_at says of the messages from an offset: deliver them, let them pass (expired),
# or wait (their time is later).
DUE = "due"
EXPIRED = "expired"
LATER = "later"
_NEVER = 2**63


class EntrySchedule:
    """The times of an entry's messages, by offset from its first seq-id: `deliver_at` and
    `expire_at` (arrays of milliseconds, 0 for none). Made only for an entry that holds
    either property; `of` gives None for every other."""

    __slots__ = ("deliver_at", "expire_at", "latest", "soonest_expiry")

    def __init__(self, deliver_at: array, expire_at: array):
        self.deliver_at = deliver_at
        self.expire_at = expire_at
        self.latest = max(deliver_at, default=0)
        self.soonest_expiry = min((at for at in expire_at if at), default=_NEVER)

    def run_at(self, start: int, stop: int, now_ms: int, default_expiry: int = 0) -> tuple:
        """(what, end, deliver_at) of the run of messages [start, end) of [start, stop)
        that are alike at `now_ms`: DUE (to deliver), EXPIRED (their TTL passed: not to
        deliver) or LATER (delayed to `deliver_at`, all of that one time).
        `default_expiry`: the expiry of a message without its own (0: none)."""
        soonest = min(self.soonest_expiry, default_expiry) if default_expiry else self.soonest_expiry
        if self.latest <= now_ms and soonest > now_ms:
            return DUE, stop, 0
        deliver_at = self.deliver_at
        expire_at = self.expire_at

        def what(i):
            if 0 < (expire_at[i] or default_expiry) <= now_ms:
                return EXPIRED
            return LATER if deliver_at[i] > now_ms else DUE

        first = what(start)
        at = deliver_at[start]
        end = start + 1
        while end < stop and what(end) is first and (first is not LATER or deliver_at[end] == at):
            end += 1
        return first, end, at

    @classmethod
    def of(cls, data):
        """The schedule of entry bytes `data`, or None when no message has a time."""
        header = decode_entry_header(data)
        if len(data) <= header.body_offset + 1 or not data[header.body_offset + 1] & FLAG_PROPERTIES:
            return None  # (no properties: the usual set costs no search, a compressed one no decompression)
        buf, offset = plain_message_set(data, header.body_offset)
        if not isinstance(buf, bytes):
            buf = bytes(buf)
        if not _names_in_properties(buf, offset):
            return None
        layout = parse_message_set(buf, offset)
        properties, _keys = properties_and_keys(buf, offset, _NAMES, layout=layout)
        gap = 0
        if header.sparse:
            gap = message_part(header, held_messages(data, header), 0, None)[0].first_seq - header.first_seq
        deliver_at = array("q", bytes(8 * gap))
        expire_at = array("q", bytes(8 * gap))
        for found in properties:
            deliver_at.append(_millis(found.get(DELIVER_AT)))
            expire_at.append(_millis(found.get(EXPIRE_AT)))
        if not any(deliver_at) and not any(expire_at):
            return None
        return cls(deliver_at, expire_at)


def _names_in_properties(buf: bytes, offset: int) -> bool:
    """Whether the properties of the plain set at `offset` hold "hedwig." anywhere: one
    search of the properties alone, found from two sums of the length arrays (C speed)."""
    flags = buf[offset + 1]
    count = message_set_count(buf, offset)
    lengths_at = offset + _SET_HEADER_SIZE
    payload_bytes = sum(read_u32_array(buf, lengths_at, count))
    property_bytes = sum(read_u32_array(buf, lengths_at + 4 * count, count))
    start = lengths_at + 4 * count * length_arrays(flags) + payload_bytes
    return buf.find(_RESERVED, start, start + property_bytes) >= 0


def _millis(value) -> int:
    """A reserved property's value as milliseconds (0: none, or not an int: a publisher
    that is not hedwig's may send anything, and a wrong type is no time)."""
    if value.__class__ is int and 0 < value < 2**63:
        return value
    return 0
