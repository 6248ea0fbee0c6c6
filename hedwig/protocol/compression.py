"""Compressed message sets: a publisher's choice, stored and delivered as it came.

A publisher may compress a message set. Its header keeps the plain set's version, count
and flag bits (properties, keys, typed properties); bits 1-3 of the flags byte name the
codec (Kafka's numbers), and everything after the plain set's header (the length arrays,
payloads, properties blobs and keys) travels as one frame of that codec, behind its
length when decompressed:

    u8  version (1)
    u8  flags               bits 0, 4, 5: the plain set's (messageset.py); bits 1-3: codec
                            (0 none, 1 gzip, 3 lz4, 4 zstd; 2 and 5-7 are refused)
    u32 count
    u32 plain_length        bytes the frame decompresses to
    codec frame             gzip member (RFC 1952), LZ4 frame, or zstd frame

Decompressing gives the plain set exactly: its header with the codec bits cleared, then
those plain_length bytes. A set without codec bits is today's set, byte for byte.

The hub never re-encodes a set. It decompresses a compressed one once, at publish (and
at a relayed entry's check), to validate the plain set as it validates any set; it
refuses the set before decompressing anything when plain_length is over what the
messages may hold (a compression bomb), and decompresses with plain_length as the most
it will produce (never unbounded). Subscribers decompress each entry once, when they
decode it.

The codecs are C libraries behind optional extras: gzip is the standard library's zlib;
zstd needs `zstandard` and lz4 `lz4`, both in the `compression` extra
(`make extras EXTRAS=compression` in a checkout; hedwig.config.extras). A missing one is
CompressionUnavailable, an ImportError naming the extra, raised where the codec is first
asked for.
"""

import struct
import zlib
from enum import IntEnum

from hedwig.protocol.messageset import (
    FLAG_KEYS,
    ONE_MESSAGE_HEADER,
    SET_VERSION,
    MessageSetError,
    encode_message_set,
    length_arrays,
    message_keys,
    validate_message_set,
)
from hedwig.protocol.status import Status

CODEC_SHIFT = 1
CODEC_MASK = 0x0E  # flags bits 1-3
COMPRESSION_EXTRA = "compression"
# The plain size a compressed set may claim when its checker is given no limit: the
# hub's default frame limit, the most an uncompressed PUBLISH could carry.
DEFAULT_MAX_PLAIN_SET_BYTES = 16 * 1024 * 1024

_SET_HEADER = struct.Struct("!BBI")
_COMPRESSED_HEADER = struct.Struct("!BBII")  # version, flags, count, plain_length
COMPRESSED_HEADER_SIZE = _COMPRESSED_HEADER.size


class Codec(IntEnum):
    """The codec of a message set, as bits 1-3 of its flags byte hold it."""

    NONE = 0
    GZIP = 1
    LZ4 = 3
    ZSTD = 4


CODECS_BY_NAME = {"gzip": Codec.GZIP, "lz4": Codec.LZ4, "zstd": Codec.ZSTD}
CODEC_NAMES = {codec: name for name, codec in CODECS_BY_NAME.items()}
_MODULES = {Codec.LZ4: "lz4", Codec.ZSTD: "zstandard"}


class CompressionUnavailable(ImportError):
    """A codec whose library is not installed; the message names the extra to install."""


def _library(codec: Codec):
    """The module implementing `codec` (imported on first use: the extras are optional)."""
    try:
        if codec is Codec.ZSTD:
            import zstandard

            return zstandard
        import lz4.frame

        return lz4.frame
    except ImportError:
        from hedwig.config.extras import install_hint

        raise CompressionUnavailable(
            f"{CODEC_NAMES[codec]} compression needs the {_MODULES[codec]!r} package: "
            f"install hedwig's {COMPRESSION_EXTRA!r} extra ({install_hint(COMPRESSION_EXTRA)})"
        ) from None


def codec_named(name) -> Codec:
    """The codec for a client's `compression` argument ("zstd", "lz4", "gzip" or None),
    checked to be usable here: CompressionUnavailable if its library is missing,
    ValueError for a name that is none of them."""
    if name is None or name == "none":
        return Codec.NONE
    if isinstance(name, int):
        codec = Codec(name)  # (ValueError for a number that is no codec)
    else:
        codec = CODECS_BY_NAME.get(name)
        if codec is None:
            raise ValueError(f"unknown compression {name!r}: use one of {', '.join(CODECS_BY_NAME)} or None")
    if codec in _MODULES:
        _library(codec)
    return codec


def set_codec(buf, offset: int = 0) -> int:
    """The codec number in a message set's flags byte (0: not compressed)."""
    return (buf[offset + 1] & CODEC_MASK) >> CODEC_SHIFT


# -- compressing ------------------------------------------------------------------------------


def _compress(codec: Codec, data) -> bytes:
    if codec is Codec.ZSTD:
        return _library(codec).ZstdCompressor(level=3).compress(data)
    if codec is Codec.LZ4:
        return _library(codec).compress(data, store_size=True)
    return zlib.compress(data, 6, wbits=31)  # a gzip member


def compress_message_set(message_set, codec) -> bytes:
    """The compressed form of a plain (encoded, uncompressed) message set; the set
    itself, unchanged, for Codec.NONE / None."""
    codec = codec_named(codec)
    if codec is Codec.NONE:
        return message_set
    version, flags, count = _SET_HEADER.unpack_from(message_set, 0)
    if flags & CODEC_MASK:
        raise ValueError("the message set is compressed already")
    rest = memoryview(message_set)[_SET_HEADER.size :]
    return b"".join(
        (
            _COMPRESSED_HEADER.pack(version, flags | (codec << CODEC_SHIFT), count, len(rest)),
            _compress(codec, rest),
        )
    )


# -- decompressing ----------------------------------------------------------------------------


def _malformed(reason: str) -> MessageSetError:
    return MessageSetError(Status.MALFORMED_REQUEST, reason)


def _decompress(codec: Codec, frame, plain_length: int) -> bytes:
    """`frame` decompressed, producing at most `plain_length` bytes; MessageSetError
    unless it is exactly one whole frame of exactly that many."""
    name = CODEC_NAMES[codec]
    try:
        if codec is Codec.ZSTD:
            zstandard = _library(codec)
            # A frame that states its size is decompressed into that size, whatever the
            # bound given: check the statement before anything is allocated.
            stated = zstandard.frame_content_size(frame)
            if stated not in (plain_length, zstandard.CONTENTSIZE_UNKNOWN):
                raise _malformed(f"its zstd frame holds {stated} bytes, its header says {plain_length}")
            plain = zstandard.ZstdDecompressor().decompress(
                frame, max_output_size=plain_length, allow_extra_data=False
            )
            whole = True
        elif codec is Codec.LZ4:
            decompressor = _library(codec).LZ4FrameDecompressor()
            plain = decompressor.decompress(frame, max_length=plain_length)
            whole = decompressor.eof and not decompressor.unused_data
        else:
            decompressor = zlib.decompressobj(wbits=31)
            plain = decompressor.decompress(frame, plain_length)
            whole = decompressor.eof and not decompressor.unconsumed_tail and not decompressor.unused_data
    except (MessageSetError, CompressionUnavailable):
        raise
    except Exception as e:  # each library has its own error types for a bad frame
        raise _malformed(f"its {name} frame does not decompress: {e}") from None
    if len(plain) != plain_length or not whole:
        raise _malformed(f"its {name} frame is not one frame of the {plain_length} bytes its header says")
    return plain


def _compressed_header(buf, offset: int):
    """(codec, version, flags without codec bits, count, plain_length) of a set whose
    flags name a codec; MessageSetError for an unknown codec or a short header."""
    codec_number = set_codec(buf, offset)
    try:
        codec = Codec(codec_number)
    except ValueError:
        raise _malformed(
            f"unknown compression codec {codec_number} in message set flags {buf[offset + 1]:#x}"
        ) from None
    if len(buf) - offset < _COMPRESSED_HEADER.size:
        raise _malformed("compressed message set shorter than its header")
    version, flags, count, plain_length = _COMPRESSED_HEADER.unpack_from(buf, offset)
    flags &= ~CODEC_MASK
    # (Also what keeps every bound given to a codec above 0, which zlib reads as "none".)
    if plain_length < 4 * count * length_arrays(flags) or count == 0:
        raise _malformed(f"a compressed set of {count} messages cannot decompress to {plain_length} bytes")
    return codec, version, flags, count, plain_length


def decompress_message_set(buf, offset: int = 0) -> bytes:
    """The plain message set of a compressed one at `offset` (to the end of `buf`),
    decompressing at most the size its header states. MessageSetError if it does not
    decompress to that; CompressionUnavailable if its codec's library is missing."""
    codec, version, flags, count, plain_length = _compressed_header(buf, offset)
    frame = memoryview(buf)[offset + _COMPRESSED_HEADER.size :]
    return _SET_HEADER.pack(version, flags, count) + _decompress(codec, frame, plain_length)


def plain_message_set(buf, offset: int = 0):
    """(buffer, offset) of the plain message set at `offset` of `buf`: `buf` itself when
    the set is not compressed (no copy), else its decompressed bytes at 0. What every
    reader of an entry's messages calls first."""
    if len(buf) - offset >= 2 and buf[offset + 1] & CODEC_MASK:
        return decompress_message_set(buf, offset), 0
    return buf, offset


def validate_published_set(
    buf,
    offset: int = 0,
    max_message_bytes: int | None = None,
    max_plain_bytes: int | None = None,
) -> int:
    """validate_message_set for a set as a publisher may send it, compressed or not:
    its message count, or MessageSetError (nothing else) saying why it is refused.

    A compressed set's plain size is checked before anything is decompressed: at most
    `max_plain_bytes` (what an uncompressed PUBLISH could carry: the hub's frame limit)
    and at most what its count of messages of `max_message_bytes` can hold, or
    MESSAGE_TOO_LARGE; then it is decompressed (bounded by that size) and the plain set
    is validated completely, with the compressed header's count, once.

    One plain message without properties (the single-message publish) is checked with
    one unpack here; every other plain set by validate_message_set."""
    if len(buf) - offset >= ONE_MESSAGE_HEADER.size:  # one message without properties: one unpack
        version, flags, count, length = ONE_MESSAGE_HEADER.unpack_from(buf, offset)
        if (
            count == 1
            and version == SET_VERSION
            and not flags
            and offset + ONE_MESSAGE_HEADER.size + length == len(buf)
            and (max_message_bytes is None or length <= max_message_bytes)
        ):
            return 1
    if len(buf) - offset < 2 or not buf[offset + 1] & CODEC_MASK:
        return validate_message_set(buf, offset, max_message_bytes)
    _, version, flags, count, plain_length = _compressed_header(buf, offset)
    if version != SET_VERSION:
        raise _malformed(f"unknown message set version {version}")
    plain_size = _SET_HEADER.size + plain_length
    limit = DEFAULT_MAX_PLAIN_SET_BYTES if max_plain_bytes is None else max_plain_bytes
    if plain_size > limit:
        raise MessageSetError(
            Status.MESSAGE_TOO_LARGE,
            f"a compressed message set that decompresses to {plain_size} bytes exceeds "
            f"the limit of {limit} for a message set",
        )
    if max_message_bytes is not None:
        # Each message's lengths (8 bytes, 12 with keys) and at most max_message_bytes.
        most = _SET_HEADER.size + count * ((12 if flags & FLAG_KEYS else 8) + max_message_bytes)
        if plain_size > most:
            raise MessageSetError(
                Status.MESSAGE_TOO_LARGE,
                f"a compressed message set of {count} messages decompresses to {plain_size} "
                f"bytes, more than {count} messages of at most {max_message_bytes} bytes hold",
            )
    try:
        plain = decompress_message_set(buf, offset)
    except CompressionUnavailable as e:
        raise _malformed(f"this hub cannot read the set: {e}") from None
    return validate_message_set(plain, 0, max_message_bytes)


def encode_published_set(payloads, properties, codec: Codec, keys=None) -> bytes:
    """A client's message set for a PUBLISH: encode_message_set (with `keys`, one per
    payload or None), compressed with `codec` (a Codec from codec_named) unless it is
    Codec.NONE, when it is the plain set."""
    message_set = encode_message_set(payloads, properties, keys)
    return compress_message_set(message_set, codec) if codec else message_set


def check_keyed(buf, offset: int = 0) -> None:
    """A validated set (compressed or not) bound for a compacted topic: every message has
    a key, or MessageSetError (KEY_REQUIRED). A set without the keys flag is refused in
    one byte's look; a compressed one is decompressed for it."""
    message_set, position = plain_message_set(buf, offset)
    if not message_set[position + 1] & FLAG_KEYS:
        raise MessageSetError(Status.KEY_REQUIRED, "a compacted topic takes keyed messages only")
    if None in message_keys(message_set, position):
        raise MessageSetError(
            Status.KEY_REQUIRED, "a compacted topic takes keyed messages only: a message has no key"
        )
