"""Compressed entries between regions, real hub processes on 127.0.0.1: a set compressed
in one region reaches another region's subscriber decompressed, and the other region
stores the publisher's compressed bytes unchanged; RELAY_PUBLISH checks a compressed set
as PUBLISH does (a bomb, garbage, wrong codec bits are refused and break nothing), and a
relayed tail of a compressed entry is stored compressed with the same codec."""

import struct

import pytest
import zstandard

from hedwig.client import Client
from hedwig.protocol import Status, encode_message_set
from hedwig.protocol.compression import Codec, compress_message_set, set_codec
from hedwig.protocol.entry import decode_entry_header
from hedwig.protocol.requests import decode_published
from tests.region import test_hostile_relay
from tests.region.hubs import start_tree, wait_for_interest, wait_until
from tests.region.test_hostile_relay import LinkPeer, relayed

root = test_hostile_relay.root  # the fixture: one region hub for the module
SHAPE = {"root": None, "leaf": "root"}
LINES = [b'{"level":"warn","service":"billing","retry":%d,"msg":"card declined"}' % n for n in range(40)]


def stored_set(address: str, topic: str) -> bytes:
    """The message set of the topic's first stored entry, as READ_RANGE returns it."""
    with Client(address) as client:
        _, _, entry = client.read_range(topic, 1).entries[0]
    return bytes(entry[decode_entry_header(entry).body_offset :])


@pytest.fixture
def tree(tmp_path):
    hubs = start_tree(tmp_path, SHAPE)
    yield hubs
    for hub in hubs.values():
        hub.stop()


def test_a_compressed_set_crosses_regions_unchanged_and_is_read_plain(tree):
    topic = "compressed-across"
    readers = {
        name: hub.client().subscribe(topic, f"app-{name}", start="earliest") for name, hub in tree.items()
    }
    wait_for_interest(tree, SHAPE, topic)
    with Client(tree["leaf"].address, compression="zstd") as publisher:
        publisher.publish_many(topic, LINES)
    for name, subscription in readers.items():
        got = [subscription.receive(timeout=30) for _ in LINES]
        assert [(m.payload, m.origin_region, m.origin_seq) for m in got] == [
            (line, "leaf", n + 1) for n, line in enumerate(LINES)
        ], name
    wait_until(lambda: tree["root"].last_seq(topic) == len(LINES), "root stored the relayed entry")
    sent = stored_set(tree["leaf"].address, topic)
    assert set_codec(sent) == Codec.ZSTD
    assert stored_set(tree["root"].address, topic) == sent  # the publisher's bytes, relayed as they are


# -- RELAY_PUBLISH of hostile and partial compressed entries ------------------------------------

PLAIN = encode_message_set([b"a" * 300, b"b" * 300, b"c" * 300])
HOSTILE = {
    "bomb": (
        struct.pack("!BBII", 1, Codec.ZSTD << 1, 3, 1 << 31)
        + zstandard.ZstdCompressor().compress(bytes(1 << 26)),
        Status.MESSAGE_TOO_LARGE,
    ),
    "garbage": (
        struct.pack("!BBII", 1, Codec.GZIP << 1, 3, len(PLAIN) - 6) + b"not gzip",
        Status.MALFORMED_REQUEST,
    ),
    "zstd-marked-lz4": (
        bytes([1, Codec.LZ4 << 1]) + compress_message_set(PLAIN, "zstd")[2:],
        Status.MALFORMED_REQUEST,
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_compressed_relay_is_refused_and_the_link_goes_on(root, case):
    topic = f"relayed-compressed-{case}"
    message_set, status = HOSTILE[case]
    link = LinkPeer(root.address)
    try:
        link.relay(3, topic, relayed([b"?"] * 3, message_set=message_set), 0, 3)
        request_id, refused, message, _ = link.reply()
        assert (request_id, refused) == (3, status), message
        good = compress_message_set(PLAIN, "lz4")
        link.relay(4, topic, relayed([b"?"] * 3, message_set=good), 0, 3)
        request_id, stored, message, payload = link.reply()
        assert (request_id, stored, tuple(decode_published(payload))) == (4, Status.SUCCESS, (1, 3)), message
        assert stored_set(root.address, topic) == good
    finally:
        link.close()


def test_a_relayed_tail_of_a_compressed_entry_is_stored_compressed(root):
    topic = "relayed-compressed-tail"
    link = LinkPeer(root.address)
    try:
        entry = relayed([b"?"] * 3, message_set=compress_message_set(PLAIN, "gzip"), origin_seq=10)
        link.relay(3, topic, entry, 1, 3)
        request_id, stored, message, payload = link.reply()
        assert (request_id, stored, tuple(decode_published(payload))) == (3, Status.SUCCESS, (1, 2)), message
        assert set_codec(stored_set(root.address, topic)) == Codec.GZIP
        with Client(root.address) as client:
            got = client.read(topic, 1)
        assert [(m.payload, m.origin_seq) for m in got] == [(b"b" * 300, 11), (b"c" * 300, 12)]
    finally:
        link.close()
