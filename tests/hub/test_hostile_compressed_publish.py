"""Hostile compressed message sets against a real hub process over a raw socket: a bomb,
garbage, wrong and unknown codec bits and a compressed set whose plain form is invalid
are each refused with MALFORMED_REQUEST or MESSAGE_TOO_LARGE and a sentence saying why,
take no seq-id, and leave the connection and the topic as they were: a good compressed
set published next is stored and every subscriber reads it."""

import struct

import pytest
import zstandard

from hedwig.client import Client
from hedwig.protocol import Op, Status, encode_frame, encode_message_set
from hedwig.protocol.compression import Codec, compress_message_set
from hedwig.protocol.requests import encode_publish
from tests.hub import test_hostile_publish
from tests.protocol.test_messageset_validation import raw_set

peer = test_hostile_publish.peer  # the fixture: a raw socket to the hub, after HELLO
PLAIN = encode_message_set([b"a" * 500, b"b" * 500])


def _with_codec_bits(message_set: bytes, number: int) -> bytes:
    return bytes([message_set[0], (message_set[1] & ~0x0E) | (number << 1)]) + message_set[2:]


def _bomb(stated: int, holds: int) -> bytes:
    """Two messages' header, a stated plain length, a zstd frame of `holds` zero bytes that
    does not state its size (so only the bound given stops it)."""
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(PLAIN[6:] + bytes(holds))
    return struct.pack("!BBII", 1, Codec.ZSTD << 1, 2, stated) + frame


HOSTILE = {
    # (set, status, words of the reason)
    "bomb-over-the-frame-limit": (
        struct.pack("!BBII", 1, Codec.ZSTD << 1, 2, 1 << 31)
        + zstandard.ZstdCompressor().compress(bytes(1 << 28)),
        Status.MESSAGE_TOO_LARGE,
        "exceeds the limit",
    ),
    "bomb-past-its-stated-size": (_bomb(len(PLAIN) - 6, 256 << 20), Status.MALFORMED_REQUEST, "zstd frame"),
    "garbage": (
        struct.pack("!BBII", 1, Codec.LZ4 << 1, 2, len(PLAIN) - 6) + b"no lz4 frame here",
        Status.MALFORMED_REQUEST,
        "lz4 frame does not decompress",
    ),
    "zstd-marked-gzip": (
        _with_codec_bits(compress_message_set(PLAIN, "zstd"), Codec.GZIP),
        Status.MALFORMED_REQUEST,
        "gzip frame",
    ),
    "unknown-codec": (
        _with_codec_bits(compress_message_set(PLAIN, "zstd"), 6),
        Status.MALFORMED_REQUEST,
        "unknown compression codec 6",
    ),
    "bad-properties-inside": (
        compress_message_set(raw_set([b"a"], [b"\x00\x09k\x00\x00\x00\x01v"]), "gzip"),
        Status.MALFORMED_REQUEST,
        "propert",
    ),
    "more-than-its-messages-may-hold": (
        compress_message_set(encode_message_set([bytes(2 << 20)]), "zstd"),
        Status.MESSAGE_TOO_LARGE,
        "more than 1 messages of at most 1048576 bytes",
    ),
    "a-message-over-the-limit-inside": (
        compress_message_set(encode_message_set([bytes((1 << 20) + 1), b"x"]), "lz4"),
        Status.MESSAGE_TOO_LARGE,
        "a message of 1048577 bytes exceeds the limit",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_compressed_set_is_refused_and_the_topic_stays_readable(hub, peer, case):
    topic = f"hostile-compressed-{case}"
    message_set, status, reason = HOSTILE[case]
    with Client(hub.address) as client:
        early = client.subscribe(topic, "early", start="earliest")
        peer.send(encode_frame(Op.PUBLISH, 2, encode_publish(topic, message_set)))
        request_id, refused = peer.response()
        assert (request_id, refused.status) == (2, status), refused
        assert reason in refused.message
        good = compress_message_set(encode_message_set([b"fine", b"too"], [{"k": b"v"}, None]), "zstd")
        peer.send(encode_frame(Op.PUBLISH, 3, encode_publish(topic, good)))
        request_id, stored = peer.response()
        assert (request_id, stored.status, stored.value.first_seq) == (3, Status.SUCCESS, 1)
        got = [early.receive(timeout=10) for _ in range(2)]
        assert [(m.seq, m.payload, m.properties) for m in got] == [(1, b"fine", {"k": b"v"}), (2, b"too", {})]
        late = client.subscribe(topic, "late", start="earliest")
        assert [late.receive(timeout=10).payload for _ in range(2)] == [b"fine", b"too"]
        assert [m.payload for m in client.read(topic, 1)] == [b"fine", b"too"]
