"""Subscriptions over a connection: handles, start points, deliveries after the SUBSCRIBE
reply, windows, consume pointers, forced attach, limits and backpressure."""

import pytest

from hedwig.config.settings import Config
from hedwig.protocol import Op, Status, SubscriptionEvent, decode_entry
from hedwig.protocol.requests import (
    Subscribed,
    encode_close_subscription,
    encode_consume,
    encode_describe_topic,
    encode_subscribe,
    encode_unsubscribe,
)
from tests.hub.harness import HubHarness


@pytest.fixture
def harness(tmp_path):
    return HubHarness(tmp_path)


def payloads(topic, deliveries):
    """Every delivered message as (seq, payload), in delivery order."""
    return [
        (m.seq, m.payload)
        for _h, start, stop, entry in deliveries
        for m in decode_entry(topic, entry, start, stop)
    ]


def subscribe(peer, clock, topic, subscriber, **options):
    peer.send(Op.SUBSCRIBE, encode_subscribe(topic, subscriber, **options))
    clock.advance(0)  # delivery starts on the reactor turn after the reply
    responses, deliveries, _events = peer.split()
    [(_, response)] = responses
    return response, deliveries


def publish_entries(peer, topic, sizes):
    n = 0
    for size in sizes:
        peer.publish(topic, [b"m%d" % (n + i + 1) for i in range(size)])
        n += size
    responses, _, _ = peer.split()
    assert all(r.status is Status.SUCCESS for _, r in responses)


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        ("earliest", list(range(1, 7))),
        (("seq", 3), list(range(3, 7))),  # inside the first entry: sliced there
        (("seq", 5), [5, 6]),
        ("latest", []),
        (None, []),  # a new subscription starts after the last seq-id
    ],
)
def test_subscribe_from_each_start_point(harness, start, expected):
    publisher, subscriber = harness.connect(), harness.connect()
    publish_entries(publisher, "t", [4, 2])
    response, deliveries = subscribe(subscriber, harness.clock, "t", "s", start=start)
    handle = response.value.handle
    assert response.value == Subscribed(
        handle, expected[0] - 1 if expected else 6, expected[0] if expected else 7
    )
    assert {h for h, *_ in deliveries} <= {handle}
    assert [seq for seq, _ in payloads("t", deliveries)] == expected
    publisher.publish("t", [b"late"])  # pushed to the caught-up subscriber
    harness.clock.advance(0)
    _, pushed, _ = subscriber.split()
    assert payloads("t", pushed) == [(7, b"late")]


def test_subscribe_from_a_time(harness):
    peer = harness.connect()
    publish_entries(peer, "t", [2])
    harness.clock.advance(10)
    middle = int(harness.clock.seconds() * 1e6)
    publish_entries(peer, "t", [1, 1])
    _response, deliveries = subscribe(peer, harness.clock, "t", "s", start=("time", middle))
    assert [seq for seq, _ in payloads("t", deliveries)] == [3, 4]


def test_deliveries_never_precede_the_subscribe_reply(harness):
    peer = harness.connect()
    publish_entries(peer, "t", [3])
    harness.ledgers.hold_acks()
    publishing = peer.publish("t", [b"held"])
    subscribing = peer.send(Op.SUBSCRIBE, encode_subscribe("t", "s", start="earliest"))
    harness.clock.advance(0)  # the cursor runs; its deliveries must wait for the reply
    assert peer.frames() == []
    harness.ledgers.release_acks()
    harness.clock.advance(0)
    frames = peer.frames()
    assert [(op, request_id) for op, request_id, _ in frames[:2]] == [
        (Op.RESPONSE, publishing),
        (Op.RESPONSE, subscribing),
    ]
    assert {op for op, _, _ in frames[2:]} == {Op.DELIVERY}


def test_a_hundred_subscriptions_over_one_connection(harness):
    publisher, peer = harness.connect(), harness.connect()
    handles = set()
    for i in range(100):
        response, _ = subscribe(peer, harness.clock, f"topic-{i % 10}", f"sub-{i}")
        assert response.status is Status.SUCCESS
        handles.add(response.value.handle)
    assert len(handles) == 100 and peer.connection.subscription_count == 100
    for t in range(10):
        publisher.publish(f"topic-{t}", [b"hello %d" % t])
    publisher.split()
    harness.clock.advance(0)
    _, deliveries, _ = peer.split()
    assert len(deliveries) == 100 and {h for h, *_ in deliveries} == handles


def test_subscription_limit_per_connection(tmp_path):
    config = Config()
    config.hub.max_subscriptions_per_connection = 2
    harness = HubHarness(tmp_path, config)
    peer = harness.connect()
    for i in range(2):
        response, _ = subscribe(peer, harness.clock, "t", f"s{i}")
        assert response.status is Status.SUCCESS
    response, _ = subscribe(peer, harness.clock, "t", "s2")
    assert response.status is Status.TOO_MANY_SUBSCRIPTIONS
    assert harness.metadata.get_subscription("t", "s2").result is None  # nothing stored


def test_subscribe_modes(harness):
    peer, other = harness.connect(), harness.connect()
    assert subscribe(peer, harness.clock, "t", "s", mode="attach")[0].status is Status.CLIENT_NOT_SUBSCRIBED
    assert subscribe(peer, harness.clock, "t", "s", mode="create")[0].status is Status.SUCCESS
    again = subscribe(peer, harness.clock, "t", "s")[0]
    assert again.status is Status.CLIENT_ALREADY_SUBSCRIBED and "this connection" in again.message
    assert (
        subscribe(other, harness.clock, "t", "s", mode="create")[0].status is Status.CLIENT_ALREADY_SUBSCRIBED
    )
    assert subscribe(other, harness.clock, "t", "s")[0].status is Status.TOPIC_BUSY


def test_force_attach_ends_the_old_attachment_with_an_event(harness):
    first, second = harness.connect(), harness.connect()
    old_handle = subscribe(first, harness.clock, "t", "s")[0].value.handle
    response, _ = subscribe(second, harness.clock, "t", "s", force_attach=True)
    assert response.status is Status.SUCCESS
    _, _, events = first.split()
    assert events == [(old_handle, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)]
    first.send(Op.CONSUME, encode_consume(old_handle, 1))  # the handle is gone
    [(_, refused)] = first.responses()
    assert refused.status is Status.CLIENT_NOT_SUBSCRIBED


def test_window_bounds_unconsumed_deliveries_and_consume_reopens_it(harness):
    peer = harness.connect()
    publish_entries(peer, "t", [1] * 5)
    response, deliveries = subscribe(peer, harness.clock, "t", "s", start="earliest", window=2)
    handle = response.value.handle
    assert [seq for seq, _ in payloads("t", deliveries)] == [1, 2]
    peer.send(Op.CONSUME, encode_consume(handle, 2))  # no reply on success
    harness.clock.advance(0)
    responses, deliveries, _ = peer.split()
    assert responses == [] and [seq for seq, _ in payloads("t", deliveries)] == [3, 4]


def test_consume_close_and_resume_at_consumed_plus_one(harness):
    peer = harness.connect()
    publish_entries(peer, "t", [1] * 4)
    handle = subscribe(peer, harness.clock, "t", "s", start="earliest")[0].value.handle
    peer.send(Op.CONSUME, encode_consume(handle, 2))
    peer.send(Op.CLOSE_SUBSCRIPTION, encode_close_subscription(handle))
    [(_, closed)] = peer.responses()
    assert closed.status is Status.SUCCESS
    assert harness.metadata.get_subscription("t", "s").result.value.consumed_seq == 2  # flushed
    peer.send(Op.CLOSE_SUBSCRIPTION, encode_close_subscription(handle))
    [(_, again)] = peer.responses()
    assert again.status is Status.CLIENT_NOT_SUBSCRIBED
    response, deliveries = subscribe(peer, harness.clock, "t", "s", mode="attach")
    assert (response.value.consumed_seq, response.value.next_seq) == (2, 3)
    assert [seq for seq, _ in payloads("t", deliveries)] == [3, 4]


def test_disconnect_flushes_consume_pointers(harness):
    peer = harness.connect()
    publish_entries(peer, "t", [3])
    handle = subscribe(peer, harness.clock, "t", "s", start="earliest")[0].value.handle
    peer.send(Op.CONSUME, encode_consume(handle, 3))
    peer.disconnect()
    assert peer.connection.closed.called
    assert harness.metadata.get_subscription("t", "s").result.value.consumed_seq == 3
    other = harness.connect()
    response, _ = subscribe(other, harness.clock, "t", "s", mode="attach")  # no longer busy
    assert response.value.next_seq == 4


def test_unsubscribe_deletes_the_subscription(harness):
    peer = harness.connect()
    handle = subscribe(peer, harness.clock, "t", "s")[0].value.handle
    peer.send(Op.UNSUBSCRIBE, encode_unsubscribe("t", "s"))
    peer.send(Op.CONSUME, encode_consume(handle, 1))
    peer.send(Op.UNSUBSCRIBE, encode_unsubscribe("t", "s"))
    statuses = [r.status for _, r in peer.responses()]
    assert statuses == [Status.SUCCESS, Status.CLIENT_NOT_SUBSCRIBED, Status.CLIENT_NOT_SUBSCRIBED]
    assert harness.metadata.get_subscription("t", "s").result is None
    assert subscribe(peer, harness.clock, "t", "s", mode="attach")[0].status is Status.CLIENT_NOT_SUBSCRIBED


def test_a_full_socket_pauses_delivery_and_reading(harness):
    publisher, peer = harness.connect(), harness.connect()
    subscribe(peer, harness.clock, "t", "s")
    peer.connection.pauseProducing()  # what the transport does when its buffer fills
    assert peer.transport.producerState == "paused"
    publish_entries(publisher, "t", [1, 1, 1])
    harness.clock.advance(0)
    assert peer.split()[1] == []
    peer.connection.resumeProducing()
    harness.clock.advance(0)
    assert peer.transport.producerState == "producing"
    assert [seq for seq, _ in payloads("t", peer.split()[1])] == [1, 2, 3]


def test_describe_shows_subscribers_and_backlog(harness):
    peer = harness.connect()
    publish_entries(peer, "t", [5])
    handle = subscribe(peer, harness.clock, "t", "s", start="earliest")[0].value.handle
    peer.send(Op.CONSUME, encode_consume(handle, 2))
    peer.send(Op.DESCRIBE_TOPIC, encode_describe_topic("t"))
    [(_, described)] = peer.responses()
    [row] = described.value["subscribers"]
    assert (row["subscriber_id"], row["consumed_seq"], row["backlog"]) == ("s", 2, 3)


def test_unsubscribe_ends_the_subscription_where_it_is_attached(harness):
    holder, admin = harness.connect(), harness.connect()
    handle = subscribe(holder, harness.clock, "t", "s")[0].value.handle
    admin.send(Op.UNSUBSCRIBE, encode_unsubscribe("t", "s"))
    assert admin.responses()[0][1].status is Status.SUCCESS
    _, _, events = holder.split()
    assert events == [(handle, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)]
    assert holder.connection.subscription_count == 0


def test_a_client_gone_before_its_subscribe_completes_leaves_nothing_attached(harness):
    from twisted.internet.defer import Deferred

    gate = Deferred()
    open_topic = harness.logs.open
    harness.logs.open = lambda topic: gate.addCallback(lambda _: open_topic(topic))  # a slow acquire
    leaving, other = harness.connect(), harness.connect()
    leaving.send(Op.SUBSCRIBE, encode_subscribe("t", "s"))
    leaving.disconnect()
    gate.callback(None)
    harness.clock.advance(0)
    assert leaving.transport.value() == b""
    response, _ = subscribe(other, harness.clock, "t", "s", mode="attach")  # not TOPIC_BUSY
    assert response.status is Status.SUCCESS
