"""The largest publish a hub takes crosses regions, real hub processes on 127.0.0.1: a
PUBLISH whose frame is exactly `[hub] max_frame_bytes` makes an entry that a
RELAY_PUBLISH carries with its header, range and entry header besides, a few dozen bytes
more than that limit. The parent takes such a frame on a region link.

Refused as too large, the link was closed, and the child re-sent the same entry on
every reconnect: every topic's relaying up that link stopped for good."""

from hedwig.client import Client
from hedwig.config.settings import HubSettings
from hedwig.protocol import encode_message_set
from hedwig.protocol.entry import decode_entry, encode_entry_header
from hedwig.protocol.framing import FRAME_HEADER_SIZE
from hedwig.protocol.messageset import message_set_count
from tests.region import test_compressed_relay
from tests.region.hubs import wait_for_interest

SHAPE = test_compressed_relay.SHAPE
tree = test_compressed_relay.tree  # the fixture: a root region and a leaf region
MIB = 1 << 20


def largest_set(topic: str) -> bytes:
    """A set of 1 MiB messages (the message limit) whose PUBLISH frame is exactly the
    frame limit: length prefix excluded, op and request id, str8 topic, the set."""
    limit = HubSettings().max_frame_bytes
    count = limit // MIB
    fixed = (FRAME_HEADER_SIZE - 4) + 1 + len(topic) + 6 + 4 * count
    payloads = [b"x" * MIB] * (count - 1)
    payloads.append(b"y" * (limit - fixed - MIB * (count - 1)))
    message_set = encode_message_set(payloads)
    assert (FRAME_HEADER_SIZE - 4) + 1 + len(topic) + len(message_set) == limit
    return message_set


def test_a_publish_of_the_largest_frame_is_relayed_up_and_the_link_goes_on(tree):
    topic = "largest-across"
    message_set = largest_set(topic)
    at_root = tree["root"].client().subscribe(topic, "root-app", start="earliest")
    tree["leaf"].client().subscribe(topic, "leaf-app", start="earliest")
    wait_for_interest(tree, SHAPE, topic)
    with Client(tree["leaf"].address) as publisher:
        seqs = publisher.publish_set(topic, message_set)
        publisher.publish(topic, b"after")
    got = []
    while len(got) < len(seqs) + 1:
        message = at_root.receive(timeout=60)
        assert message is not None, f"root received {len(got)} of {len(seqs) + 1} messages"
        got.append(message)
    assert [m.seq for m in got] == list(range(1, len(seqs) + 2))
    assert [bytes(m.payload) for m in got[:-1]] == [bytes(m.payload) for m in decoded(message_set)]
    assert (got[-1].payload, got[-1].origin_region) == (b"after", "leaf")


def decoded(message_set):
    return decode_entry(
        "t", encode_entry_header(1, message_set_count(message_set), 0, b"leaf", 1) + message_set
    )
