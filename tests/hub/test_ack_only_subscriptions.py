"""Acknowledgement-only subscriptions over a connection (SUBSCRIBE flag bit 2): no DELIVERY
frame ever, CONSUME up to the topic's last seq-id, and held like any attach."""

import pytest

from hedwig.protocol import Op, Status, SubscriptionEvent
from hedwig.protocol.requests import (
    encode_close_subscription,
    encode_consume,
    encode_describe_topic,
    encode_subscribe,
)
from tests.hub.harness import HubHarness


@pytest.fixture
def harness(tmp_path):
    return HubHarness(tmp_path)


def subscribe(peer, clock, topic, subscriber, **options):
    """The SUBSCRIBE response of an acknowledgement-only attach: nothing else may follow."""
    peer.send(Op.SUBSCRIBE, encode_subscribe(topic, subscriber, deliver=False, **options))
    clock.advance(0)
    responses, deliveries, events = peer.split()
    [(_, response)] = responses
    assert deliveries == [] and events == []
    return response


def publish(peer, topic, entries, per_entry=10):
    for _ in range(entries):
        peer.publish(topic, [b"m"] * per_entry)
    assert all(r.status is Status.SUCCESS for _, r in peer.responses())


def row(peer, topic, subscriber):
    peer.send(Op.DESCRIBE_TOPIC, encode_describe_topic(topic))
    [(_, described)] = peer.responses()
    return next(r for r in described.value["subscribers"] if r["subscriber_id"] == subscriber)


def persisted(harness, topic, subscriber):
    return harness.metadata.get_subscription(topic, subscriber).result.value.consumed_seq


def test_no_delivery_ever_and_consume_up_to_the_last_seq_id(harness):
    publisher, drain = harness.connect(), harness.connect()
    publish(publisher, "t", 3)  # 1..30
    response = subscribe(drain, harness.clock, "t", "lake", start="earliest")
    assert response.status is Status.SUCCESS
    assert (response.value.consumed_seq, response.value.next_seq) == (0, 1)
    handle = response.value.handle
    publish(publisher, "t", 2)  # 31..50: a caught-up delivering subscriber would be pushed these
    harness.clock.advance(0)
    drain.send(Op.CONSUME, encode_consume(handle, 25))
    harness.clock.advance(0)
    assert drain.frames() == [], "no DELIVERY, and no reply to a CONSUME that succeeds"
    described = row(drain, "t", "lake")
    assert (described["consumed_seq"], described["backlog"], described["state"]) == (25, 25, "ack_only")
    drain.send(Op.CONSUME, encode_consume(handle, 10_000))
    assert row(drain, "t", "lake")["consumed_seq"] == 50, "capped at the last published seq-id"
    drain.send(Op.CLOSE_SUBSCRIPTION, encode_close_subscription(handle))
    [(_, closed)] = drain.responses()
    assert closed.status is Status.SUCCESS
    assert persisted(harness, "t", "lake") == 50, "close writes the pointer before it answers"
    drain.send(Op.CONSUME, encode_consume(handle, 50))
    [(_, refused)] = drain.responses()
    assert refused.status is Status.CLIENT_NOT_SUBSCRIBED


def test_held_like_any_attach_busy_forced_and_freed_by_disconnect(harness):
    first, second = harness.connect(), harness.connect()
    publish(first, "t", 2)
    handle = subscribe(first, harness.clock, "t", "lake", start="earliest").value.handle
    busy = subscribe(second, harness.clock, "t", "lake", mode="attach")
    assert busy.status is Status.TOPIC_BUSY
    taken = subscribe(second, harness.clock, "t", "lake", mode="attach", force_attach=True)
    assert taken.status is Status.SUCCESS
    _, _, events = first.split()
    assert events == [(handle, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)]
    second.send(Op.CONSUME, encode_consume(taken.value.handle, 15))
    second.disconnect()
    assert persisted(harness, "t", "lake") == 15, "a lost connection writes the pointer"
    again = subscribe(first, harness.clock, "t", "lake", mode="attach")
    assert again.status is Status.SUCCESS and again.value.consumed_seq == 15


def test_a_delivering_subscriber_is_unaffected_and_attaching_to_deliver_resumes_delivery(harness):
    publisher, drain, reader = harness.connect(), harness.connect(), harness.connect()
    publish(publisher, "t", 2)
    reader.send(Op.SUBSCRIBE, encode_subscribe("t", "reader", start="earliest"))
    [(_, reading)] = reader.responses()
    handle = subscribe(drain, harness.clock, "t", "lake", start="earliest").value.handle
    harness.clock.advance(0)
    _, deliveries, _ = reader.split()
    assert [(h, start, stop) for h, start, stop, _ in deliveries] == [(reading.value.handle, 0, 10)] * 2
    drain.send(Op.CONSUME, encode_consume(handle, 12))
    drain.send(Op.CLOSE_SUBSCRIPTION, encode_close_subscription(handle))
    drain.responses()
    # The same subscription attached to deliver starts after what was acknowledged.
    peer = harness.connect()
    peer.send(Op.SUBSCRIBE, encode_subscribe("t", "lake", mode="attach"))
    harness.clock.advance(0)
    responses, deliveries, _ = peer.split()
    assert responses[0][1].value.next_seq == 13
    assert [(start, stop) for _, start, stop, _ in deliveries] == [(2, 10)]
