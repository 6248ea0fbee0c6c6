"""The HTTP listener's site byte for byte (StringTransport, task.Clock) over a hub of
real parts: routes, JSON, the guard seam, and what a hostile peer can and cannot cost."""

import json

from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport
from zope.interface import implementer

from hedwig.observe.interface import IRequestGuard
from hedwig.observe.listener import HttpObserver
from hedwig.observe.resources import HEADERS_TIMEOUT_S, IDLE_TIMEOUT_S
from tests.hub.harness import HubHarness


@implementer(IRequestGuard)
class Allow:
    """A guard that answers every request alike."""

    def __init__(self, answer: bool):
        self.answer = answer

    def allows(self, request):
        return self.answer


def observer_of(harness, guard=None):
    return HttpObserver(harness.hub, harness.ledgers, harness.parts.gc, harness.config, harness.clock, guard)


def connect(observer):
    channel = observer.site.buildProtocol(IPv4Address("TCP", "127.0.0.1", 50000))
    transport = StringTransport(peerAddress=IPv4Address("TCP", "127.0.0.1", 50000))
    channel.makeConnection(transport)
    return channel, transport


def get(observer, path: str, headers: str = ""):
    """(status, headers text, body bytes) of one GET."""
    channel, transport = connect(observer)
    channel.dataReceived(f"GET {path} HTTP/1.1\r\nHost: hub\r\n{headers}\r\n".encode())
    head, _, body = transport.value().partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    channel.connectionLost(None)
    return status, head.decode("latin-1"), body


def chunked_body(body: bytes) -> bytes:
    """The body of a chunked response, de-chunked."""
    out = b""
    while body:
        size, _, rest = body.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            break
        out += rest[:n]
        body = rest[n + 2 :]
    return out


def body_of(raw: bytes) -> bytes:
    return chunked_body(raw) if raw[:1] not in (b"{", b"<", b"#") else raw


def test_api_status_lists_the_topic_with_its_count(tmp_path):
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    peer.publish("orders", [b"a", b"b", b"c"])
    harness.clock.advance(0)
    status, head, body = get(observer_of(harness), "/api/status")
    assert status == 200
    assert "application/json" in head
    data = json.loads(body_of(body))
    [row] = data["topics"]
    assert (row["topic"], row["first_seq"], row["last_seq"], row["messages"]) == ("orders", 1, 3, 3)
    assert data["hub"]["name"] == "127.0.0.1:4080"
    assert data["totals"]["connections"] == 1


def test_api_parts_and_an_unknown_part(tmp_path):
    harness = HubHarness(tmp_path)
    observer = observer_of(harness)
    for part in ("topics", "subscriptions", "connections", "history", "stats"):
        status, _head, _body = get(observer, f"/api/{part}")
        assert status == 200, part
    status, _head, body = get(observer, "/api/secrets")
    assert status == 404
    assert "topics" in json.loads(body_of(body))["parts"]


def test_metrics_are_the_prometheus_text_format(tmp_path):
    harness = HubHarness(tmp_path)
    status, head, body = get(observer_of(harness), "/metrics")
    assert status == 200
    assert "text/plain; version=" in head
    assert b"# TYPE hedwig_publish_latency_seconds histogram" in body_of(body)


def test_the_page_embeds_the_status_and_fetches_nothing_from_outside(tmp_path):
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    peer.publish("orders", [b"x"])
    harness.clock.advance(0)
    status, head, body = get(observer_of(harness), "/")
    page = body_of(body).decode()
    assert status == 200 and "text/html" in head
    assert '"topic": "orders"' in page
    for outside in ("http://", "https://", "//cdn", "src="):
        assert outside not in page.replace('xmlns="http://www.w3.org/2000/svg"', ""), outside
    assert get(observer_of(harness), "/nothing-here")[0] == 404


def test_a_guard_is_asked_before_every_request(tmp_path):
    asked = []

    @implementer(IRequestGuard)
    class OnlyWithToken:
        def allows(self, request):
            asked.append(request.path)
            return request.getHeader(b"authorization") == b"Bearer let-me-in"

    observer = observer_of(HubHarness(tmp_path), OnlyWithToken())
    assert get(observer, "/metrics")[0] == 401
    assert get(observer, "/")[0] == 401
    assert get(observer, "/api/status", "Authorization: Bearer let-me-in\r\n")[0] == 200
    assert asked == [b"/metrics", b"/", b"/api/status"]


def test_a_guard_may_answer_later_and_the_request_waits_for_it(tmp_path):
    from twisted.internet.defer import Deferred
    from twisted.internet.error import ConnectionDone
    from twisted.python.failure import Failure

    answers = []

    @implementer(IRequestGuard)
    class Slow:
        def allows(self, request):
            answers.append(Deferred())
            return answers[-1]

    observer = observer_of(HubHarness(tmp_path), Slow())
    channel, transport = connect(observer)
    channel.dataReceived(b"GET /api/status HTTP/1.1\r\nHost: hub\r\n\r\n")
    assert transport.value() == b""  # waiting on the guard, the reactor free
    answers[0].callback(True)
    assert transport.value().startswith(b"HTTP/1.1 200 ")
    channel, transport = connect(observer)
    channel.dataReceived(b"GET /metrics HTTP/1.1\r\nHost: hub\r\n\r\n")
    answers[1].callback(object())  # not True: refused
    assert transport.value().startswith(b"HTTP/1.1 401 ")
    channel, transport = connect(observer)
    channel.dataReceived(b"GET /metrics HTTP/1.1\r\nHost: hub\r\n\r\n")
    channel.connectionLost(Failure(ConnectionDone()))  # the client left before the answer
    answers[2].callback(True)
    assert transport.value() == b""


def test_a_request_with_a_body_is_refused_before_the_body_is_kept(tmp_path):
    observer = observer_of(HubHarness(tmp_path))
    channel, transport = connect(observer)
    channel.dataReceived(b"POST /metrics HTTP/1.1\r\nHost: hub\r\nContent-Length: 1073741824\r\n\r\n")
    assert transport.value().startswith(b"HTTP/1.1 413 ")
    assert transport.disconnecting
    channel.dataReceived(b"x" * 65536)  # what follows is not read, let alone buffered
    assert channel.requests == [] or not channel.requests[-1].content.tell()


def test_a_chunked_request_is_refused_too(tmp_path):
    observer = observer_of(HubHarness(tmp_path))
    channel, transport = connect(observer)
    channel.dataReceived(b"POST / HTTP/1.1\r\nHost: hub\r\nTransfer-Encoding: chunked\r\n\r\n")
    assert transport.value().startswith(b"HTTP/1.1 413 ")
    assert transport.disconnecting


def test_headers_trickled_in_are_cut_off_at_their_deadline(tmp_path):
    """Issue 28, finding 7: one header line every few seconds kept a connection forever
    (any byte reset the idle timer). Its headers must all be in within HEADERS_TIMEOUT_S."""
    harness = HubHarness(tmp_path)
    observer = observer_of(harness)
    channel, transport = connect(observer)
    channel.dataReceived(b"GET /metrics HTTP/1.1\r\n")
    for n in range(HEADERS_TIMEOUT_S - 1):
        harness.clock.advance(1)
        channel.dataReceived(f"X-Slow-{n}: 1\r\n".encode())
    assert not transport.disconnecting
    harness.clock.advance(1)
    assert transport.disconnecting and transport.value().startswith(b"HTTP/1.1 408 ")
    assert observer.site.headers_timed_out == 1


def test_a_connection_that_sends_nothing_is_closed_at_the_headers_deadline(tmp_path):
    harness = HubHarness(tmp_path)
    _channel, transport = connect(observer_of(harness))
    harness.clock.advance(HEADERS_TIMEOUT_S - 0.5)
    assert not transport.disconnecting
    harness.clock.advance(1)
    assert transport.disconnecting


def test_a_kept_alive_connection_idles_until_the_idle_timeout(tmp_path):
    harness = HubHarness(tmp_path)
    channel, transport = connect(observer_of(harness))
    channel.dataReceived(b"GET /api/stats HTTP/1.1\r\nHost: hub\r\n\r\n")
    assert transport.value().startswith(b"HTTP/1.1 200 ")
    harness.clock.advance(IDLE_TIMEOUT_S - 1)  # (no request begun: no headers deadline)
    assert not transport.disconnecting
    harness.clock.advance(2)
    assert transport.disconnecting


def test_a_newcomer_pushes_out_the_oldest_connection_that_proved_nothing(tmp_path):
    """Issue 28, finding 7: connections without credentials held every slot, and an
    admin's scrape was refused. Those that had a request let through keep their slots;
    a newcomer past the limits closes the oldest of the others."""
    harness = HubHarness(tmp_path)
    observer = observer_of(harness, guard=Allow(True))
    site = observer.site
    proven = []
    for _ in range(site.max_connections - site.max_unproven):
        channel, transport = connect(observer)
        channel.dataReceived(b"GET /api/stats HTTP/1.1\r\nHost: hub\r\n\r\n")
        proven.append(transport)
    slow = [connect(observer) for _ in range(site.max_unproven)]
    assert site.open_connections == site.max_connections and len(site.unproven) == site.max_unproven
    newcomer, _ = connect(observer)  # (an admin's scrape, say)
    assert newcomer is not None and site.pushed_out == 1
    assert slow[0][1].disconnecting and not any(t.disconnecting for _, t in slow[1:])
    assert not any(t.disconnecting for t in proven)


def test_when_every_slot_holds_a_proven_connection_a_newcomer_is_refused(tmp_path):
    observer = observer_of(HubHarness(tmp_path))
    site = observer.site
    channels = []
    for _ in range(site.max_connections):
        channel, _ = connect(observer)
        channel.dataReceived(b"GET /api/stats HTTP/1.1\r\nHost: hub\r\n\r\n")
        channels.append(channel)
    assert site.buildProtocol(IPv4Address("TCP", "127.0.0.1", 1)) is None
    channels[0].connectionLost(None)
    assert site.buildProtocol(IPv4Address("TCP", "127.0.0.1", 1)) is not None


def test_methods_other_than_get_and_head_are_405_before_any_credentials(tmp_path):
    """Issue 28: an admin's POST or DELETE got a misleading 401 and a critical traceback."""
    observer = observer_of(HubHarness(tmp_path), guard=Allow(True))
    for method in ("POST", "DELETE", "PUT", "PATCH"):
        channel, transport = connect(observer)
        channel.dataReceived(f"{method} /metrics HTTP/1.1\r\nHost: hub\r\ncontent-length: 0\r\n\r\n".encode())
        head = transport.value().split(b"\r\n\r\n")[0].decode("latin-1").lower()
        assert head.startswith("http/1.1 405 ") and "allow: get, head" in head, head
