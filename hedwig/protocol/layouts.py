"""The byte layouts every request and response body is made of, defined once.

Fixed parts are precomputed struct.Struct objects (big-endian); strings are `str8` (u8
length + UTF-8: topics, subscriber ids, names) and `str16` (u16 length + UTF-8: status
messages). requests.py and responses.py build the bodies of docs/protocol.md from these;
a decoder raises RequestRefused with the Status to send back.
"""

import struct
from enum import IntEnum

from hedwig.protocol.names import InvalidName, check_subscriber_id, check_topic
from hedwig.protocol.status import Status, StatusError

U8 = struct.Struct("!B")
U16 = struct.Struct("!H")
U32 = struct.Struct("!I")
U64 = struct.Struct("!Q")
TWO_U64 = struct.Struct("!QQ")
HELLO = struct.Struct("!H")
HELLO_REPLY = struct.Struct("!HII")
SUBSCRIBE_TAIL = struct.Struct("!BBQBI")  # mode, start kind, start value, flags, window
SUBSCRIBED = struct.Struct("!IQQ")
CONSUME = struct.Struct("!IQ")
READ_RANGE_TAIL = struct.Struct("!QQI")
RANGE_HEAD = struct.Struct("!QQI")
RANGE_ENTRY = struct.Struct("!III")
RESPONSE_HEAD = struct.Struct("!IBIBHH")  # frame length, op RESPONSE, request id, op, status, msg len

SUBSCRIBE_FLAG_FORCE_ATTACH = 0x01
SUBSCRIBE_FLAG_WINDOW = 0x02
# Acknowledgement only: the subscription is held but nothing is delivered on it, and its
# CONSUME may go up to the topic's last seq-id (Hedwig's STOP_DELIVERY for the attach).
# A set bit asks for the exception, so the flags byte of older clients keeps its meaning.
SUBSCRIBE_FLAG_NO_DELIVERY = 0x04
# The options block of shared and pull subscriptions and message bounds follows the
# window (hedwig.protocol.work_requests); without the bit the body is the old one.
SUBSCRIBE_FLAG_OPTIONS = 0x08
# The filter block (u16 length + a message selector's UTF-8 text) follows the options
# block, if any; without the bit the subscription has no filter. Bit 5 replaces the
# filter an existing subscription has (without it a different one is refused).
SUBSCRIBE_FLAG_FILTER = 0x10
SUBSCRIBE_FLAG_REPLACE_FILTER = 0x20
# The client takes SUBSET_DELIVERY frames (hedwig.protocol.work_requests): a key_shared
# member is then sent its messages of an entry as one frame; without the bit (an older
# client) as one DELIVERY per run of its keys.
SUBSCRIBE_FLAG_SUBSETS = 0x40
SUBSCRIBE_FLAGS = (
    SUBSCRIBE_FLAG_FORCE_ATTACH
    | SUBSCRIBE_FLAG_WINDOW
    | SUBSCRIBE_FLAG_NO_DELIVERY
    | SUBSCRIBE_FLAG_OPTIONS
    | SUBSCRIBE_FLAG_FILTER
    | SUBSCRIBE_FLAG_REPLACE_FILTER
    | SUBSCRIBE_FLAG_SUBSETS
)


class RequestRefused(StatusError):
    """A request the hub refuses; `status` is what goes back on the wire. (The client's
    exception for a 4xx answer is hedwig.protocol.errors.RequestError.)"""


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


MODE_NAMES = {
    SubscribeMode.CREATE: "create",
    SubscribeMode.ATTACH: "attach",
    SubscribeMode.CREATE_OR_ATTACH: "create_or_attach",
}
MODES_BY_NAME = {name: mode for mode, name in MODE_NAMES.items()}


# -- strings ----------------------------------------------------------------------------------


def str8(text) -> bytes:
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    if len(raw) > 255:
        raise ValueError(f"{raw[:40]!r}... is longer than 255 bytes")
    return U8.pack(len(raw)) + raw


def str16(text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > 0xFFFF:
        raw = raw[:0xFFFF]
    return U16.pack(len(raw)) + raw


def read_str16(body, offset: int, what: str):
    """(raw bytes, offset after) of a str16 at `offset`."""
    if offset + 2 > len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, f"body ends before the {what}")
    end = offset + 2 + U16.unpack_from(body, offset)[0]
    if end > len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, f"{what} runs past the end of the body")
    return bytes(body[offset + 2 : end]), end


def read_str8(body, offset: int, what: str):
    """(raw bytes, offset after) of a str8 at `offset`."""
    if offset >= len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, f"body ends before the {what}")
    length = body[offset]
    end = offset + 1 + length
    if end > len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, f"{what} runs past the end of the body")
    return bytes(body[offset + 1 : end]), end


def read_topic(body, offset: int):
    raw, offset = read_str8(body, offset, "topic")
    try:
        return check_topic(raw), offset
    except InvalidName as e:
        raise RequestRefused(Status.INVALID_TOPIC, str(e)) from None


def read_subscriber(body, offset: int):
    raw, offset = read_str8(body, offset, "subscriber id")
    try:
        # Reserved ids ("__" prefix) are the hub's decision: it knows who is a relay.
        return check_subscriber_id(raw, allow_reserved=True), offset
    except InvalidName as e:
        raise RequestRefused(Status.INVALID_SUBSCRIBER_ID, str(e)) from None


def unpack_field(layout: struct.Struct, body, offset: int, what: str):
    if len(body) - offset < layout.size:
        raise RequestRefused(
            Status.MALFORMED_REQUEST, f"{what} needs {layout.size} bytes, the body has {len(body) - offset}"
        )
    return layout.unpack_from(body, offset)


def expect_end(body, offset: int, what: str) -> None:
    if offset != len(body):
        raise RequestRefused(
            Status.MALFORMED_REQUEST, f"{len(body) - offset} unexpected bytes after the {what} body"
        )
