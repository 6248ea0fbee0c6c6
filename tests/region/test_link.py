"""The child's link to its parent as a state machine, on a MemoryReactorClock: connection
attempts over the parent's addresses with doubling back-off, the handshake byte for
byte over a StringTransport, refusals, waiting for a parent that has no path to the
root yet, timeouts, and what the session does once linked."""

import random

import pytest
from twisted.internet.address import IPv4Address
from twisted.internet.error import ConnectionDone, ConnectionRefusedError
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.python.failure import Failure

from hedwig.protocol import FrameDecoder, Op, decode_entry_header, delivery_header
from hedwig.protocol.requests import (
    decode_consume,
    decode_hello,
    decode_subscribe,
    encode_hello_reply,
    encode_published,
    encode_subscribe,
    encode_subscribed,
)
from hedwig.protocol.responses import response_frame
from hedwig.protocol.status import Status
from hedwig.region import link as states
from hedwig.region.wire import (
    InterestKind,
    decode_region_link,
    decode_relay_publish,
    encode_region_link_reply,
    interest_frames,
)
from tests.region.harness import RegionHarness, entry, fired


class ParentEnd:
    """The parent's end of one connection attempt: what the link sent, what it is told."""

    def __init__(self, reactor, index=-1):
        host, port, factory, timeout, _bind = reactor.tcpClients[index]
        self.address = (host, port)
        self.timeout = timeout
        self.factory = factory
        self.protocol = factory.buildProtocol(IPv4Address("TCP", host, port))
        self.transport = StringTransport()
        self.protocol.makeConnection(self.transport)
        self._decoder = FrameDecoder()
        self.topic_options = []  # TOPIC_OPTIONS requests, set aside by frames()

    def frames(self):
        """What the link sent since last asked, but its TOPIC_OPTIONS (`topic_options`)."""
        data = self.transport.value()
        self.transport.clear()
        frames = self._decoder.feed(data)
        self.topic_options += [f for f in frames if f[0] == Op.TOPIC_OPTIONS]
        return [f for f in frames if f[0] != Op.TOPIC_OPTIONS]

    def send(self, *frames):
        self.protocol.dataReceived(b"".join(frames))

    def handshake(self, region="mid", path=("mid", "world"), complete=True):
        (hello_op, hello_id, hello), (link_op, link_id, body) = self.frames()[:2]
        assert (hello_op, link_op) == (Op.HELLO, Op.REGION_LINK)
        assert decode_hello(hello).client_name == "hub of region leaf"
        assert decode_region_link(body)[0] == "leaf"
        self.send(
            response_frame(hello_id, Op.HELLO, payload=encode_hello_reply(region, "p:1", 1 << 24, 1 << 20)),
            response_frame(
                link_id, Op.REGION_LINK, payload=encode_region_link_reply(region, list(path), complete)
            ),
        )

    def close(self):
        self.protocol.connectionLost(Failure(ConnectionDone()))


@pytest.fixture
def reactor():
    return MemoryReactorClock()


def leaf(tmp_path, reactor, **region):
    settings = {"retry_backoff_ms": 100, "max_retry_backoff_ms": 400, "link_timeout_s": 5.0, **region}
    harness = RegionHarness(
        tmp_path,
        name="leaf",
        parent="mid",
        reactor=reactor,
        rng=random.Random(1),
        parent_address="10.0.0.1:4080,10.0.0.2:4081",
        **settings,
    )
    harness.regions.link.backoff.jitter = 0
    return harness.start()


def test_attempts_go_round_the_parents_addresses_with_a_doubling_back_off(tmp_path, reactor):
    harness = leaf(tmp_path, reactor)
    link = harness.regions.link
    delays = []
    for attempt in range(5):
        assert len(reactor.tcpClients) == attempt + 1
        host, port, factory, timeout, _ = reactor.tcpClients[-1]
        assert (host, port) == (("10.0.0.1", 4080), ("10.0.0.2", 4081))[attempt % 2]
        assert timeout == 5.0 and link.state == states.CONNECTING
        factory.clientConnectionFailed(None, Failure(ConnectionRefusedError()))
        assert link.state == states.RETRYING and "cannot reach" in link.reason
        delays.append(link.describe()["retry_in_s"])
        reactor.advance(delays[-1])
    assert delays == [0.1, 0.2, 0.4, 0.4, 0.4]
    assert link.attempts == 6


def test_a_link_comes_up_learns_its_path_and_relays_what_it_is_told(tmp_path, reactor):
    harness = leaf(tmp_path, reactor)
    link = harness.regions.link
    parent = ParentEnd(reactor)
    assert link.state == states.LINKING
    parent.handshake()
    assert link.state == states.RELAYING and link.links == 1
    assert harness.regions.path.names == ["leaf", "mid", "world"]
    # The parent wants "orders" relayed up: a local relay subscription `__region__mid`.
    parent.send(*interest_frames(InterestKind.WANT, ["orders"]), *interest_frames(InterestKind.END, []))
    harness.clock.advance(0)
    assert harness.regions.interest.relayed_by("mid") == ["orders"]
    # A local publish goes up as RELAY_PUBLISH, and is consumed here once the parent stored it.
    peer = harness.connect()
    peer.publish("orders", [b"a", b"b"])
    harness.clock.advance(0)
    [(op, request_id, body)] = parent.frames()
    assert op == Op.RELAY_PUBLISH
    topic, start, stop, data = decode_relay_publish(body)
    assert (topic, start, stop) == ("orders", 0, 2)
    assert decode_entry_header(data)[:5] == (1, 2, decode_entry_header(data).publish_time_us, 1, "leaf")
    parent.send(response_frame(request_id, Op.RELAY_PUBLISH, payload=encode_published(7, 8)))
    [row] = [r for r in harness.delivery.describe("orders") if r["subscriber_id"] == "__region__mid"]
    assert row["consumed_seq"] == 2


def test_down_relays_subscribe_at_the_parent_store_here_and_consume_there(tmp_path, reactor):
    harness = leaf(tmp_path, reactor)
    peer = harness.connect()
    peer.send(Op.SUBSCRIBE, encode_subscribe("news", "app"))
    peer.frames()
    parent = ParentEnd(reactor)
    parent.handshake()
    frames = parent.frames()
    [(op, request_id, body)] = [f for f in frames if f[0] == Op.SUBSCRIBE]
    request = decode_subscribe(body)
    assert (request.topic, request.subscriber_id, request.mode, request.window, request.force_attach) == (
        "news",
        "__region__leaf",
        "attach",
        0,
        True,
    )
    parent.send(response_frame(request_id, Op.SUBSCRIBE, payload=encode_subscribed(5, 0, 1)))
    data = entry(1, [b"x", b"y"], origin="world", origin_seq=30)
    parent.send(delivery_header(5, 0, 2, len(data)) + data)
    assert harness.stored("news") == [("world", 30, b"x", "mid"), ("world", 31, b"y", "mid")]
    harness.clock.advance(0)
    reactor.advance(0)
    [(op, _id, body)] = parent.frames()
    assert op == Op.CONSUME and decode_consume(body).seq == 2
    # The same entry again (a re-read after a reconnect) is dropped, and consumed again.
    parent.send(delivery_header(5, 0, 2, len(data)) + data)
    reactor.advance(0)
    assert len(harness.stored("news")) == 2
    assert [op for op, _, _ in parent.frames()] == [Op.CONSUME]


@pytest.mark.parametrize(
    ("reply", "state", "said"),
    [
        ({"region": "asia"}, states.REFUSED, "serves region asia, not the configured parent region mid"),
        ({"path": ("mid", "leaf")}, states.REFUSED, "cycle in the region hierarchy: leaf -> mid -> leaf"),
        ({"path": ("mid", "x"), "complete": False}, states.WAITING, "does not reach a root region yet"),
    ],
)
def test_a_parent_that_cannot_be_linked_is_left_and_retried(tmp_path, reactor, reply, state, said):
    harness = leaf(tmp_path, reactor)
    link = harness.regions.link
    parent = ParentEnd(reactor)
    parent.handshake(**reply)
    assert parent.transport.disconnecting and harness.regions.session is None
    parent.close()
    assert link.state == state and said in link.reason
    expected = 0.4 if state == states.REFUSED else 0.1  # a refusal waits for someone to fix it
    assert link.describe()["retry_in_s"] == expected
    reactor.advance(expected)
    assert len(reactor.tcpClients) == 2


def test_a_refusal_by_the_parent_is_reported(tmp_path, reactor):
    harness = leaf(tmp_path, reactor)
    parent = ParentEnd(reactor)
    (_, hello_id, _), (_, link_id, _) = parent.frames()
    parent.send(
        response_frame(hello_id, Op.HELLO, payload=encode_hello_reply("mid", "p:1", 1 << 24, 1 << 20)),
        response_frame(
            link_id, Op.REGION_LINK, Status.REGION_REFUSED, "region leaf is this hub's own region"
        ),
    )
    parent.close()
    link = harness.regions.link
    assert link.state == states.REFUSED
    assert link.reason == "10.0.0.1:4080 refused the link: region leaf is this hub's own region"


def test_an_unanswered_request_drops_the_link_which_retries_from_the_first_delay(tmp_path, reactor):
    harness = leaf(tmp_path, reactor, link_timeout_s=2.0)
    link = harness.regions.link
    parent = ParentEnd(reactor)
    parent.handshake()
    reactor.advance(1.0)
    link.request(Op.STATS, b"")
    reactor.advance(2.0)
    assert parent.transport.disconnecting  # aborted
    parent.close()
    assert link.state == states.RETRYING and "no reply to STATS in 2s" in link.reason
    assert link.describe()["retry_in_s"] == 0.1  # the back-off started over once linked


def test_stopping_closes_the_link_and_stops_retrying(tmp_path, reactor):
    harness = leaf(tmp_path, reactor)
    link = harness.regions.link
    parent = ParentEnd(reactor)
    parent.handshake()
    stopped = harness.regions.stop()
    assert parent.transport.disconnecting
    parent.close()
    fired(stopped)
    reactor.advance(60)
    assert link.state == states.STOPPED and len(reactor.tcpClients) == 1


def test_reading_from_the_parent_pauses_while_relayed_entries_wait_to_be_stored(tmp_path, reactor):
    harness = leaf(tmp_path, reactor, relay_inflight_bytes=65536)
    peer = harness.connect()
    peer.send(Op.SUBSCRIBE, encode_subscribe("news", "app"))
    peer.frames()
    parent = ParentEnd(reactor)
    parent.handshake()
    [(_op, request_id, _body)] = [f for f in parent.frames() if f[0] == Op.SUBSCRIBE]
    parent.send(response_frame(request_id, Op.SUBSCRIBE, payload=encode_subscribed(5, 0, 1)))
    harness.ledgers.hold_acks()  # a slow disk: stored, not yet acknowledged
    big = b"x" * 20_000
    for i in range(4):
        data = entry(i + 1, [big], origin="world", origin_seq=i + 1)
        parent.send(delivery_header(5, 0, 1, len(data)) + data)
    assert parent.transport.producerState == "paused"
    assert harness.regions.inboxes.pending_bytes > 65536
    harness.ledgers.release_acks()
    assert harness.regions.inboxes.pending_bytes == 0
    assert parent.transport.producerState == "producing"
    assert len(harness.stored("news")) == 4


def test_relaying_up_pauses_while_too_many_bytes_wait_for_the_parents_answer(tmp_path, reactor):
    harness = leaf(tmp_path, reactor, relay_inflight_bytes=65536)
    parent = ParentEnd(reactor)
    parent.handshake()
    parent.send(*interest_frames(InterestKind.WANT, ["orders"]), *interest_frames(InterestKind.END, []))
    harness.clock.advance(0)
    peer = harness.connect()
    for _ in range(8):
        peer.publish("orders", [b"y" * 20_000])
        harness.clock.advance(0)
    sent = [f for f in parent.frames() if f[0] == Op.RELAY_PUBLISH]
    assert len(sent) == 4  # past 64 KiB unanswered, the relay subscription paused
    up = harness.regions.session.up_channel
    assert up.paused and up.inflight_bytes > 65536
    for _op, request_id, _body in sent:
        parent.send(response_frame(request_id, Op.RELAY_PUBLISH, payload=encode_published(1, 1)))
    harness.clock.advance(0)
    # Below half the bound (after the third answer) it resumed, and paused again past it.
    resent = [f for f in parent.frames() if f[0] == Op.RELAY_PUBLISH]
    assert len(resent) == 3
    assert up.paused and 32768 < up.inflight_bytes <= 65536  # (three sent, unanswered)


def test_a_down_relay_the_parent_lacks_is_created_from_when_the_interest_began(tmp_path, reactor):
    reactor.advance(1_700_000_000)
    harness = leaf(tmp_path, reactor)
    peer = harness.connect()
    peer.send(Op.SUBSCRIBE, encode_subscribe("news", "app"))  # the link is not up yet
    peer.frames()
    since = int(reactor.seconds() * 1_000_000)
    reactor.advance(0.4)
    parent = ParentEnd(reactor)
    parent.handshake()
    [(_op, request_id, body)] = [f for f in parent.frames() if f[0] == Op.SUBSCRIBE]
    assert decode_subscribe(body).mode == "attach"  # the usual case: it is there already
    parent.send(response_frame(request_id, Op.SUBSCRIBE, Status.CLIENT_NOT_SUBSCRIBED, "no"))
    [(_op, request_id, body)] = [f for f in parent.frames() if f[0] == Op.SUBSCRIBE]
    created = decode_subscribe(body)
    assert (created.mode, created.subscriber_id) == ("create", "__region__leaf")
    assert created.start == ("time", since - 1_000_000)  # (a second for the regions' clocks)
    parent.send(response_frame(request_id, Op.SUBSCRIBE, payload=encode_subscribed(3, 0, 1)))
    assert harness.regions.session.down.on == {"news"}


@pytest.mark.parametrize(("since_s", "relayed"), [(0, 0), (1_700_000_000.5, 2)])
def test_an_up_relay_created_late_starts_where_the_parents_interest_began(
    tmp_path, reactor, since_s, relayed
):
    harness = leaf(tmp_path, reactor)
    peer = harness.connect()
    harness.clock.advance(1.0)
    peer.publish("orders", [b"before the link came up"])
    peer.publish("orders", [b"this one too"])
    peer.frames()
    parent = ParentEnd(reactor)
    parent.handshake()
    since_us = int(since_s * 1_000_000)  # 0: the parent does not know when
    parent.send(
        *interest_frames(InterestKind.WANT, [("orders", since_us)]), *interest_frames(InterestKind.END, [])
    )
    harness.clock.advance(0)
    assert len([f for f in parent.frames() if f[0] == Op.RELAY_PUBLISH]) == relayed
