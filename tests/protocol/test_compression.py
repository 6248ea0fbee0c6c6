"""Compressed message sets (hedwig/protocol/compression.py): every codec round-trips any
set a client can encode, an uncompressed set is today's bytes, and the hub's check
refuses a hostile compressed set (a bomb, garbage, wrong or unknown codec bits, a frame
that says one size and holds another) with MessageSetError and nothing else, before it
decompresses more than the set says it holds."""

import gzip
import struct
import subprocess
import sys
import zlib

import lz4.frame
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from hedwig.protocol import MessageSetError, Status, decode_entry, encode_entry_header, encode_message_set
from hedwig.protocol.compression import (
    CODECS_BY_NAME,
    Codec,
    CompressionUnavailable,
    codec_named,
    compress_message_set,
    decompress_message_set,
    encode_published_set,
    plain_message_set,
    set_codec,
    validate_published_set,
)
from tests.protocol.test_messageset_validation import raw_set

CODECS = sorted(CODECS_BY_NAME)
MIB = 1 << 20

payloads = st.lists(st.binary(max_size=300), min_size=1, max_size=40)
property_maps = st.one_of(
    st.none(),
    st.dictionaries(st.text(max_size=8), st.binary(max_size=20), max_size=3),
)


def as_entry(message_set: bytes) -> bytes:
    return encode_entry_header(7, struct.unpack_from("!I", message_set, 2)[0], 1, b"here", 7) + message_set


def compressed(codec: Codec, version_flags_count: bytes, plain_length: int, frame: bytes) -> bytes:
    """A compressed set built by hand: a plain header with codec bits, a length, a frame."""
    version, flags, count = struct.unpack("!BBI", version_flags_count)
    return struct.pack("!BBII", version, flags | (codec << 1), count, plain_length) + frame


@given(st.sampled_from(CODECS), payloads, st.data())
def test_every_codec_round_trips_any_set(codec, messages, data):
    properties = data.draw(
        st.one_of(st.none(), st.lists(property_maps, min_size=len(messages), max_size=len(messages)))
    )
    plain = encode_message_set(messages, properties)
    packed = compress_message_set(plain, codec)
    assert set_codec(packed) == CODECS_BY_NAME[codec]
    assert packed[:1] == plain[:1] and packed[2:6] == plain[2:6]  # version and count kept
    assert validate_published_set(packed, 0, MIB, 16 * MIB) == len(messages)
    assert decompress_message_set(packed) == plain
    decoded = decode_entry("t", as_entry(packed))
    assert [m.payload for m in decoded] == messages
    assert [m.properties for m in decoded] == [p or {} for p in (properties or [None] * len(messages))]
    assert [m.seq for m in decoded] == list(range(7, 7 + len(messages)))


@given(payloads)
def test_a_set_without_compression_is_todays_bytes_read_in_place(messages):
    plain = encode_message_set(messages)
    assert encode_published_set(messages, None, codec_named(None)) == plain
    assert compress_message_set(plain, None) is plain
    buf, offset = plain_message_set(plain, 0)
    assert buf is plain and offset == 0


def test_realistic_log_lines_shrink():
    lines = [b'{"level":"info","service":"api","path":"/v1/orders/%d","status":200}' % n for n in range(500)]
    plain = encode_message_set(lines)
    for codec in CODECS:
        assert len(compress_message_set(plain, codec)) * 3 < len(plain), codec


# -- what the hub refuses ---------------------------------------------------------------------

SET = encode_message_set([b"a" * 1000, b"b" * 1000])
REST = SET[6:]


def refused(message_set, max_message_bytes=MIB, max_plain_bytes=16 * MIB) -> MessageSetError:
    with pytest.raises(MessageSetError) as caught:
        validate_published_set(message_set, 0, max_message_bytes, max_plain_bytes)
    return caught.value


def test_a_bomb_over_the_frame_limit_is_refused_before_it_is_decompressed():
    bomb = zstandard.ZstdCompressor().compress(bytes(1 << 30))  # 1 GiB of zeros in ~32 KiB
    error = refused(compressed(Codec.ZSTD, SET[:6], 1 << 30, bomb))
    assert error.status is Status.MESSAGE_TOO_LARGE
    assert "exceeds the limit of" in error.reason


def test_a_set_claiming_more_than_its_messages_may_hold_is_too_large():
    frame = zlib.compress(bytes(10_000), wbits=31)
    error = refused(compressed(Codec.GZIP, SET[:6], 10_000, frame), max_message_bytes=1000)
    assert error.status is Status.MESSAGE_TOO_LARGE
    assert "2 messages of at most 1000 bytes" in error.reason


@pytest.mark.parametrize("codec", CODECS)
def test_a_frame_that_holds_more_than_its_header_says_is_refused_without_inflating_it(codec):
    """A small stated length over a frame of 64 MiB: decompression stops at the length."""
    codec = CODECS_BY_NAME[codec]
    huge = REST + bytes(64 * MIB)
    frame = {
        Codec.GZIP: lambda: gzip.compress(huge),
        Codec.LZ4: lambda: lz4.frame.compress(huge),
        Codec.ZSTD: lambda: zstandard.ZstdCompressor(write_content_size=False).compress(huge),
    }[codec]()
    error = refused(compressed(codec, SET[:6], len(REST), frame))
    assert error.status is Status.MALFORMED_REQUEST


def test_a_zstd_frame_stating_another_size_is_refused_before_allocating_it():
    frame = zstandard.ZstdCompressor().compress(REST + bytes(1 << 28))  # states 256 MiB
    error = refused(compressed(Codec.ZSTD, SET[:6], len(REST), frame))
    assert "header says" in error.reason


@pytest.mark.parametrize("codec", CODECS)
def test_garbage_truncated_and_trailing_frames_are_refused(codec):
    codec = CODECS_BY_NAME[codec]
    good = compress_message_set(SET, codec)
    for hostile in (
        compressed(codec, SET[:6], len(REST), b"\x00garbage that is no frame at all"),
        good[:-5],  # truncated
        good + b"extra",  # a second thing after the frame
        compressed(codec, SET[:6], len(REST) - 1, good[10:]),  # says one byte less
        compressed(codec, SET[:6], len(REST) + 1, good[10:]),  # says one byte more
        good[:6],  # no length
    ):
        error = refused(hostile)
        assert error.status is Status.MALFORMED_REQUEST, hostile


def test_wrong_and_unknown_codec_bits_are_refused():
    zstd = compress_message_set(SET, "zstd")
    as_gzip = bytes([zstd[0], (zstd[1] & ~0x0E) | (Codec.GZIP << 1)]) + zstd[2:]
    assert "gzip frame does not decompress" in refused(as_gzip).reason
    for number in (2, 5, 6, 7):
        unknown = bytes([zstd[0], number << 1]) + zstd[2:]
        assert f"unknown compression codec {number}" in refused(unknown).reason


def test_the_decompressed_set_is_validated_as_any_set():
    bad_properties = raw_set([b"a"], [b"\x00\x09k\x00\x00\x00\x01v"])
    assert "propert" in refused(compress_message_set(bad_properties, "zstd")).reason
    too_big = encode_message_set([b"x" * 2000])
    assert (
        refused(compress_message_set(too_big, "lz4"), max_message_bytes=1000).status
        is Status.MESSAGE_TOO_LARGE
    )
    count_lies = bytearray(compress_message_set(SET, "gzip"))
    count_lies[2:6] = struct.pack("!I", 3)
    assert refused(bytes(count_lies)).status is Status.MALFORMED_REQUEST
    unknown_flag = bytearray(compress_message_set(SET, "gzip"))
    unknown_flag[1] |= 0x40
    assert "unknown message set flags" in refused(bytes(unknown_flag)).reason


def test_a_codec_name_that_is_none_of_them_is_a_value_error():
    with pytest.raises(ValueError, match="unknown compression 'snappy'"):
        codec_named("snappy")


# -- a missing library --------------------------------------------------------------------------

_WITHOUT = """
import sys
sys.modules[{module!r}] = None  # as if the package were not installed
from twisted.internet import reactor
from hedwig.client import Client
from hedwig.client.aio import Client as AioClient
from hedwig.client.twisted import Client as TwistedClient
from hedwig.protocol.compression import CompressionUnavailable, codec_named, validate_published_set
from hedwig.protocol.messageset import MessageSetError
try:
    codec_named({name!r})
except CompressionUnavailable as e:
    print("refused:", e)
for make in (lambda: Client("127.0.0.1:1", compression={name!r}),
             lambda: TwistedClient(reactor, "127.0.0.1:1", compression={name!r}),
             lambda: AioClient("127.0.0.1:1", compression={name!r})):
    try:
        make()
    except CompressionUnavailable as e:
        print("client refused:", e)
try:
    validate_published_set(bytes.fromhex({packed!r}), 0, 1 << 20, 1 << 24)
except MessageSetError as e:
    print("hub refused:", e.status.name, e.reason)
print("gzip still:", codec_named("gzip"))
"""


@pytest.mark.parametrize(("name", "module"), [("zstd", "zstandard"), ("lz4", "lz4.frame")])
def test_a_missing_library_is_an_error_naming_the_extra(name, module):
    """Every client refuses the codec when it is made; a hub without the library refuses
    such a set as MALFORMED_REQUEST saying what it lacks; gzip needs nothing."""
    packed = compress_message_set(SET, name).hex()
    ran = subprocess.run(
        [sys.executable, "-c", _WITHOUT.format(module=module, name=name, packed=packed)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = ran.stdout.splitlines()
    assert lines[0].startswith(f"refused: {name} compression needs the")
    assert "make extras EXTRAS=compression" in lines[0]
    assert len(lines) == 6, ran.stdout
    for line in lines[1:4]:
        assert line.startswith("client refused:") and "EXTRAS=compression" in line
    assert lines[4].startswith("hub refused: MALFORMED_REQUEST this hub cannot read the set")
    assert "EXTRAS=compression" in lines[4]
    assert lines[5] == "gzip still: 1"
    assert issubclass(CompressionUnavailable, ImportError)
