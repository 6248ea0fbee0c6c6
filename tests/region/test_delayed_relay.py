"""Delayed messages between regions, real hub processes on 127.0.0.1: a relay sends a
delayed message on at once with its absolute time, and the region it reaches delays it
for its own subscriptions (docs/protocol.md, "Delayed delivery and expiry")."""

import time

from hedwig.client import Client
from hedwig.protocol.schedule import DELIVER_AT
from tests.region import test_compressed_relay
from tests.region.hubs import wait_for_interest

SHAPE = test_compressed_relay.SHAPE
tree = test_compressed_relay.tree  # the fixture: a root region and a leaf region


def test_a_relayed_delayed_message_keeps_its_time_and_does_not_hold_back_the_next(tree):
    topic = "delayed-across"
    workers = tree["root"].client().subscribe(topic, "workers", kind="shared", start="earliest")
    tree["leaf"].client().subscribe(topic, "local", start="earliest")  # (both ways wanted)
    wait_for_interest(tree, SHAPE, topic)
    with Client(tree["leaf"].address) as publisher:
        publisher.publish(topic, b"later", deliver_after=2.0)
        publisher.publish(topic, b"now")
        (published,) = publisher.read(topic, 1, 1)
    first = workers.receive(timeout=30)
    assert first.payload == b"now", "the relay did not hold the next message back behind the delayed one"
    workers.ack(first)
    second = workers.receive(timeout=30)
    arrived = time.time() * 1000
    assert second.payload == b"later" and second.origin_region == "leaf"
    assert second.properties[DELIVER_AT] == published.properties[DELIVER_AT], "the same absolute time"
    assert arrived >= second.properties[DELIVER_AT], "delayed in the region it reached"
    workers.ack(second)
