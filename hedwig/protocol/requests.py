"""Request and response bodies: what follows the frame header (framing.py) for each op.

Every body is a fixed struct layout plus length-prefixed strings, so the hub decodes a
request with one or two `struct.unpack_from` calls and never a Python loop per message.
docs/protocol.md gives the same layouts byte by byte. All integers are big-endian.

Strings: `str8` is u8 length + utf-8 bytes (topics, subscriber ids, names); `str16` is
u16 length + utf-8 bytes (status messages). Message sets travel as the publisher
encoded them (messageset.py) and are never re-encoded by the hub.

Every request frame gets at most one RESPONSE frame carrying the same request id
(CONSUME is answered only when it fails). A RESPONSE body is:

    u8  op        the op of the request it answers
    u16 status    hedwig.protocol.Status
    str16 message empty on success; on failure it says why (NOT_RESPONSIBLE_FOR_TOPIC: the
                  owner's "host:port")
    payload       op-specific, present only when status is SUCCESS

Decoders raise RequestError carrying the Status to send back: MALFORMED_REQUEST for a body
that does not parse, INVALID_TOPIC / INVALID_SUBSCRIBER_ID for names outside the rules.
Encoders do not check names: that is the hub's word, so a client sees the hub's status.
"""

import json
import struct
from enum import IntEnum
from typing import NamedTuple

from hedwig.protocol.framing import FRAME_HEADER_SIZE
from hedwig.protocol.names import InvalidName, check_subscriber_id, check_topic
from hedwig.protocol.ops import PROTOCOL_VERSION, Op
from hedwig.protocol.status import Status

_U8 = struct.Struct("!B")
_U16 = struct.Struct("!H")
_U32 = struct.Struct("!I")
_U64 = struct.Struct("!Q")
_TWO_U64 = struct.Struct("!QQ")
_HELLO = struct.Struct("!H")
_HELLO_REPLY = struct.Struct("!HII")
_SUBSCRIBE_TAIL = struct.Struct("!BBQBI")  # mode, start kind, start value, flags, window
_SUBSCRIBED = struct.Struct("!IQQ")
_CONSUME = struct.Struct("!IQ")
_READ_RANGE_TAIL = struct.Struct("!QQI")
_RANGE_HEAD = struct.Struct("!QQI")
_RANGE_ENTRY = struct.Struct("!III")
_RESPONSE_HEAD = struct.Struct("!IBIBHH")  # frame length, op RESPONSE, request id, op, status, msg len

SUBSCRIBE_FLAG_FORCE_ATTACH = 0x01
SUBSCRIBE_FLAG_WINDOW = 0x02
# Acknowledgement only: the subscription is held but nothing is delivered on it, and its
# CONSUME may go up to the topic's last seq-id (Hedwig's STOP_DELIVERY for the attach).
# A set bit asks for the exception, so the flags byte of older clients keeps its meaning.
SUBSCRIBE_FLAG_NO_DELIVERY = 0x04
_SUBSCRIBE_FLAGS = SUBSCRIBE_FLAG_FORCE_ATTACH | SUBSCRIBE_FLAG_WINDOW | SUBSCRIBE_FLAG_NO_DELIVERY


class RequestError(ValueError):
    """A request the hub refuses; `status` is what goes back on the wire."""

    def __init__(self, status: Status, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


class SubscribeMode(IntEnum):
    CREATE = 1
    ATTACH = 2
    CREATE_OR_ATTACH = 3


class StartKind(IntEnum):
    DEFAULT = 0  # a new subscription: after the topic's last seq-id; an existing one: consumed+1
    EARLIEST = 1
    LATEST = 2
    SEQ = 3  # value: the first seq-id to deliver
    TIME = 4  # value: microseconds since the epoch; the first message published at or after it


_MODE_NAMES = {
    SubscribeMode.CREATE: "create",
    SubscribeMode.ATTACH: "attach",
    SubscribeMode.CREATE_OR_ATTACH: "create_or_attach",
}
_MODES_BY_NAME = {name: mode for mode, name in _MODE_NAMES.items()}


# -- strings ----------------------------------------------------------------------------------


def _str8(text) -> bytes:
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    if len(raw) > 255:
        raise ValueError(f"{raw[:40]!r}... is longer than 255 bytes")
    return _U8.pack(len(raw)) + raw


def _str16(text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > 0xFFFF:
        raw = raw[:0xFFFF]
    return _U16.pack(len(raw)) + raw


def _read_str8(body, offset: int, what: str):
    """(raw bytes, offset after) of a str8 at `offset`."""
    if offset >= len(body):
        raise RequestError(Status.MALFORMED_REQUEST, f"body ends before the {what}")
    length = body[offset]
    end = offset + 1 + length
    if end > len(body):
        raise RequestError(Status.MALFORMED_REQUEST, f"{what} runs past the end of the body")
    return bytes(body[offset + 1 : end]), end


def _read_topic(body, offset: int):
    raw, offset = _read_str8(body, offset, "topic")
    try:
        return check_topic(raw), offset
    except InvalidName as e:
        raise RequestError(Status.INVALID_TOPIC, str(e)) from None


def _read_subscriber(body, offset: int):
    raw, offset = _read_str8(body, offset, "subscriber id")
    try:
        # Reserved ids ("__" prefix) are the hub's decision: it knows who is a relay.
        return check_subscriber_id(raw, allow_reserved=True), offset
    except InvalidName as e:
        raise RequestError(Status.INVALID_SUBSCRIBER_ID, str(e)) from None


def _unpack(layout: struct.Struct, body, offset: int, what: str):
    if len(body) - offset < layout.size:
        raise RequestError(
            Status.MALFORMED_REQUEST, f"{what} needs {layout.size} bytes, the body has {len(body) - offset}"
        )
    return layout.unpack_from(body, offset)


def _expect_end(body, offset: int, what: str) -> None:
    if offset != len(body):
        raise RequestError(
            Status.MALFORMED_REQUEST, f"{len(body) - offset} unexpected bytes after the {what} body"
        )


# -- HELLO ------------------------------------------------------------------------------------


class Hello(NamedTuple):
    version: int
    client_name: str


class HelloReply(NamedTuple):
    version: int
    max_frame_bytes: int
    max_message_bytes: int
    region: str
    hub_name: str  # host:port as the hub knows itself


def encode_hello(client_name: str = "", version: int = PROTOCOL_VERSION) -> bytes:
    return _HELLO.pack(version) + _str8(client_name)


def decode_hello(body) -> Hello:
    (version,) = _unpack(_HELLO, body, 0, "HELLO")
    raw, offset = _read_str8(body, _HELLO.size, "client name")
    _expect_end(body, offset, "HELLO")
    return Hello(version, raw.decode("utf-8", "replace"))


def encode_hello_reply(
    region: str, hub_name: str, max_frame_bytes: int, max_message_bytes: int, version: int = PROTOCOL_VERSION
) -> bytes:
    return _HELLO_REPLY.pack(version, max_frame_bytes, max_message_bytes) + _str8(region) + _str8(hub_name)


def decode_hello_reply(payload) -> HelloReply:
    version, max_frame, max_message = _unpack(_HELLO_REPLY, payload, 0, "HELLO reply")
    region, offset = _read_str8(payload, _HELLO_REPLY.size, "region")
    hub_name, offset = _read_str8(payload, offset, "hub name")
    return HelloReply(version, max_frame, max_message, region.decode("utf-8"), hub_name.decode("utf-8"))


# -- PUBLISH ----------------------------------------------------------------------------------


class Publish(NamedTuple):
    topic: str
    message_set: bytes  # exactly as the publisher encoded it


class Published(NamedTuple):
    first_seq: int
    last_seq: int


def publish_prefix(topic: str) -> bytes:
    """The PUBLISH body before the message set: send it and the message set with
    writeSequence (frame_header(Op.PUBLISH, id, len(prefix) + len(message_set)) first)."""
    return _str8(topic)


def encode_publish(topic: str, message_set: bytes) -> bytes:
    return _str8(topic) + message_set


def decode_publish(body) -> Publish:
    topic, offset = _read_topic(body, 0)
    if offset == len(body):
        raise RequestError(Status.MALFORMED_REQUEST, "PUBLISH without a message set")
    return Publish(topic, bytes(body[offset:]))


def encode_published(first_seq: int, last_seq: int) -> bytes:
    return _TWO_U64.pack(first_seq, last_seq)


def decode_published(payload) -> Published:
    return Published(*_unpack(_TWO_U64, payload, 0, "PUBLISH reply"))


# -- SUBSCRIBE --------------------------------------------------------------------------------


class Subscribe(NamedTuple):
    topic: str
    subscriber_id: str
    mode: str  # "create" | "attach" | "create_or_attach" (the delivery manager's words)
    start: object  # None | "earliest" | "latest" | ("seq", n) | ("time", time_us)
    window: int | None  # None: the hub's default; 0: unlimited
    force_attach: bool
    deliver: bool = True  # False: acknowledgement only (no deliveries; CONSUME up to the last seq-id)


class Subscribed(NamedTuple):
    handle: int  # channel-local: deliveries and CONSUME name the subscription by it
    consumed_seq: int
    next_seq: int  # the first seq-id the hub will deliver


def _start_fields(start):
    if start is None:
        return StartKind.DEFAULT, 0
    if start == "earliest":
        return StartKind.EARLIEST, 0
    if start == "latest":
        return StartKind.LATEST, 0
    if isinstance(start, tuple) and len(start) == 2 and start[0] in ("seq", "time"):
        kind = StartKind.SEQ if start[0] == "seq" else StartKind.TIME
        return kind, int(start[1])
    raise ValueError(f"start must be None, 'earliest', 'latest', ('seq', n) or ('time', us), not {start!r}")


def encode_subscribe(
    topic: str,
    subscriber_id: str,
    mode: str = "create_or_attach",
    start=None,
    window: int | None = None,
    force_attach: bool = False,
    deliver: bool = True,
) -> bytes:
    try:
        mode_code = _MODES_BY_NAME[mode]
    except KeyError:
        raise ValueError(f"mode must be one of {sorted(_MODES_BY_NAME)}, not {mode!r}") from None
    kind, value = _start_fields(start)
    flags = SUBSCRIBE_FLAG_FORCE_ATTACH if force_attach else 0
    if window is not None:
        flags |= SUBSCRIBE_FLAG_WINDOW
    if not deliver:
        flags |= SUBSCRIBE_FLAG_NO_DELIVERY
    return (
        _str8(topic) + _str8(subscriber_id) + _SUBSCRIBE_TAIL.pack(mode_code, kind, value, flags, window or 0)
    )


def decode_subscribe(body) -> Subscribe:
    topic, offset = _read_topic(body, 0)
    subscriber_id, offset = _read_subscriber(body, offset)
    mode_code, kind, value, flags, window = _unpack(_SUBSCRIBE_TAIL, body, offset, "SUBSCRIBE")
    _expect_end(body, offset + _SUBSCRIBE_TAIL.size, "SUBSCRIBE")
    try:
        mode = _MODE_NAMES[SubscribeMode(mode_code)]
    except ValueError:
        raise RequestError(Status.MALFORMED_REQUEST, f"unknown subscribe mode {mode_code}") from None
    if kind == StartKind.DEFAULT:
        start = None
    elif kind == StartKind.EARLIEST:
        start = "earliest"
    elif kind == StartKind.LATEST:
        start = "latest"
    elif kind == StartKind.SEQ:
        if value < 1:
            raise RequestError(Status.MALFORMED_REQUEST, "seq-ids start at 1")
        start = ("seq", value)
    elif kind == StartKind.TIME:
        start = ("time", value)
    else:
        raise RequestError(Status.MALFORMED_REQUEST, f"unknown start kind {kind}")
    if flags & ~_SUBSCRIBE_FLAGS:
        raise RequestError(Status.MALFORMED_REQUEST, f"unknown subscribe flags {flags:#x}")
    return Subscribe(
        topic,
        subscriber_id,
        mode,
        start,
        window if flags & SUBSCRIBE_FLAG_WINDOW else None,
        bool(flags & SUBSCRIBE_FLAG_FORCE_ATTACH),
        not flags & SUBSCRIBE_FLAG_NO_DELIVERY,
    )


def encode_subscribed(handle: int, consumed_seq: int, next_seq: int) -> bytes:
    return _SUBSCRIBED.pack(handle, consumed_seq, next_seq)


def decode_subscribed(payload) -> Subscribed:
    return Subscribed(*_unpack(_SUBSCRIBED, payload, 0, "SUBSCRIBE reply"))


# -- CONSUME, CLOSE_SUBSCRIPTION, UNSUBSCRIBE ---------------------------------------------------


class Consume(NamedTuple):
    handle: int
    seq: int  # cumulative: everything up to and including seq is consumed


class Unsubscribe(NamedTuple):
    topic: str
    subscriber_id: str


def encode_consume(handle: int, seq: int) -> bytes:
    return _CONSUME.pack(handle, seq)


def decode_consume(body) -> Consume:
    handle, seq = _unpack(_CONSUME, body, 0, "CONSUME")
    _expect_end(body, _CONSUME.size, "CONSUME")
    return Consume(handle, seq)


def encode_close_subscription(handle: int) -> bytes:
    return _U32.pack(handle)


def decode_close_subscription(body) -> int:
    (handle,) = _unpack(_U32, body, 0, "CLOSE_SUBSCRIPTION")
    _expect_end(body, _U32.size, "CLOSE_SUBSCRIPTION")
    return handle


def encode_unsubscribe(topic: str, subscriber_id: str) -> bytes:
    return _str8(topic) + _str8(subscriber_id)


def decode_unsubscribe(body) -> Unsubscribe:
    topic, offset = _read_topic(body, 0)
    subscriber_id, offset = _read_subscriber(body, offset)
    _expect_end(body, offset, "UNSUBSCRIBE")
    return Unsubscribe(topic, subscriber_id)


# -- READ_RANGE -------------------------------------------------------------------------------


class ReadRange(NamedTuple):
    topic: str
    from_seq: int
    to_seq: int  # inclusive; 0: up to the topic's last seq-id
    max_bytes: int  # stop once this many entry bytes are in the reply (always at least one entry)


class ReadRangeReply(NamedTuple):
    first_seq: int  # the topic's earliest retained seq-id
    last_seq: int  # the topic's last acknowledged seq-id
    entries: list  # [(start, stop, entry bytes)]: messages [start, stop) of each stored entry


def encode_read_range(topic: str, from_seq: int, to_seq: int = 0, max_bytes: int = 4 << 20) -> bytes:
    return _str8(topic) + _READ_RANGE_TAIL.pack(from_seq, to_seq, max_bytes)


def decode_read_range(body) -> ReadRange:
    topic, offset = _read_topic(body, 0)
    from_seq, to_seq, max_bytes = _unpack(_READ_RANGE_TAIL, body, offset, "READ_RANGE")
    _expect_end(body, offset + _READ_RANGE_TAIL.size, "READ_RANGE")
    if from_seq < 1:
        raise RequestError(Status.MALFORMED_REQUEST, "seq-ids start at 1")
    if to_seq and to_seq < from_seq:
        raise RequestError(Status.MALFORMED_REQUEST, f"to_seq {to_seq} is before from_seq {from_seq}")
    return ReadRange(topic, from_seq, to_seq, max_bytes)


def read_range_reply_parts(first_seq: int, last_seq: int, entries) -> list:
    """The READ_RANGE payload as chunks for writeSequence: the stored entry bytes are
    passed through, never copied. `entries`: (start, stop, entry bytes) tuples."""
    parts = [_RANGE_HEAD.pack(first_seq, last_seq, len(entries))]
    append = parts.append
    pack = _RANGE_ENTRY.pack
    for start, stop, data in entries:
        append(pack(start, stop, len(data)))
        append(data)
    return parts


def decode_read_range_reply(payload) -> ReadRangeReply:
    """Entries come back as memoryviews into `payload` (no copy); bytes(view) keeps one."""
    first_seq, last_seq, count = _unpack(_RANGE_HEAD, payload, 0, "READ_RANGE reply")
    view = memoryview(payload)
    offset = _RANGE_HEAD.size
    entries = []
    unpack = _RANGE_ENTRY.unpack_from
    end = len(payload)
    for _ in range(count):
        if end - offset < _RANGE_ENTRY.size:
            raise RequestError(Status.MALFORMED_REQUEST, "READ_RANGE reply truncated")
        start, stop, length = unpack(payload, offset)
        offset += _RANGE_ENTRY.size
        if offset + length > end:
            raise RequestError(Status.MALFORMED_REQUEST, "READ_RANGE reply entry truncated")
        entries.append((start, stop, view[offset : offset + length]))
        offset += length
    return ReadRangeReply(first_seq, last_seq, entries)


# -- admin reads: LIST_TOPICS, DESCRIBE_TOPIC, STATS ------------------------------------------


def encode_describe_topic(topic: str) -> bytes:
    return _str8(topic)


def decode_describe_topic(body) -> str:
    topic, offset = _read_topic(body, 0)
    _expect_end(body, offset, "DESCRIBE_TOPIC")
    return topic


def decode_empty(body, what: str) -> None:
    if len(body):
        raise RequestError(Status.MALFORMED_REQUEST, f"{what} takes no body, got {len(body)} bytes")


def encode_json(value) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-8")


def decode_json(payload):
    try:
        return json.loads(bytes(payload).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise RequestError(Status.MALFORMED_REQUEST, f"reply is not JSON: {e}") from None


# -- RESPONSE ---------------------------------------------------------------------------------


class Response(NamedTuple):
    op: int  # the op of the request it answers
    status: Status
    message: str
    value: object  # the decoded payload (Published, Subscribed, ...) on SUCCESS, else None


def response_frame(
    request_id: int, op: int, status: Status = Status.SUCCESS, message: str = "", payload: bytes = b""
) -> bytes:
    """A whole RESPONSE frame (header included), ready for transport.write."""
    raw = message.encode("utf-8")[:0xFFFF] if message else b""
    length = FRAME_HEADER_SIZE - 4 + 5 + len(raw) + len(payload)
    return _RESPONSE_HEAD.pack(length, Op.RESPONSE, request_id, op, status, len(raw)) + raw + payload


def response_frame_parts(request_id: int, op: int, payload_parts: list) -> list:
    """A SUCCESS RESPONSE frame as chunks for writeSequence (READ_RANGE's entries)."""
    length = FRAME_HEADER_SIZE - 4 + 5 + sum(map(len, payload_parts))
    return [_RESPONSE_HEAD.pack(length, Op.RESPONSE, request_id, op, Status.SUCCESS, 0), *payload_parts]


def encode_response(
    op: int, status: Status = Status.SUCCESS, message: str = "", payload: bytes = b""
) -> bytes:
    """A RESPONSE body (without the frame header)."""
    return _U8.pack(op) + _U16.pack(status) + _str16(message) + payload


_PAYLOAD_DECODERS = {
    Op.HELLO: decode_hello_reply,
    Op.PUBLISH: decode_published,
    Op.SUBSCRIBE: decode_subscribed,
    Op.READ_RANGE: decode_read_range_reply,
    Op.LIST_TOPICS: decode_json,
    Op.DESCRIBE_TOPIC: decode_json,
    Op.STATS: decode_json,
}


def decode_response(body) -> Response:
    """Decode a RESPONSE body, and its payload by the op it answers when it succeeded."""
    if len(body) < 5:
        raise RequestError(Status.MALFORMED_REQUEST, "RESPONSE shorter than its header")
    op = body[0]
    status_code, message_length = struct.unpack_from("!HH", body, 1)
    end = 5 + message_length
    if end > len(body):
        raise RequestError(Status.MALFORMED_REQUEST, "RESPONSE message runs past the end of the body")
    message = bytes(body[5:end]).decode("utf-8", "replace")
    try:
        status = Status(status_code)
    except ValueError:
        status = Status.UNEXPECTED_CONDITION
        message = f"unknown status {status_code}: {message}"
    value = None
    if status is Status.SUCCESS:
        decoder = _PAYLOAD_DECODERS.get(op)
        if decoder is not None:
            value = decoder(memoryview(body)[end:] if op == Op.READ_RANGE else body[end:])
    return Response(op, status, message, value)


_PUBLISHED_FRAME = struct.Struct("!IBIBHHQQ")


def published_response(request_id: int, first_seq: int, last_seq: int) -> bytes:
    """The whole SUCCESS RESPONSE frame to a PUBLISH, in one pack (the hub's hot path)."""
    return _PUBLISHED_FRAME.pack(
        _PUBLISHED_FRAME.size - 4, Op.RESPONSE, request_id, Op.PUBLISH, Status.SUCCESS, 0, first_seq, last_seq
    )
