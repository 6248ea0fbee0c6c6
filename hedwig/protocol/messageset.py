"""Message sets: the bytes a publisher sends, the hub stores and every subscriber receives.

A message set holds one or more consecutive messages of one publish. Its layout puts
every per-message length in one array so that encoding, validating and slicing are
C-speed operations on `array` objects, never a Python loop per message on the hub (a
set with properties adds one walk over its key/value pairs, checked before it is stored):

    u8  version (1)
    u8  flags             bit 0: properties present; bits 1-3: codec (compression.py);
                          bit 4: keys present; bit 5: the properties are typed;
                          bits 6-7: 0
    u32 count
    u32 payload_length * count
    u32 properties_length * count        only with the properties bit
    u32 key_length * count               only with the keys bit: 0 = no key
    payload bytes, concatenated
    properties blobs, concatenated       only with the properties bit
    keys, concatenated                   only with the keys bit

A properties blob is a sequence of (u16 key length, key utf-8, u32 value length, value):
every value bytes. With the typed bit every pair is (u16 key length, key utf-8, u8 type,
u32 value length, value), and the type says what the value is:

    0 bytes    the bytes                          (Python bytes)
    1 string   UTF-8                              (str)
    2 int      8 bytes, big-endian, signed        (int, within a signed 64-bit long)
    3 float    8 bytes, IEEE 754 double           (float)
    4 bool     1 byte, 0 or 1                     (bool)

A key is 1 or more bytes (a str key is sent as UTF-8); a message without one has length
0 there. A message's size (for the hub's message limit) is its payload, its properties
blob and its key. All integers are big-endian.

A set without keys or typed properties is the set of before they existed, byte for
byte: an old publisher's sets are accepted as they were, a set of bytes-valued
properties is still the untyped blob, and such sets are encoded, validated and decoded
by the same code as before, at the same cost. Encoding picks the typed blob only for a
set with a value that is not bytes (a str included: it comes back a str).
"""

import struct
import sys
from array import array
from itertools import accumulate

from hedwig.protocol.errors import InvalidKey
from hedwig.protocol.status import Status, StatusError

SET_VERSION = 1
FLAG_PROPERTIES = 0x01
FLAG_KEYS = 0x10
FLAG_TYPED = 0x20
# The flags of a plain (uncompressed) set this code reads; bits 1-3 are compression.py's.
SET_FLAGS = FLAG_PROPERTIES | FLAG_KEYS | FLAG_TYPED

_SET_HEADER = struct.Struct("!BBI")
# The header of a set of one message without properties, with that message's length.
ONE_MESSAGE_HEADER = struct.Struct("!BBII")
_PROP_KEY = struct.Struct("!H")
_PROP_VALUE = struct.Struct("!I")
_TYPED_VALUE = struct.Struct("!BI")  # type, value length
_INT64 = struct.Struct("!q")
_FLOAT64 = struct.Struct("!d")
TYPE_BYTES, TYPE_STRING, TYPE_INT, TYPE_FLOAT, TYPE_BOOL = range(5)
_FIXED_SIZES = {TYPE_INT: 8, TYPE_FLOAT: 8, TYPE_BOOL: 1}
# What _read_lengths reads itself: the layout of sets without keys or typed properties,
# by flags. Any other flags are a KeyError there, which its callers turn into the
# extended layout's path (a try costs nothing until it catches: the plain path is as it was).
_PLAIN_SETS = {0: False, FLAG_PROPERTIES: True}
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
    """Encode a str -> bytes mapping as an untyped blob (a str value is sent as its UTF-8
    and comes back bytes); an empty or missing mapping is an empty blob."""
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


class _NotBytes(Exception):
    """A property value that is not bytes: the set needs the typed blob."""


def _untyped_blob(properties) -> bytes:
    """encode_properties of a mapping whose values are all bytes-like, or _NotBytes."""
    if not properties:
        return b""
    parts = []
    for key, value in properties.items():
        if value.__class__ is not bytes:
            if not isinstance(value, bytearray | memoryview):
                raise _NotBytes
            value = bytes(value)
        key_bytes = key.encode("utf-8")
        parts.append(_PROP_KEY.pack(len(key_bytes)))
        parts.append(key_bytes)
        parts.append(_PROP_VALUE.pack(len(value)))
        parts.append(value)
    return b"".join(parts)


def _typed_value(key: str, value) -> tuple:
    """(type, value bytes) of a typed property value; TypeError or ValueError if it has
    none."""
    if isinstance(value, bytes | bytearray | memoryview):
        return TYPE_BYTES, bytes(value)
    if isinstance(value, str):
        return TYPE_STRING, value.encode("utf-8")
    if isinstance(value, bool):
        return TYPE_BOOL, b"\x01" if value else b"\x00"
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"property {key!r}: {value} does not fit in a signed 64-bit integer")
        return TYPE_INT, _INT64.pack(value)
    if isinstance(value, float):
        return TYPE_FLOAT, _FLOAT64.pack(value)
    raise TypeError(
        f"property {key!r}: a value is bytes, str, int, float or bool, not {type(value).__name__}"
    )


def encode_typed_properties(properties) -> bytes:
    """Encode a str -> (bytes, str, int, float or bool) mapping as a typed blob."""
    if not properties:
        return b""
    parts = []
    for key, value in properties.items():
        key_bytes = key.encode("utf-8")
        kind, raw = _typed_value(key, value)
        parts.append(_PROP_KEY.pack(len(key_bytes)))
        parts.append(key_bytes)
        parts.append(_TYPED_VALUE.pack(kind, len(raw)))
        parts.append(raw)
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


def _typed(kind: int, raw: bytes):
    """The Python value of a typed property's bytes; MessageSetError if they hold none."""
    if kind == TYPE_BYTES:
        return raw
    if kind == TYPE_STRING:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise MessageSetError(
                Status.MALFORMED_REQUEST, "a property's string value is not UTF-8"
            ) from None
    size = _FIXED_SIZES.get(kind)
    if size is None:
        raise MessageSetError(Status.MALFORMED_REQUEST, f"unknown property value type {kind}")
    if len(raw) != size:
        raise MessageSetError(
            Status.MALFORMED_REQUEST, f"a property value of type {kind} has {len(raw)} bytes"
        )
    if kind == TYPE_INT:
        return _INT64.unpack(raw)[0]
    if kind == TYPE_FLOAT:
        return _FLOAT64.unpack(raw)[0]
    if raw[0] > 1:
        raise MessageSetError(Status.MALFORMED_REQUEST, f"a boolean property value is {raw[0]}, not 0 or 1")
    return raw[0] == 1


def decode_typed_properties(blob) -> dict:
    """A typed blob's mapping: values bytes, str, int, float or bool as they were sent.
    (Strings and 8-byte numbers, the usual values, are read in place.)"""
    properties = {}
    offset = 0
    end = len(blob)
    unpack_key_length = _PROP_KEY.unpack_from
    unpack_value_head = _TYPED_VALUE.unpack_from
    while offset < end:
        if offset + 2 > end:
            raise MessageSetError(Status.MALFORMED_REQUEST, "truncated property key length")
        (key_len,) = unpack_key_length(blob, offset)
        offset += 2
        if offset + key_len + 5 > end:
            raise MessageSetError(Status.MALFORMED_REQUEST, "truncated property key")
        try:
            key = str(blob[offset : offset + key_len], "utf-8")
        except UnicodeDecodeError:
            raise MessageSetError(Status.MALFORMED_REQUEST, "a property key is not UTF-8") from None
        offset += key_len
        kind, value_len = unpack_value_head(blob, offset)
        offset += 5
        value_end = offset + value_len
        if value_end > end:
            raise MessageSetError(Status.MALFORMED_REQUEST, "truncated property value")
        if kind == TYPE_STRING:
            try:
                properties[key] = str(blob[offset:value_end], "utf-8")
            except UnicodeDecodeError:
                raise MessageSetError(
                    Status.MALFORMED_REQUEST, "a property's string value is not UTF-8"
                ) from None
        elif kind == TYPE_INT and value_len == 8:
            properties[key] = _INT64.unpack_from(blob, offset)[0]
        elif kind == TYPE_FLOAT and value_len == 8:
            properties[key] = _FLOAT64.unpack_from(blob, offset)[0]
        else:
            properties[key] = _typed(kind, bytes(blob[offset:value_end]))
        offset = value_end
    return properties


KEY_RULE = "a message key is at least one byte (bytes, or str sent as UTF-8); None publishes without one"


def key_bytes(key) -> bytes:
    """A message key as it travels: bytes as they are, str as UTF-8, None as b"" (no
    key). An empty key is refused (InvalidKey, a ValueError): a key is at least one
    byte (None: no key)."""
    if key is None:
        return b""
    if isinstance(key, str):
        key = key.encode("utf-8")
    elif not isinstance(key, bytes | bytearray | memoryview):
        raise TypeError(f"a message key is bytes or str, not {type(key).__name__}")
    if not key:
        raise InvalidKey(message=f"an empty key: {KEY_RULE}")
    return bytes(key)


def encode_message_set(payloads, properties=None, keys=None) -> bytes:
    """Encode payloads (a sequence of bytes), optional per-message property maps (values
    bytes, or typed: str, int, float, bool) and optional per-message keys (bytes, str or
    None). A set without keys and with bytes-valued properties, or none, is encoded as
    it always was."""
    count = len(payloads)
    if count == 0:
        raise ValueError("a message set holds at least one message")
    if keys is None and (properties is None or not any(properties)):
        parts = [_SET_HEADER.pack(SET_VERSION, 0, count), _u32_array(map(len, payloads)).tobytes()]
        parts.extend(payloads)
        return b"".join(parts)
    flags = 0
    arrays = [_u32_array(map(len, payloads)).tobytes()]
    tails = []
    if properties is not None and any(properties):
        if len(properties) != count:
            raise ValueError("one properties mapping (or None) per payload")
        flags |= FLAG_PROPERTIES
        try:
            blobs = [_untyped_blob(p) for p in properties]
        except _NotBytes:
            flags |= FLAG_TYPED
            blobs = [encode_typed_properties(p) for p in properties]
        arrays.append(_u32_array(map(len, blobs)).tobytes())
        tails.append(blobs)
    if keys is not None:
        if len(keys) != count:
            raise ValueError("one key (or None) per payload")
        keys = [key_bytes(key) for key in keys]
        if any(keys):
            flags |= FLAG_KEYS
            arrays.append(_u32_array(map(len, keys)).tobytes())
            tails.append(keys)
    parts = [_SET_HEADER.pack(SET_VERSION, flags, count), *arrays]
    parts.extend(payloads)
    for tail in tails:
        parts.extend(tail)
    return b"".join(parts)


class MessageSetLayout:
    """Where each message of an encoded message set lies; parsed once per set. A set
    without keys or typed properties has no `key_offsets` (None) and is not `typed`."""

    __slots__ = ("count", "payload_offsets", "property_offsets")
    key_offsets = None
    typed = False

    def __init__(self, count, payload_offsets, property_offsets):
        self.count = count
        # offsets[i]..offsets[i+1] is message i; len(offsets) == count + 1
        self.payload_offsets = payload_offsets
        self.property_offsets = property_offsets


class ExtendedSetLayout(MessageSetLayout):
    """The layout of a set with keys (`key_offsets`: message i's key is
    key_offsets[i]..key_offsets[i+1], empty for none) or typed properties (`typed`)."""

    __slots__ = ("key_offsets", "typed")

    def __init__(self, count, payload_offsets, property_offsets, key_offsets, typed: bool):
        super().__init__(count, payload_offsets, property_offsets)
        self.key_offsets = key_offsets
        self.typed = typed


def _read_lengths(buf, offset: int):
    """Read the header and length arrays of a set without keys or typed properties:
    (count, payload lengths, property lengths or None, where the payload bytes begin).
    KeyError for a set of any other flags (see _PLAIN_SETS)."""
    end = len(buf)
    if end - offset < _SET_HEADER.size:
        raise MessageSetError(Status.MALFORMED_REQUEST, "message set shorter than its header")
    version, flags, count = _SET_HEADER.unpack_from(buf, offset)
    if version != SET_VERSION:
        raise MessageSetError(Status.MALFORMED_REQUEST, f"unknown message set version {version}")
    if count == 0:
        raise MessageSetError(Status.MALFORMED_REQUEST, "empty message set")
    has_properties = _PLAIN_SETS[flags]
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


def read_extended(read, *args):
    """read(*args) for a set _read_lengths (or plain_set_layout) left with a KeyError:
    what it raises is not chained to that KeyError, which is no error."""
    try:
        return read(*args)
    except MessageSetError as e:
        e.__suppress_context__ = True
        raise


def length_arrays(flags: int) -> int:
    """How many u32 arrays of lengths a set with these flags has (payloads, properties,
    keys)."""
    return 1 + bool(flags & FLAG_PROPERTIES) + bool(flags & FLAG_KEYS)


def _read_extended_lengths(buf, offset: int):
    """Read the header and length arrays of any set: (flags, count, payload lengths,
    property lengths or None, key lengths or None, where the payload bytes begin)."""
    end = len(buf)
    if end - offset < _SET_HEADER.size:
        raise MessageSetError(Status.MALFORMED_REQUEST, "message set shorter than its header")
    version, flags, count = _SET_HEADER.unpack_from(buf, offset)
    if version != SET_VERSION:
        raise MessageSetError(Status.MALFORMED_REQUEST, f"unknown message set version {version}")
    if count == 0:
        raise MessageSetError(Status.MALFORMED_REQUEST, "empty message set")
    if flags & ~SET_FLAGS:
        raise MessageSetError(Status.MALFORMED_REQUEST, f"unknown message set flags {flags:#x}")
    if flags & FLAG_TYPED and not flags & FLAG_PROPERTIES:
        raise MessageSetError(
            Status.MALFORMED_REQUEST, "message set flags say typed properties but no properties"
        )
    position = offset + _SET_HEADER.size
    if end - position < 4 * count * length_arrays(flags):
        raise MessageSetError(Status.MALFORMED_REQUEST, "message set truncated in its length arrays")
    payload_lengths = read_u32_array(buf, position, count)
    position += 4 * count
    property_lengths = key_lengths = None
    if flags & FLAG_PROPERTIES:
        property_lengths = read_u32_array(buf, position, count)
        position += 4 * count
    if flags & FLAG_KEYS:
        key_lengths = read_u32_array(buf, position, count)
        position += 4 * count
    return flags, count, payload_lengths, property_lengths, key_lengths, position


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
    if position == end:  # (what _walked_whole says, inline: every set with properties runs it)
        starts.append(end)
        if set(starts).issuperset(accumulate(property_lengths, initial=blobs_at)):
            try:
                b"\0".join(keys).decode("utf-8")
            except UnicodeDecodeError:
                pass
            else:
                return
    _raise_property_error(buf, blobs_at, property_lengths, decode_properties)


def _walked_whole(position: int, end: int, starts: list, texts: list, blobs_at: int, lengths) -> bool:
    """Whether a walk over the pairs of all blobs found them whole and their text UTF-8:
    it ended at the end of the buffer, every blob boundary is a pair boundary, and the
    texts joined by NUL (a byte no multi-byte sequence holds) decode, in one call."""
    if position != end:
        return False
    starts.append(end)
    if not set(starts).issuperset(accumulate(lengths, initial=blobs_at)):
        return False
    try:
        b"\0".join(texts).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _check_typed_properties(buf, blobs_at: int, property_lengths) -> None:
    """_check_properties for typed blobs: the same one walk, which also checks each
    value's type and size (8 bytes for int and float, 1 for a bool of 0 or 1) and
    decodes the keys and string values together, in one call."""
    end = len(buf)
    starts = []
    texts = []
    position = blobs_at
    unpack_key_length = _PROP_KEY.unpack_from
    unpack_value = _TYPED_VALUE.unpack_from
    fixed_sizes = _FIXED_SIZES
    try:
        while position < end:
            starts.append(position)
            key_at = position + 2
            type_at = key_at + unpack_key_length(buf, position)[0]
            texts.append(buf[key_at:type_at])
            kind, value_length = unpack_value(buf, type_at)
            value_at = type_at + 5
            position = value_at + value_length
            if kind == TYPE_STRING:
                texts.append(buf[value_at:position])
            elif kind != TYPE_BYTES and (
                fixed_sizes.get(kind) != value_length or (kind == TYPE_BOOL and buf[value_at] > 1)
            ):
                position = -1
                break
    except (struct.error, IndexError):
        position = -1  # a length runs past the end of the buffer
    if not _walked_whole(position, end, starts, texts, blobs_at, property_lengths):
        _raise_property_error(buf, blobs_at, property_lengths, decode_typed_properties)


def _raise_property_error(buf, blobs_at: int, property_lengths, decode) -> None:
    """Name the first message whose properties do not decode (the reason a reader gets)."""
    offsets = list(accumulate(property_lengths, initial=blobs_at))
    for index in range(len(property_lengths)):
        try:
            decode(buf[offsets[index] : offsets[index + 1]])
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
    try:
        count, payload_lengths, property_lengths, position = _read_lengths(buf, offset)
    except KeyError:  # keys or typed properties (or flags no set has)
        return read_extended(_validate_extended_set, buf, offset, max_message_bytes)
    total = sum(payload_lengths)
    properties_total = 0
    if property_lengths is not None:
        properties_total = sum(property_lengths)
        total += properties_total
    if position + total != len(buf):
        raise MessageSetError(
            Status.MALFORMED_REQUEST,
            f"message set lengths add up to {position + total - offset} bytes but it has {len(buf) - offset}",
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


def _validate_extended_set(buf, offset: int, max_message_bytes: int | None) -> int:
    """validate_message_set of a set with keys or typed properties: the same checks
    over its three arrays, a typed blob's values checked too. Keys are any bytes."""
    flags, count, payload_lengths, property_lengths, key_lengths, position = _read_extended_lengths(
        buf, offset
    )
    payloads_total = sum(payload_lengths)
    properties_total = sum(property_lengths) if property_lengths is not None else 0
    keys_total = sum(key_lengths) if key_lengths is not None else 0
    total = payloads_total + properties_total + keys_total
    if position + total != len(buf):
        raise MessageSetError(
            Status.MALFORMED_REQUEST,
            f"message set lengths add up to {position + total - offset} bytes but it has {len(buf) - offset}",
        )
    if max_message_bytes is not None:
        sizes = payload_lengths
        for lengths in (property_lengths, key_lengths):
            if lengths is not None:
                sizes = map(int.__add__, sizes, lengths)
        largest = max(sizes)
        if largest > max_message_bytes:
            raise MessageSetError(
                Status.MESSAGE_TOO_LARGE,
                f"a message of {largest} bytes exceeds the limit of {max_message_bytes}",
            )
    if properties_total:
        blobs_at = position + payloads_total
        blobs = memoryview(buf)[: blobs_at + properties_total]  # (the walk ends where the keys begin)
        check = _check_typed_properties if flags & FLAG_TYPED else _check_properties
        check(blobs, blobs_at, property_lengths)
    return count


def plain_set_layout(buf, offset: int = 0) -> MessageSetLayout:
    """parse_message_set of a set without keys or typed properties; KeyError for any
    other (parse_message_set reads them): what a decoder calls first, so that such a set
    costs what it always did."""
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


def parse_message_set(buf, offset: int = 0) -> MessageSetLayout:
    """Locate every message of a (validated) message set, for decoding: a
    MessageSetLayout, an ExtendedSetLayout for a set with keys or typed properties."""
    try:
        return plain_set_layout(buf, offset)
    except KeyError:
        return read_extended(extended_set_layout, buf, offset)


def extended_set_layout(buf, offset: int = 0) -> ExtendedSetLayout:
    flags, count, payload_lengths, property_lengths, key_lengths, position = _read_extended_lengths(
        buf, offset
    )
    payload_offsets = list(accumulate(payload_lengths, initial=position))
    data_end = payload_offsets[-1]
    property_offsets = key_offsets = None
    if property_lengths is not None:
        property_offsets = list(accumulate(property_lengths, initial=data_end))
        data_end = property_offsets[-1]
    if key_lengths is not None:
        key_offsets = list(accumulate(key_lengths, initial=data_end))
        data_end = key_offsets[-1]
    if data_end != len(buf):
        raise MessageSetError(Status.MALFORMED_REQUEST, "message set lengths do not match its size")
    return ExtendedSetLayout(count, payload_offsets, property_offsets, key_offsets, bool(flags & FLAG_TYPED))


def named_properties(blob, names, typed: bool) -> dict:
    """The properties of a blob whose names are in `names` (a mapping of each name's
    UTF-8 bytes to its str): every other value is stepped over, not decoded; a typed
    blob's 8-byte numbers and strings are read in place. MessageSetError if the blob
    does not decode (as decode_properties and decode_typed_properties raise it)."""
    found = {}
    offset = 0
    end = len(blob)
    head = 5 if typed else 4
    unpack_key_length = _PROP_KEY.unpack_from
    try:
        while offset < end:
            key_at = offset + 2
            head_at = key_at + unpack_key_length(blob, offset)[0]
            if typed:
                kind, value_length = _TYPED_VALUE.unpack_from(blob, head_at)
            else:
                (value_length,) = _PROP_VALUE.unpack_from(blob, head_at)
            value_at = head_at + head
            offset = value_at + value_length
            if offset > end:
                raise MessageSetError(Status.MALFORMED_REQUEST, "truncated property value")
            name = names.get(blob[key_at:head_at])
            if name is None:
                continue
            if not typed:
                found[name] = bytes(blob[value_at:offset])
            elif kind == TYPE_INT and value_length == 8:
                found[name] = _INT64.unpack_from(blob, value_at)[0]
            elif kind == TYPE_STRING:
                found[name] = str(blob[value_at:offset], "utf-8")
            elif kind == TYPE_FLOAT and value_length == 8:
                found[name] = _FLOAT64.unpack_from(blob, value_at)[0]
            else:
                found[name] = _typed(kind, bytes(blob[value_at:offset]))
    except (struct.error, UnicodeDecodeError):
        raise MessageSetError(Status.MALFORMED_REQUEST, "properties do not decode") from None
    return found


def properties_and_keys(buf, offset: int = 0, names=None, start: int = 0, stop=None, layout=None) -> tuple:
    """(properties, keys) of messages [start, stop) (every message by default) of a
    plain (uncompressed) set: a dict each ({} for none; values as published) and a key
    each (bytes, or None): what a selector reads, without making Messages. With `names`
    (str), only those properties are decoded (a selector's: Selector.properties).
    `layout`: the set's parse_message_set, when the caller reads it a part at a time."""
    if layout is None:
        layout = parse_message_set(buf, offset)
    view = buf if isinstance(buf, bytes) else bytes(buf)
    if stop is None or stop > layout.count:
        stop = layout.count
    indexes = range(start, stop)
    offsets = layout.property_offsets
    if offsets is None:
        properties = [{} for _ in indexes]
    elif names is not None:
        wanted = {name.encode("utf-8"): name for name in names}
        typed = layout.typed
        properties = [
            named_properties(view[offsets[i] : offsets[i + 1]], wanted, typed) if wanted else {}
            for i in indexes
        ]
    else:
        decode = decode_typed_properties if layout.typed else decode_properties
        properties = [
            decode(view[offsets[i] : offsets[i + 1]]) if offsets[i] != offsets[i + 1] else {} for i in indexes
        ]
    key_offsets = layout.key_offsets
    if key_offsets is None:
        return properties, [None] * len(indexes)
    return properties, [view[key_offsets[i] : key_offsets[i + 1]] or None for i in indexes]


def message_set_count(buf, offset: int = 0) -> int:
    """The number of messages, read from the header alone."""
    return _SET_HEADER.unpack_from(buf, offset)[2]


def select_messages(buf, offset: int, indexes) -> bytes:
    """A plain (uncompressed) set of the messages of `buf` (a plain set at `offset`) at
    `indexes` (ascending), each with its payload, properties and key exactly as stored:
    what compaction keeps of a set."""
    layout = parse_message_set(buf, offset)
    view = buf if isinstance(buf, bytes) else bytes(buf)
    flags = view[offset + 1] & SET_FLAGS
    columns = [layout.payload_offsets]
    if layout.property_offsets is not None:
        columns.append(layout.property_offsets)
    if layout.key_offsets is not None:
        columns.append(layout.key_offsets)
    parts = [_SET_HEADER.pack(SET_VERSION, flags, len(indexes))]
    for offsets in columns:
        parts.append(_u32_array(offsets[i + 1] - offsets[i] for i in indexes).tobytes())
    for offsets in columns:
        parts.extend(view[offsets[i] : offsets[i + 1]] for i in indexes)
    return b"".join(parts)


def message_keys(buf, offset: int = 0) -> list:
    """The key of every message of a plain set (bytes, or None for none)."""
    layout = parse_message_set(buf, offset)
    key_offsets = layout.key_offsets
    if key_offsets is None:
        return [None] * layout.count
    view = buf if isinstance(buf, bytes) else bytes(buf)
    return [view[key_offsets[i] : key_offsets[i + 1]] or None for i in range(layout.count)]
