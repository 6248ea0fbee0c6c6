"""Kafka request and response envelopes through `kio`, which holds Kafka's message types
generated from Kafka's own JSON schemas (every version, flexible versions and tagged
fields included).

A request is a header (api key, version, correlation id, client id; tagged fields from
the flexible versions on) and a body kio decodes; a response is the correlation id (and
an empty tagged-field section when flexible, except for ApiVersions, whose header is
always v0 so that clients can negotiate) and a body kio encodes. Responses are built from
plain dicts (`build`): the fields a version lacks are left out, those it has and the dict
does not name take their defaults, so one handler answers every version it serves.
"""

import io
import struct
import types
import typing
from dataclasses import MISSING, fields
from datetime import UTC, datetime, timedelta
from functools import cache
from uuid import UUID

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import DecodeError

API_VERSIONS_KEY = 18

_HEADER = struct.Struct("!hhih")
_I32 = struct.Struct("!i")
_ZERO_UUID = UUID(int=0)


class KafkaRequestError(ValueError):
    """A request that does not decode: the connection is closed (Kafka's brokers do the same)."""


class RequestHeader(typing.NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int


def read_header(frame: bytes) -> RequestHeader:
    """The request header v1 fields; the body starts at body_offset, past the flexible
    versions' tagged fields (read_tagged_fields) when the caller knows the API is one."""
    if len(frame) < _HEADER.size:
        raise KafkaRequestError(f"a request of {len(frame)} bytes has no header")
    api_key, api_version, correlation_id, length = _HEADER.unpack_from(frame)
    offset = _HEADER.size
    client_id = None
    if length >= 0:
        if offset + length > len(frame):
            raise KafkaRequestError("the request header's client id runs past the request")
        client_id = frame[offset : offset + length].decode("utf-8", "replace")
        offset += length
    elif length != -1:
        raise KafkaRequestError(f"the request header's client id has length {length}")
    return RequestHeader(api_key, api_version, correlation_id, client_id, offset)


def _uvarint(frame: bytes, offset: int) -> tuple:
    value = shift = 0
    while True:
        if offset >= len(frame) or shift > 28:
            raise KafkaRequestError("a varint runs past the request")
        byte = frame[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7


def skip_tagged_fields(frame: bytes, offset: int) -> int:
    """Past a tagged-field section (the request header v2's, none of which hedwig reads)."""
    count, offset = _uvarint(frame, offset)
    for _ in range(count):
        _tag, offset = _uvarint(frame, offset)
        size, offset = _uvarint(frame, offset)
        offset += size
        if offset > len(frame):
            raise KafkaRequestError("a tagged field runs past the request")
    return offset


@cache
def request_codec(api_key: int, version: int):
    """(request class, its reader, whether the version is flexible); KeyError when kio
    knows no such API or version."""
    try:
        request_type = load_request_schema(api_key, version)
    except Exception as e:  # kio's UnknownAPIKey / UnknownEntity
        raise KeyError((api_key, version)) from e
    return request_type, entity_reader(request_type), request_type.__flexible__


@cache
def response_codec(api_key: int, version: int):
    response_type = load_response_schema(api_key, version)
    return response_type, entity_writer(response_type), response_type.__flexible__


def decode_request(frame: bytes, header: RequestHeader):
    """The request body as kio's entity. KafkaRequestError when it does not decode."""
    _request_type, reader, flexible = request_codec(header.api_key, header.api_version)
    offset = header.body_offset
    try:
        if flexible:
            offset = skip_tagged_fields(frame, offset)
        body, _size = reader(frame, offset)
    except KafkaRequestError:
        raise
    except DecodeError as e:
        raise KafkaRequestError(f"the body does not decode: {e}") from None
    except Exception as e:  # kio's other refusals of a peer's bytes (KeyError: an unknown tag, ...)
        raise KafkaRequestError(f"the body does not decode: {type(e).__name__}: {e}") from None
    # Bytes after the body are left unread, as a Kafka broker's parser leaves them: some
    # clients send them (librdkafka 2.16's Metadata v12 for every topic: 3 bytes more).
    return body


def encode_response(api_key: int, version: int, correlation_id: int, values: dict) -> bytes:
    """The response frame (length prefix included) of `values` for this API version."""
    response_type, writer, flexible = response_codec(api_key, version)
    out = io.BytesIO()
    out.write(b"\0\0\0\0")
    out.write(_I32.pack(correlation_id))
    if flexible and api_key != API_VERSIONS_KEY:
        out.write(b"\0")
    writer(out, build(response_type, values))
    frame = out.getbuffer()
    _I32.pack_into(frame, 0, len(frame) - 4)
    del frame
    return out.getvalue()


def encode_error_only(correlation_id: int, error_code: int) -> bytes:
    """An ApiVersions v0 answer of `error_code` and no APIs: what a request of an API kio
    does not know gets (a header v0 and an int16 first, as every client reads it)."""
    return struct.pack("!iihi", 10, correlation_id, error_code, 0)


def build(entity_type, values: dict):
    """kio's `entity_type` from a dict: nested entities from lists of dicts, ints for
    error codes and milliseconds for durations; fields the version lacks are ignored,
    fields it has that the dict leaves out take their default (or their type's zero)."""
    kwargs = {}
    for name, needs_zero, zero, converter in _field_plan(entity_type):
        if name in values:
            kwargs[name] = converter(values[name])
        elif needs_zero:
            kwargs[name] = zero
    return entity_type(**kwargs)


@cache
def _field_plan(entity_type) -> tuple:
    hints = typing.get_type_hints(entity_type)
    plan = []
    for f in fields(entity_type):
        hint = hints[f.name]
        converter, zero = _converter(hint, f.metadata.get("kafka_type"))
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        plan.append((f.name, not has_default, zero, converter))
    return tuple(plan)


def _converter(hint, kafka_type) -> tuple:
    """(value -> what kio takes, the zero of the type) for a field's type hint."""
    nullable = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(hint))
        hint = args[0]
    if typing.get_origin(hint) is tuple:
        item = typing.get_args(hint)[0]
        if hasattr(item, "__dataclass_fields__"):
            convert = lambda items, item=item: tuple(build(item, v) for v in items)  # noqa: E731
        else:
            inner, _ = _converter(item, kafka_type)
            convert = lambda items, inner=inner: tuple(inner(v) for v in items)  # noqa: E731
        if nullable:
            return (lambda items: None if items is None else convert(items)), None
        return convert, ()
    if hasattr(hint, "__dataclass_fields__"):
        return (lambda value: build(hint, value)), None
    if kafka_type == "error_code":
        convert, zero = ErrorCode, ErrorCode.none
    elif kafka_type in ("timedelta_i32", "timedelta_i64"):
        convert, zero = (lambda ms: timedelta(milliseconds=ms)), timedelta(0)
    elif kafka_type == "datetime_i64":
        convert, zero = (lambda ms: None if ms < 0 else datetime.fromtimestamp(ms / 1000, UTC)), None
    elif kafka_type == "uuid":
        convert, zero = (lambda value: value), _ZERO_UUID
    elif kafka_type == "records":
        convert, zero = (lambda value: value), None
    elif kafka_type == "string":
        convert, zero = str, ""
    elif kafka_type == "bytes":
        convert, zero = bytes, b""
    elif kafka_type == "bool":
        convert, zero = bool, False
    elif kafka_type == "float64":
        convert, zero = float, 0.0
    else:
        convert, zero = int, 0
    if nullable:
        return (lambda value, convert=convert: None if value is None else convert(value)), None
    if kafka_type == "uuid":
        return convert, _ZERO_UUID
    return convert, zero
