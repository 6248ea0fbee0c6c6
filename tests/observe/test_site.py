"""The HTTP listener's site byte for byte (StringTransport, task.Clock) over a hub of
real parts: routes, JSON, the guard seam, and what a hostile peer can and cannot cost."""

import json

from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport
from zope.interface import implementer

from hedwig.observe.interface import IRequestGuard
from hedwig.observe.listener import HttpObserver
from hedwig.observe.resources import IDLE_TIMEOUT_S
from tests.hub.harness import HubHarness


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


def test_an_idle_connection_is_closed_after_the_timeout(tmp_path):
    harness = HubHarness(tmp_path)
    observer = observer_of(harness)
    channel, transport = connect(observer)
    channel.dataReceived(b"GET /metr")  # a request begun and never finished
    harness.clock.advance(IDLE_TIMEOUT_S - 1)
    assert not transport.disconnecting
    harness.clock.advance(2)
    assert transport.disconnecting


def test_connections_past_the_cap_are_refused(tmp_path):
    observer = observer_of(HubHarness(tmp_path))
    site = observer.site
    channels = [connect(observer)[0] for _ in range(site.max_connections)]
    assert site.buildProtocol(IPv4Address("TCP", "127.0.0.1", 1)) is None
    channels[0].connectionLost(None)
    assert site.buildProtocol(IPv4Address("TCP", "127.0.0.1", 1)) is not None
