"""RESPONSE frames: every request's one reply (its op, a status, a message, a payload).

The hub builds whole frames here (response_frame, and published_response in one pack on
the publish path); clients decode them with decode_response, the payload by the op it
answers.
"""

import struct
from typing import NamedTuple

from hedwig.protocol.framing import FRAME_HEADER_SIZE
from hedwig.protocol.layouts import (
    RESPONSE_HEAD,
    U8,
    U16,
    RequestError,
    str16,
)
from hedwig.protocol.ops import Op
from hedwig.protocol.requests import (
    decode_hello_reply,
    decode_json,
    decode_published,
    decode_read_range_reply,
    decode_subscribed,
)
from hedwig.protocol.status import Status


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
    return RESPONSE_HEAD.pack(length, Op.RESPONSE, request_id, op, status, len(raw)) + raw + payload


def response_frame_parts(request_id: int, op: int, payload_parts: list) -> list:
    """A SUCCESS RESPONSE frame as chunks for writeSequence (READ_RANGE's entries)."""
    length = FRAME_HEADER_SIZE - 4 + 5 + sum(map(len, payload_parts))
    return [RESPONSE_HEAD.pack(length, Op.RESPONSE, request_id, op, Status.SUCCESS, 0), *payload_parts]


def encode_response(
    op: int, status: Status = Status.SUCCESS, message: str = "", payload: bytes = b""
) -> bytes:
    """A RESPONSE body (without the frame header)."""
    return U8.pack(op) + U16.pack(status) + str16(message) + payload


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
