"""The Twisted client against a scripted hub: StringTransport for the wire, a
MemoryReactorClock for connections and time. Every byte is checked with the protocol's
own codecs."""

import pytest
from twisted.internet.error import ConnectionDone, ConnectionRefusedError
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.python.failure import Failure

from hedwig.client.errors import (
    ClientClosed,
    ConnectionLost,
    InvalidTopic,
    MessageTooLarge,
    PublishQueueFull,
    RequestTimeout,
    SubscriptionClosed,
    TooManyRedirects,
)
from hedwig.client.twisted import Client
from hedwig.protocol import Op, Status, SubscriptionEvent, decode_entry, encode_entry_header
from tests.client.hubscript import HubScript


class Hub:
    """One scripted connection: the client's protocol on a StringTransport."""

    def __init__(self, reactor, index=-1, name="127.0.0.1:4080", max_message_bytes=1 << 20):
        self.address = reactor.tcpClients[index][:2]
        factory = reactor.tcpClients[index][2]
        self.protocol = factory.buildProtocol(None)
        self.transport = StringTransport()
        self.protocol.makeConnection(self.transport)
        self.script = HubScript(name, max_message_bytes)
        [(op, request_id, _hello)] = self.take()
        assert op == Op.HELLO
        self.send(self.script.hello(request_id))

    def take(self):
        requests = self.script.requests(self.transport.value())
        self.transport.clear()
        return requests

    def send(self, data):
        self.protocol.dataReceived(data)

    def describe_answered(self, partitions=1):
        """Answer the DESCRIBE_TOPIC a subscribe asks first (the topic's partition count)."""
        [(op, request_id, _)] = self.take()
        assert op == Op.DESCRIBE_TOPIC
        self.send(self.script.described(request_id, partitions))

    def drop(self):
        self.protocol.connectionLost(Failure(ConnectionDone()))


def connected(**options):
    reactor = MemoryReactorClock()
    client = Client(reactor, "127.0.0.1:4080", **options)
    done = client.connect()
    hub = Hub(reactor)
    assert hub.address == ("127.0.0.1", 4080)
    assert done.called and done.result is client
    return reactor, client, hub


def results(deferreds):
    values = []
    for d in deferreds:
        d.addBoth(values.append)
    return values


def test_publishes_of_one_turn_go_out_as_one_message_set():
    reactor, client, hub = connected()
    seqs = results([client.publish("orders", b"m%d" % i) for i in range(1000)])
    assert hub.take() == []  # nothing before the turn ends
    reactor.advance(0)
    [(op, request_id, publish)] = hub.take()
    assert (op, publish.topic) == (Op.PUBLISH, "orders")
    hub.send(hub.script.published(request_id, 501, 1500))
    assert seqs == list(range(501, 1501))
    assert client.in_flight == 0


def test_in_flight_is_bounded_and_the_rest_waits_its_turn():
    reactor, client, hub = connected(max_in_flight=10)
    first = results([client.publish("t", b"x") for _ in range(10)])
    reactor.advance(0)
    later = results([client.publish("t", b"y") for _ in range(5)])
    reactor.advance(0)
    [(_, first_id, _)] = hub.take()  # the second batch waits: 10 are in flight
    assert (client.in_flight, client.queued) == (10, 5)
    hub.send(hub.script.published(first_id, 1, 10))
    [(_, later_id, _publish)] = hub.take()
    hub.send(hub.script.published(later_id, 11, 15))
    assert first == list(range(1, 11)) and later == list(range(11, 16))


def test_a_full_queue_refuses_at_once_and_pauses_a_producer():
    reactor, client, hub = connected(max_in_flight=4, max_queued=6)

    class Producer:
        paused = 0
        resumed = 0

        def pauseProducing(self):
            self.paused += 1

        def resumeProducing(self):
            self.resumed += 1

    producer = Producer()
    client.registerProducer(producer, True)
    accepted = [client.publish("t", b"x") for _ in range(6)]
    assert producer.paused == 1
    refused = results([client.publish("t", b"x")])
    assert isinstance(refused[0].value, PublishQueueFull)
    reactor.advance(0)
    [(_, request_id, _)] = hub.take()
    hub.send(hub.script.published(request_id, 1, 6))
    assert producer.resumed == 1
    assert results(accepted) == [1, 2, 3, 4, 5, 6]


def test_too_large_is_refused_before_it_is_sent():
    _reactor, client, hub = connected()
    hub.script = None
    [failure] = results([client.publish("t", b"x" * ((1 << 20) + 1))])
    assert isinstance(failure.value, MessageTooLarge)
    assert failure.value.status is Status.MESSAGE_TOO_LARGE


def test_an_error_status_fails_every_publish_of_the_batch_with_its_type():
    reactor, client, hub = connected()
    outcomes = results([client.publish("bad topic", b"x"), client.publish("bad topic", b"y")])
    reactor.advance(0)
    [(_, request_id, _)] = hub.take()
    hub.send(hub.script.error(request_id, Op.PUBLISH, Status.INVALID_TOPIC, "spaces are not allowed"))
    assert all(isinstance(f.value, InvalidTopic) for f in outcomes)
    assert outcomes[0].value.status is Status.INVALID_TOPIC
    assert "spaces" in str(outcomes[0].value)


def test_redirects_are_followed_and_remembered():
    reactor, client, hub = connected()
    seq = results([client.publish("t", b"x")])
    reactor.advance(0)
    [(_, request_id, _)] = hub.take()
    hub.send(hub.script.error(request_id, Op.PUBLISH, Status.NOT_RESPONSIBLE_FOR_TOPIC, "127.0.0.1:4081"))
    owner = Hub(reactor, name="127.0.0.1:4081")
    assert owner.address == ("127.0.0.1", 4081)
    [(op, request_id, publish)] = owner.take()
    assert (op, publish.topic) == (Op.PUBLISH, "t")
    owner.send(owner.script.published(request_id, 1, 1))
    assert seq == [1]
    client.publish("t", b"again")
    reactor.advance(0)
    assert hub.take() == [] and len(owner.take()) == 1
    assert len(reactor.tcpClients) == 2


def test_a_redirect_loop_ends_with_too_many_redirects():
    reactor, client, hub = connected()
    outcome = results([client.publish("t", b"x")])
    reactor.advance(0)
    [(_, request_id, _)] = hub.take()
    hub.send(hub.script.error(request_id, Op.PUBLISH, Status.NOT_RESPONSIBLE_FOR_TOPIC, "127.0.0.1:4081"))
    other = Hub(reactor)
    [(_, request_id, _)] = other.take()
    other.send(other.script.error(request_id, Op.PUBLISH, Status.NOT_RESPONSIBLE_FOR_TOPIC, "127.0.0.1:4080"))
    assert isinstance(outcome[0].value, TooManyRedirects)
    assert "loop" in str(outcome[0].value)


def test_a_publish_in_flight_when_the_connection_drops_fails_as_uncertain():
    reactor, client, hub = connected()
    outcome = results([client.publish("t", b"x")])
    reactor.advance(0)
    hub.take()
    hub.drop()
    assert isinstance(outcome[0].value, ConnectionLost)
    assert outcome[0].value.status is Status.UNCERTAIN_STATE


def test_a_request_without_reply_times_out():
    reactor, client, _hub = connected(timeout=5)
    outcome = results([client.stats()])
    reactor.advance(4.9)
    assert outcome == []
    reactor.advance(0.2)
    assert isinstance(outcome[0].value, RequestTimeout)


def subscribed(reactor, client, hub, handler, **options):
    subscription = results([client.subscribe("t", "s", handler=handler, **options)])
    hub.describe_answered()
    [(op, request_id, request)] = hub.take()
    assert op == Op.SUBSCRIBE
    return subscription, request_id, request


def test_deliveries_right_behind_the_subscribe_reply_reach_the_handler():
    reactor, client, hub = connected()
    got = []
    subscription, request_id, request = subscribed(reactor, client, hub, got.append, start="earliest")
    assert (request.mode, request.start, request.window) == ("create_or_attach", "earliest", 10_000)
    hub.send(hub.script.subscribed(request_id, 3, 0, 1) + hub.script.delivery(3, 1, [b"a", b"b", b"c"]))
    assert [(m.topic, m.seq, m.payload) for m in got] == [("t", 1, b"a"), ("t", 2, b"b"), ("t", 3, b"c")]
    assert subscription[0].attached


def test_acks_are_batched_and_flushed_after_a_delay():
    reactor, client, hub = connected(ack_every=4, ack_delay=0.1)
    got = []
    outcome, request_id, _ = subscribed(reactor, client, hub, got.append)
    hub.send(hub.script.subscribed(request_id, 3, 0, 1) + hub.script.delivery(3, 1, [b"x"] * 6))
    [subscription] = outcome
    for message in got[:3]:
        subscription.ack(message)
    assert hub.take() == []
    subscription.ack(got[3])
    [(op, _, consume)] = hub.take()
    assert (op, consume.handle, consume.seq) == (Op.CONSUME, 3, 4)
    subscription.ack(got[5])
    assert hub.take() == []
    reactor.advance(0.1)
    [(op, _, consume)] = hub.take()
    assert consume.seq == 6


def test_after_a_drop_the_subscription_resumes_from_its_last_ack_without_duplicates():
    reactor, client, hub = connected(ack_every=1)
    got = []
    outcome, request_id, _ = subscribed(reactor, client, hub, got.append, mode="create")
    hub.send(hub.script.subscribed(request_id, 3, 0, 1) + hub.script.delivery(3, 1, [b"1", b"2", b"3"]))
    [subscription] = outcome
    subscription.ack(got[1])
    hub.take()
    hub.drop()
    assert not subscription.attached
    reactor.advance(0)
    again = Hub(reactor)
    [(op, request_id, request)] = again.take()
    assert (op, request.mode, request.start) == (Op.SUBSCRIBE, "attach", ("seq", 3))
    # The hub resends 3 (held already) along with what is new.
    again.send(again.script.subscribed(request_id, 5, 2, 3) + again.script.delivery(5, 3, [b"3", b"4"]))
    assert [m.seq for m in got] == [1, 2, 3, 4]
    assert subscription.attached


def test_resubscribing_retries_with_backoff_while_the_hub_is_down():
    reactor, client, hub = connected()
    outcome, request_id, _ = subscribed(reactor, client, hub, lambda m: None)
    hub.send(hub.script.subscribed(request_id, 1, 0, 1))
    [_subscription] = outcome
    hub.drop()
    reactor.advance(0)
    for attempt in range(3):
        reactor.tcpClients[-1][2].clientConnectionFailed(None, Failure(ConnectionRefusedError()))
        before = len(reactor.tcpClients)
        reactor.advance(0.05 * 2**attempt)
        assert len(reactor.tcpClients) == before + 1
    Hub(reactor).take()


def test_a_forced_close_ends_the_subscription_with_its_reason():
    reactor, client, hub = connected()
    outcome, request_id, _ = subscribed(reactor, client, hub, lambda m: None)
    hub.send(hub.script.subscribed(request_id, 8, 0, 1))
    [subscription] = outcome
    ended = results([subscription.closed])
    hub.send(hub.script.event(8, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED))
    assert isinstance(ended[0], SubscriptionClosed)
    assert "forced" in str(ended[0])
    assert not reactor.getDelayedCalls() or all(
        not call.active() or call.getTime() > reactor.seconds() for call in reactor.getDelayedCalls()
    )


def test_a_queue_subscription_hands_messages_to_waiting_readers():
    reactor, client, hub = connected()
    outcome, request_id, _ = subscribed(reactor, client, hub, None)
    hub.send(hub.script.subscribed(request_id, 1, 0, 1))
    [subscription] = outcome
    waiting = results([subscription.queue.get()])
    assert waiting == []
    hub.send(hub.script.delivery(1, 1, [b"q"]))
    assert waiting[0].payload == b"q"


@pytest.mark.parametrize("start", [0, -1, "yesterday"])
def test_a_bad_start_is_refused_without_a_request(start):
    _reactor, client, hub = connected()
    outcome = results([client.subscribe("t", "s", start=start)])
    assert isinstance(outcome[0].value, ValueError)
    assert hub.take() == []


def test_close_sends_what_was_published_and_waits_for_the_replies():
    _reactor, client, hub = connected()
    seqs = results([client.publish("t", b"a"), client.publish("t", b"b")])
    closed = results([client.close()])
    [(op, request_id, _)] = hub.take()  # close() sent the batch at once
    assert op == Op.PUBLISH and closed == []
    refused = results([client.publish("t", b"late")])
    assert isinstance(refused[0].value, ClientClosed)
    hub.send(hub.script.published(request_id, 1, 2))
    assert seqs == [1, 2]
    assert hub.transport.disconnecting
    hub.drop()
    assert closed == [None]


def test_topic_moved_resubscribes_where_the_topic_lives_now():
    reactor, client, hub = connected(ack_every=1)
    got = []
    outcome, request_id, _ = subscribed(reactor, client, hub, got.append)
    hub.send(hub.script.subscribed(request_id, 4, 0, 1) + hub.script.delivery(4, 1, [b"a", b"b"]))
    [subscription] = outcome
    subscription.ack(got[0])
    hub.take()
    hub.send(hub.script.event(4, SubscriptionEvent.TOPIC_MOVED))
    assert not subscription.attached
    reactor.advance(0)
    [(op, request_id, request)] = hub.take()  # asked again on the same connection
    assert (op, request.start) == (Op.SUBSCRIBE, ("seq", 2))
    hub.send(hub.script.error(request_id, Op.SUBSCRIBE, Status.NOT_RESPONSIBLE_FOR_TOPIC, "127.0.0.1:4090"))
    owner = Hub(reactor, name="127.0.0.1:4090")
    [(op, request_id, request)] = owner.take()
    owner.send(owner.script.subscribed(request_id, 1, 1, 2) + owner.script.delivery(1, 2, [b"b", b"c"]))
    assert [m.payload for m in got] == [b"a", b"b", b"c"]
    assert subscription.attached


def test_a_batch_keeps_each_messages_properties_and_splits_at_max_batch_bytes():
    reactor, client, hub = connected(max_batch_bytes=10)
    client.publish("t", b"plain")
    client.publish("t", b"with-props", {"k": b"v"})  # the batch reaches 10 bytes: it is full
    client.publish("t", b"next-batch")
    reactor.advance(0)
    [(_, _, first), (_, _, second)] = hub.take()
    entry = encode_entry_header(1, 2, 0, b"", 1) + first.message_set
    assert [(m.payload, m.properties) for m in decode_entry("t", entry)] == [
        (b"plain", {}),
        (b"with-props", {"k": b"v"}),
    ]
    assert second.message_set.endswith(b"next-batch")


def test_a_delivery_goes_to_waiting_readers_in_order_and_the_rest_queues_in_one_step():
    """MessageQueue.extend: each reader waiting takes one message, in order (a reader
    that asks again from its callback is next in line); what is left is queued for later
    readers, in order."""
    from hedwig.client.twisted_subscriptions import MessageQueue

    queue = MessageQueue()
    taken = []

    def again(message):
        taken.append(message)
        if message == "a":
            queue.get().addCallback(taken.append)

    queue.get().addCallback(again)
    queue.get().addCallback(taken.append)
    queue.extend(["a", "b", "c", "d", "e"])
    assert taken == ["a", "b", "c"]
    assert list(queue.pending) == ["d", "e"]
    queue.extend(["f"])
    later = []
    for _ in range(3):
        queue.get().addCallback(later.append)
    assert later == ["d", "e", "f"] and not queue.pending and not queue.waiting
