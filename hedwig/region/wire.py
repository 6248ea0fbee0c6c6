"""Bodies of the region link ops (docs/protocol.md, "Region links"), and RESPONSE frames
read without the client's decoders (a link reads replies to ops clients never send).

    REGION_LINK request:   str8 child region   [str8 the child hub's host:port]
    REGION_LINK payload:   str8 region   u8 flags (bit 0: the path reaches a root; bit 1:
                           the parent region runs on several hubs)
                           u8 count      count x str8: the parent's path, itself first
    RELAY_PUBLISH request: str8 topic    u32 start   u32 stop   then a stored entry
    RELAY_PUBLISH payload: u64 first_seq   u64 last_seq   (0, 0: every message was held already)
    REGION_INTEREST body:  u8 kind       u32 count   count x (str8 topic, u64 since_us)
    TOPIC_OPTIONS request: str8 topic    u8 options (bit 0: compaction)
    TOPIC_OPTIONS payload: u8 options    (the parent's, once it took the child's)

All integers are big-endian; every decoder raises RequestRefused with the status to send
back (or to report) for a body that does not parse.
"""

import struct
from enum import IntEnum

from hedwig.protocol.framing import frame_header
from hedwig.protocol.messageset import MessageSetError
from hedwig.protocol.names import InvalidName, check_topic
from hedwig.protocol.ops import Op
from hedwig.protocol.requests import RequestRefused
from hedwig.protocol.status import Status
from hedwig.region.entries import RelayedPart

_U8 = struct.Struct("!B")
_U32 = struct.Struct("!I")
_RANGE = struct.Struct("!II")
_INTEREST_HEAD = struct.Struct("!BI")
_SINCE = struct.Struct("!Q")

PATH_COMPLETE = 0x01
SEVERAL_HUBS = 0x02  # the parent region runs on several hubs: link to each (LIST_HUBS)
COMPACTION = 0x01  # TOPIC_OPTIONS: the topic is compacted (CREATE_TOPIC's flag)
_KNOWN_OPTIONS = COMPACTION
# Topics per REGION_INTEREST frame: 255-byte names keep a frame well under 1 MiB.
INTEREST_TOPICS_PER_FRAME = 4000


class InterestKind(IntEnum):
    """What a REGION_INTEREST frame says about its topics (parent -> child). A wanted
    topic comes with the time (us, the parent's clock) since which the parent wants it;
    the others with 0."""

    WANT = 1  # snapshot: the parent wants these relayed up
    HELD = 2  # snapshot: the parent holds a relay subscription for the child on these
    END = 3  # the snapshot is complete: reconcile
    ADD = 4  # the parent now wants these too
    DROP = 5  # the parent no longer wants these


def _str8(text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > 255:
        raise ValueError(f"{raw[:40]!r}... is longer than 255 bytes")
    return _U8.pack(len(raw)) + raw


def _read_str8(body, offset: int, what: str) -> tuple[str, int]:
    if offset >= len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, f"body ends before the {what}")
    end = offset + 1 + body[offset]
    if end > len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, f"{what} runs past the end of the body")
    try:
        return bytes(body[offset + 1 : end]).decode("utf-8"), end
    except UnicodeDecodeError:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"{what} is not UTF-8") from None


def _read_topic(body, offset: int) -> tuple[str, int]:
    raw, offset = _read_str8(body, offset, "topic")
    try:
        return check_topic(raw), offset
    except InvalidName as e:
        raise RequestRefused(Status.INVALID_TOPIC, str(e)) from None


# -- REGION_LINK ---------------------------------------------------------------------------------


def encode_region_link(region: str, hub: str = "") -> bytes:
    """`hub`: the linking hub's own name ("host:port"), so that a parent tells the hubs of
    a child region of several hubs apart (empty: a child hub that does not say)."""
    return _str8(region) + (_str8(hub) if hub else b"")


def decode_region_link(body) -> tuple[str, str]:
    """(child region, its hub's name or "")."""
    region, offset = _read_str8(body, 0, "region")
    hub = ""
    if offset != len(body):
        hub, offset = _read_str8(body, offset, "hub name")
    if offset != len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, "REGION_LINK has bytes after the hub name")
    return region, hub


def encode_region_link_reply(
    region: str, path: list[str], complete: bool, several_hubs: bool = False
) -> bytes:
    if len(path) > 255:
        raise ValueError("a region path holds at most 255 regions")
    flags = (PATH_COMPLETE if complete else 0) | (SEVERAL_HUBS if several_hubs else 0)
    parts = [_str8(region), _U8.pack(flags), _U8.pack(len(path))]
    parts.extend(_str8(name) for name in path)
    return b"".join(parts)


def decode_region_link_reply(payload) -> tuple[str, list[str], bool]:
    """(the parent's region, its path to the root beginning with itself, complete)."""
    region, offset = _read_str8(payload, 0, "region")
    if offset + 2 > len(payload):
        raise RequestRefused(Status.MALFORMED_REQUEST, "REGION_LINK reply ends before its path")
    flags, count = payload[offset], payload[offset + 1]
    offset += 2
    path = []
    for _ in range(count):
        name, offset = _read_str8(payload, offset, "region path")
        path.append(name)
    if offset != len(payload):
        raise RequestRefused(Status.MALFORMED_REQUEST, "REGION_LINK reply has bytes after its path")
    return region, path, bool(flags & PATH_COMPLETE)


def region_link_reply_flags(payload) -> int:
    """The flags byte of a REGION_LINK reply decode_region_link_reply accepted."""
    return payload[1 + payload[0]]


# -- RELAY_PUBLISH -------------------------------------------------------------------------------


def relay_publish_parts(request_id: int, topic: str, start: int, stop: int, entry) -> list:
    """A RELAY_PUBLISH frame as chunks for writeSequence: the stored entry is not copied."""
    head = _str8(topic) + _RANGE.pack(start, stop)
    return [frame_header(Op.RELAY_PUBLISH, request_id, len(head) + len(entry)) + head, entry]


def decode_relay_publish(body, max_plain_bytes: int | None = None) -> tuple[str, int, int, memoryview]:
    """(topic, start, stop, entry): messages [start, stop) of the stored entry are relayed.

    Every field is checked here, the entry's header and message set too (RelayedPart):
    a request refused here never reaches the topic's inbox, so it breaks nothing there,
    and the link's later relays of the topic are stored and answered as usual."""
    topic, offset = _read_topic(body, 0)
    if offset + _RANGE.size > len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, "RELAY_PUBLISH ends before its message range")
    start, stop = _RANGE.unpack_from(body, offset)
    if not start < stop:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"RELAY_PUBLISH of an empty range [{start}, {stop})")
    entry = memoryview(body)[offset + _RANGE.size :]
    try:
        RelayedPart(entry, start, stop, None, max_plain_bytes)
    except MessageSetError as e:
        raise RequestRefused(e.status, f"RELAY_PUBLISH of a malformed entry: {e.reason}") from None
    return topic, start, stop, entry


# -- REGION_INTEREST -----------------------------------------------------------------------------


def interest_frames(kind: InterestKind, topics) -> list[bytes]:
    """REGION_INTEREST frames (request id 0) naming `topics` (names, or (name, since_us)
    pairs), several when they are many; one frame with no topic for END (or an empty
    snapshot part)."""
    items = [t if isinstance(t, tuple) else (t, 0) for t in topics]
    frames = []
    for first in range(0, max(1, len(items)), INTEREST_TOPICS_PER_FRAME):
        chunk = items[first : first + INTEREST_TOPICS_PER_FRAME]
        body = _INTEREST_HEAD.pack(kind, len(chunk)) + b"".join(_str8(t) + _SINCE.pack(s) for t, s in chunk)
        frames.append(frame_header(Op.REGION_INTEREST, 0, len(body)) + body)
    return frames


def decode_interest(body) -> tuple[InterestKind, list[tuple[str, int]]]:
    """(kind, [(topic, since_us)])."""
    if len(body) < _INTEREST_HEAD.size:
        raise RequestRefused(Status.MALFORMED_REQUEST, "REGION_INTEREST shorter than its header")
    kind, count = _INTEREST_HEAD.unpack_from(body, 0)
    try:
        kind = InterestKind(kind)
    except ValueError:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"unknown REGION_INTEREST kind {kind}") from None
    offset = _INTEREST_HEAD.size
    topics = []
    for _ in range(count):
        topic, offset = _read_topic(body, offset)
        if offset + _SINCE.size > len(body):
            raise RequestRefused(Status.MALFORMED_REQUEST, "REGION_INTEREST ends inside a topic's time")
        (since,) = _SINCE.unpack_from(body, offset)
        offset += _SINCE.size
        topics.append((topic, since))
    if offset != len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, "REGION_INTEREST has bytes after its topics")
    return kind, topics


# -- TOPIC_OPTIONS ---------------------------------------------------------------------------------


def topic_options_of(topic_log) -> int:
    """The TOPIC_OPTIONS bits of an open topic log."""
    return COMPACTION if topic_log.compaction else 0


def encode_topic_options(topic: str, options: int) -> bytes:
    return _str8(topic) + _U8.pack(options)


def topic_options_frame(topic: str, options: int) -> bytes:
    """A parent's TOPIC_OPTIONS to a child: request id 0, not answered."""
    body = encode_topic_options(topic, options)
    return frame_header(Op.TOPIC_OPTIONS, 0, len(body)) + body


def decode_topic_options(body) -> tuple[str, int]:
    """(topic, options)."""
    topic, offset = _read_topic(body, 0)
    if offset + 1 != len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, "TOPIC_OPTIONS is a topic and one byte of options")
    return topic, _options(body[offset])


def decode_topic_options_reply(payload) -> int:
    if len(payload) != 1:
        raise RequestRefused(Status.MALFORMED_REQUEST, "a TOPIC_OPTIONS reply is one byte of options")
    return _options(payload[0])


def _options(options: int) -> int:
    if options & ~_KNOWN_OPTIONS:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"unknown topic option bits {options:#04x}")
    return options
