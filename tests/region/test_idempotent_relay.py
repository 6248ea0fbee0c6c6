"""Idempotently published entries between regions, real hub processes on 127.0.0.1: an
entry's header carries its producer id and sequence in the region it was published in
(its idempotence is that region's); a relay sends it up and down as any other entry,
and the neighbour stores it as a relayed entry of its own, without them.

Relayed verbatim, such an entry was refused by the parent (a relayed entry with its
producer flag set), the link dropped, and re-reading from the same entry refused it
again: every topic's relaying up that link stopped for good."""

from hedwig.client import Client
from hedwig.protocol.entry import decode_entry_header
from tests.region import test_compressed_relay
from tests.region.hubs import wait_for_interest, wait_until

SHAPE = test_compressed_relay.SHAPE
tree = test_compressed_relay.tree  # the fixture: a root region and a leaf region


def test_an_idempotent_publish_is_relayed_both_ways_and_the_link_goes_on(tree):
    topic = "idempotent-across"
    at_root = tree["root"].client().subscribe(topic, "root-app", start="earliest")
    at_leaf = tree["leaf"].client().subscribe(topic, "leaf-app", start="earliest")
    wait_for_interest(tree, SHAPE, topic)
    for name, receivers in (("leaf", (at_root, at_leaf)), ("root", (at_leaf, at_root))):
        with Client(tree[name].address, idempotent=True) as publisher:
            publisher.publish_many(topic, [f"{name}-{i}".encode() for i in range(3)])
        for subscription in receivers:
            got = [subscription.receive(timeout=30) for _ in range(3)]
            assert [(m.payload, m.origin_region) for m in got] == [
                (f"{name}-{i}".encode(), name) for i in range(3)
            ]
    # The relayed copies are stored without the producer of the region they came from.
    wait_until(lambda: tree["root"].last_seq(topic) == 6, "root stored both publishes")
    with Client(tree["root"].address) as reader:
        headers = [decode_entry_header(entry) for _, _, entry in reader.read_range(topic, 1).entries]
    assert [(h.origin_region, h.via, h.producer_id != 0) for h in headers] == [
        ("leaf", "leaf", False),
        ("root", "", True),
    ]
    # ... and the link goes on relaying what follows, up and down.
    with Client(tree["leaf"].address) as publisher:
        publisher.publish(topic, b"after")
    assert at_root.receive(timeout=30).payload == b"after"
