"""RESPONSE frames: every request's one reply (its op, a status, a message, a payload).

The hub builds whole frames here (response_frame, and published_response in one pack on
the publish path); clients decode them with decode_response, the payload by the op it
answers (its OpSpec's decode_reply, spec.py).
"""

import struct
from typing import NamedTuple

from hedwig.protocol.framing import FRAME_HEADER_SIZE
from hedwig.protocol.layouts import RESPONSE_HEAD, U8, U16, RequestRefused, str16
from hedwig.protocol.ops import Op
from hedwig.protocol.spec import OPS
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


_RESPONSE_BODY_HEAD = struct.Struct("!BHH")  # op answered, status, message length


def split_response(body) -> tuple[int, Status, str, memoryview]:
    """(op answered, status, message, payload) of a RESPONSE body, the payload undecoded
    (a view: not copied). An unknown status is UNEXPECTED_CONDITION, saying which."""
    if len(body) < _RESPONSE_BODY_HEAD.size:
        raise RequestRefused(Status.MALFORMED_REQUEST, "RESPONSE shorter than its header")
    op, code, length = _RESPONSE_BODY_HEAD.unpack_from(body, 0)
    end = _RESPONSE_BODY_HEAD.size + length
    if end > len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, "RESPONSE message runs past the end of the body")
    message = bytes(body[_RESPONSE_BODY_HEAD.size : end]).decode("utf-8", "replace")
    try:
        status = Status(code)
    except ValueError:
        status, message = Status.UNEXPECTED_CONDITION, f"unknown status {code}: {message}"
    return op, status, message, memoryview(body)[end:]


def decode_response(body) -> Response:
    """Decode a RESPONSE body, and its payload by the op it answers (its spec's
    decode_reply, given a view of the payload) when it succeeded."""
    op, status, message, payload = split_response(body)
    value = None
    if status is Status.SUCCESS:
        spec = OPS.get(op)
        if spec is not None and spec.decode_reply is not None:
            value = spec.decode_reply(payload)
    return Response(op, status, message, value)


_PUBLISHED_FRAME = struct.Struct("!IBIBHHQQ")
_PUBLISHED_LENGTH, _RESPONSE, _PUBLISH, _SUCCESS = (
    _PUBLISHED_FRAME.size - 4,
    int(Op.RESPONSE),
    int(Op.PUBLISH),
    int(Status.SUCCESS),
)


def published_response(request_id: int, first_seq: int, last_seq: int) -> bytes:
    """The whole SUCCESS RESPONSE frame to a PUBLISH, in one pack (the hub's hot path)."""
    return _PUBLISHED_FRAME.pack(
        _PUBLISHED_LENGTH, _RESPONSE, request_id, _PUBLISH, _SUCCESS, 0, first_seq, last_seq
    )
