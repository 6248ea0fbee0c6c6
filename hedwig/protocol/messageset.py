"""Message sets: the bytes a publisher sends, the hub stores and every subscriber receives.

A message set holds one or more consecutive messages of one publish. Its layout puts
every per-message length in one array so that encoding, validating and slicing are
C-speed operations on `array` objects, never a Python loop per message on the hub (a
set with properties adds one walk over its key/value pairs, checked before it is stored):

    u8  version (1)
    u8  flags (bit 0: properties present)
    u32 count
    u32 payload_length * count
    u32 properties_length * count        only with the properties flag
    payload bytes, concatenated
    properties blobs, concatenated       only with the properties flag

A properties blob is a sequence of (u16 key length, key utf-8, u32 value length, value).
All integers are big-endian.
"""

import struct
import sys
from array import array
from itertools import accumulate

from hedwig.protocol.status import Status, StatusError

SET_VERSION = 1
FLAG_PROPERTIES = 0x01

_SET_HEADER = struct.Struct("!BBI")
# The header of a set of one message without properties, with that message's length.
ONE_MESSAGE_HEADER = struct.Struct("!BBII")
_PROP_KEY = struct.Struct("!H")
_PROP_VALUE = struct.Struct("!I")
_SWAP = sys.byteorder == "little"

if array("I").itemsize != 4:  # pragma: no cover - every platform we run on has 4
    raise ImportError("hedwig needs a 4-byte array('I')")


class MessageSetError(StatusError):
    """A message set that cannot be stored; `status` says why on the wire."""


def _u32_array(values) -> array:
    lengths = array("I", values)
    if _SWAP:
        lengths.byteswap()
    return lengths


def read_u32_array(buf, offset: int, count: int) -> array:
    """`count` big-endian u32s at `offset` (a message set's lengths) as an array, in one
    copy: what decoders of message sets and entries all read."""
    lengths = array("I")
    lengths.frombytes(buf[offset : offset + 4 * count])
    if _SWAP:
        lengths.byteswap()
    return lengths


def encode_properties(properties) -> bytes:
    """Encode a str -> bytes mapping; an empty or missing mapping is an empty blob."""
    if not properties:
        return b""
    parts = []
    for key, value in properties.items():
        key_bytes = key.encode("utf-8")
        if isinstance(value, str):
            value = value.encode("utf-8")
        parts.append(_PROP_KEY.pack(len(key_bytes)))
        parts.append(key_bytes)
        parts.append(_PROP_VALUE.pack(len(value)))
        parts.append(bytes(value))
    return b"".join(parts)


def decode_properties(blob) -> dict:
    properties = {}
    offset = 0
    end = len(blob)
    while offset < end:
        if offset + 2 > end:
            raise MessageSetError(Status.MALFORMED_REQUEST, "truncated property key length")
        (key_len,) = _PROP_KEY.unpack_from(blob, offset)
        offset += 2
        if offset + key_len + 4 > end:
            raise MessageSetError(Status.MALFORMED_REQUEST, "truncated property key")
        try:
            key = bytes(blob[offset : offset + key_len]).decode("utf-8")
        except UnicodeDecodeError:
            raise MessageSetError(Status.MALFORMED_REQUEST, "a property key is not UTF-8") from None
        offset += key_len
        (value_len,) = _PROP_VALUE.unpack_from(blob, offset)
        offset += 4
        if offset + value_len > end:
            raise MessageSetError(Status.MALFORMED_REQUEST, "truncated property value")
        properties[key] = bytes(blob[offset : offset + value_len])
        offset += value_len
    return properties


def encode_message_set(payloads, properties=None) -> bytes:
    """Encode payloads (a sequence of bytes) and optional per-message property maps."""
    count = len(payloads)
    if count == 0:
        raise ValueError("a message set holds at least one message")
    parts = [b"", _u32_array(map(len, payloads)).tobytes()]
    flags = 0
    blobs = None
    if properties is not None and any(properties):
        if len(properties) != count:
            raise ValueError("one properties mapping (or None) per payload")
        flags |= FLAG_PROPERTIES
        blobs = [encode_properties(p) for p in properties]
        parts.append(_u32_array(map(len, blobs)).tobytes())
    parts[0] = _SET_HEADER.pack(SET_VERSION, flags, count)
    parts.extend(payloads)
    if blobs is not None:
        parts.extend(blobs)
    return b"".join(parts)


class MessageSetLayout:
    """Where each message of an encoded message set lies; parsed once per set."""

    __slots__ = ("count", "payload_offsets", "property_offsets")

    def __init__(self, count, payload_offsets, property_offsets):
        self.count = count
        # offsets[i]..offsets[i+1] is message i; len(offsets) == count + 1
        self.payload_offsets = payload_offsets
        self.property_offsets = property_offsets


def _read_lengths(buf, offset: int):
    """Read a set's header and length arrays: (count, payload lengths, property lengths
    or None, where the payload bytes begin)."""
    end = len(buf)
    if end - offset < _SET_HEADER.size:
        raise MessageSetError(Status.MALFORMED_REQUEST, "message set shorter than its header")
    version, flags, count = _SET_HEADER.unpack_from(buf, offset)
    if version != SET_VERSION:
        raise MessageSetError(Status.MALFORMED_REQUEST, f"unknown message set version {version}")
    if count == 0:
        raise MessageSetError(Status.MALFORMED_REQUEST, "empty message set")
    has_properties = bool(flags & FLAG_PROPERTIES)
    position = offset + _SET_HEADER.size
    if end - position < 4 * count * (2 if has_properties else 1):
        raise MessageSetError(Status.MALFORMED_REQUEST, "message set truncated in its length arrays")
    payload_lengths = read_u32_array(buf, position, count)
    position += 4 * count
    property_lengths = None
    if has_properties:
        property_lengths = read_u32_array(buf, position, count)
        position += 4 * count
    return count, payload_lengths, property_lengths, position


def _check_properties(buf, blobs_at: int, property_lengths) -> None:
    """Raise MessageSetError unless every properties blob (they lie concatenated from
    `blobs_at` to the end of `buf`) decodes: whole (key, value) pairs, UTF-8 keys.

    A stored blob that does not decode fails every later read of its topic, so the hub
    checks them all before it appends. One walk over the pairs of all blobs together (no
    call per message): the blobs are whole exactly when the walk ends at the end of the
    buffer and every blob boundary is a pair boundary; every key is UTF-8 exactly when
    they are joined by NUL (a byte no multi-byte sequence holds) and that decodes, in
    one call. Only a bad set pays for finding which message is at fault.
    """
    end = len(buf)
    starts = []
    keys = []
    position = blobs_at
    unpack_key_length = _PROP_KEY.unpack_from
    unpack_value_length = _PROP_VALUE.unpack_from
    try:
        while position < end:
            starts.append(position)
            key_at = position + 2
            value_length_at = key_at + unpack_key_length(buf, position)[0]
            keys.append(buf[key_at:value_length_at])
            position = value_length_at + 4 + unpack_value_length(buf, value_length_at)[0]
    except struct.error:
        position = -1  # a length runs past the end of the buffer
    if position == end:
        starts.append(end)
        if set(starts).issuperset(accumulate(property_lengths, initial=blobs_at)):
            try:
                b"\0".join(keys).decode("utf-8")
            except UnicodeDecodeError:
                pass
            else:
                return
    _raise_property_error(buf, blobs_at, property_lengths)


def _raise_property_error(buf, blobs_at: int, property_lengths) -> None:
    """Name the first message whose properties do not decode (the reason a reader gets)."""
    offsets = list(accumulate(property_lengths, initial=blobs_at))
    for index in range(len(property_lengths)):
        try:
            decode_properties(buf[offsets[index] : offsets[index + 1]])
        except MessageSetError as e:
            raise MessageSetError(e.status, f"message {index}: {e.reason}") from None
    raise MessageSetError(Status.MALFORMED_REQUEST, "properties blobs do not decode")  # pragma: no cover


def validate_message_set(buf, offset: int = 0, max_message_bytes: int | None = None) -> int:
    """Check a message set completely (header, length arrays, sizes, every properties
    blob) and its size limits; return its message count. Raises MessageSetError only.

    This is the hub's check on every publish and relayed entry: whatever it accepts,
    every reader can decode. A set without properties costs a few C-level passes over
    its length array (`sum`, `max`); one with properties adds one walk over its pairs.
    """
    count, payload_lengths, property_lengths, position = _read_lengths(buf, offset)
    if buf[offset + 1] & ~FLAG_PROPERTIES:
        raise MessageSetError(Status.MALFORMED_REQUEST, f"unknown message set flags {buf[offset + 1]:#x}")
    total = sum(payload_lengths)
    properties_total = 0
    if property_lengths is not None:
        properties_total = sum(property_lengths)
        total += properties_total
    if position + total != len(buf):
        raise MessageSetError(
            Status.MALFORMED_REQUEST,
            f"message set lengths add up to {position + total - offset} bytes "
            f"but it has {len(buf) - offset}",
        )
    if max_message_bytes is not None:
        if property_lengths is None:
            largest = max(payload_lengths)
        else:
            largest = max(map(int.__add__, payload_lengths, property_lengths))
        if largest > max_message_bytes:
            raise MessageSetError(
                Status.MESSAGE_TOO_LARGE,
                f"a message of {largest} bytes exceeds the limit of {max_message_bytes}",
            )
    if properties_total:
        _check_properties(buf, len(buf) - properties_total, property_lengths)
    return count


def parse_message_set(buf, offset: int = 0) -> MessageSetLayout:
    """Locate every message of a (validated) message set, for decoding."""
    count, payload_lengths, property_lengths, position = _read_lengths(buf, offset)
    payload_offsets = list(accumulate(payload_lengths, initial=position))
    property_offsets = None
    data_end = payload_offsets[-1]
    if property_lengths is not None:
        property_offsets = list(accumulate(property_lengths, initial=data_end))
        data_end = property_offsets[-1]
    if data_end != len(buf):
        raise MessageSetError(Status.MALFORMED_REQUEST, "message set lengths do not match its size")
    return MessageSetLayout(count, payload_offsets, property_offsets)


def message_set_count(buf, offset: int = 0) -> int:
    """The number of messages, read from the header alone."""
    return _SET_HEADER.unpack_from(buf, offset)[2]
