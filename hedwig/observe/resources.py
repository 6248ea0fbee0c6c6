"""The twisted.web resources of the hub's HTTP listener, and the site that bounds them.

    /               the status page (page.py)
    /metrics        Prometheus text format (metrics.py, rendered by prometheus-client)
    /api/           the parts below, each with its path (an index, as JSON)
    /api/status     everything the page shows, as JSON
    /api/topics, /api/subscriptions, /api/connections, /api/regions, /api/history, /api/stats
                    one part each

Hostile peers cost little: every answer is computed from memory on the reactor and is
bounded (tables cut to view.MAX_ROWS, metric labels capped); a request announcing a body
(these resources take none) is answered 413 and its connection closed before any of it
is kept; an idle or slow connection is dropped after IDLE_TIMEOUT_S; past
MAX_CONNECTIONS open at once, new ones are closed at once.

A hedwig client pointed at this port by mistake (`hedwig --hub HOST:4081 ...`) is told
so at once: a connection whose first bytes cannot begin an HTTP request is not HTTP, and
when they are a hedwig HELLO frame it is answered as a hub would refuse it
(COULD_NOT_CONNECT, naming the hub's own port), so the client fails in a moment with that
sentence instead of waiting for a reply that never comes; anything else is answered 400.
"""

import json

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from twisted.internet.defer import maybeDeferred
from twisted.logger import Logger
from twisted.web.http import HTTPChannel
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Request, Site

from hedwig.observe.page import render_page
from hedwig.protocol.framing import FrameDecoder, FrameError
from hedwig.protocol.ops import Op
from hedwig.protocol.responses import response_frame
from hedwig.protocol.status import Status

IDLE_TIMEOUT_S = 30
MAX_CONNECTIONS = 64
MAX_BODY_BYTES = 0  # nothing here reads a body


def _json(request, value) -> bytes:
    request.setHeader(b"content-type", b"application/json; charset=utf-8")
    request.setHeader(b"cache-control", b"no-store")
    return json.dumps(value, sort_keys=True).encode()


class MetricsResource(Resource):
    isLeaf = True  # noqa: N815 - twisted.web's name

    def __init__(self, registry):
        super().__init__()
        self.registry = registry

    def render_GET(self, request):
        request.setHeader(b"content-type", CONTENT_TYPE_LATEST.encode())
        return generate_latest(self.registry)


class _ObserverLeaf(Resource):
    """A leaf below the root that answers from the HttpObserver (its status, history
    and HubView): the page and /api read the same one."""

    isLeaf = True  # noqa: N815 - twisted.web's name

    def __init__(self, observer):
        super().__init__()
        self.observer = observer


class ApiResource(_ObserverLeaf):
    """/api/<part>: the status page's JSON, whole (status) or one part of it."""

    def render_GET(self, request):
        if request.postpath in ([], [b""]):  # /api or /api/: what there is
            return _json(request, {"parts": {name: f"/api/{name}" for name in API_PARTS}})
        part = request.postpath[0].decode("ascii", "replace")
        observer = self.observer
        if part == "region" and len(request.postpath) == 1:  # (asks the region's other hubs)
            return _later(request, observer.region_listing())
        view = observer.view
        parts = {
            "status": observer.status,
            "topics": lambda: view.topics(observer.history.topic_rates),
            "subscriptions": view.subscriptions,
            "connections": view.connections,
            "regions": view.regions,
            "history": lambda: list(observer.history.samples),
            "stats": view.counters,
        }
        read = parts.get(part)
        if read is None or len(request.postpath) > 1:
            request.setResponseCode(404)
            return _json(request, {"error": f"no such part: {part}", "parts": list(API_PARTS)})
        return _json(request, read())


# What /api/ serves, in the order its index lists them.
API_PARTS = ("status", "topics", "subscriptions", "connections", "regions", "region", "history", "stats")


def _later(request, answer):
    """Answer `request` with the JSON of a Deferred's result (a 503 saying why if it
    fails); NOT_DONE_YET meanwhile. A request whose client left is dropped."""
    gone = []
    request.notifyFinish().addErrback(gone.append)

    def write(value):
        if not gone:
            request.write(_json(request, value))
            request.finish()

    def failed(failure):
        if not gone:
            request.setResponseCode(503)
            request.write(_json(request, {"error": failure.getErrorMessage()}))
            request.finish()

    answer.addCallbacks(write, failed)
    return NOT_DONE_YET


class PageResource(_ObserverLeaf):
    def render_GET(self, request):
        if request.postpath not in ([], [b""]):
            return NotFound().render(request)
        request.setHeader(b"content-type", b"text/html; charset=utf-8")
        request.setHeader(b"cache-control", b"no-store")
        observer = self.observer
        return render_page(observer.status(), observer.history.interval_s).encode()


class _PlainTextAnswer(Resource):
    """One fixed plain-text answer, whatever the method and path: its status `code` and
    `text`, which each answer names."""

    isLeaf = True  # noqa: N815 - twisted.web's name
    code: int
    text: bytes

    def render(self, request):
        request.setResponseCode(self.code)
        request.setHeader(b"content-type", b"text/plain; charset=utf-8")
        return self.text


class NotFound(_PlainTextAnswer):
    code = 404
    text = b"not found: the status page is /, metrics /metrics, JSON /api/status\n"


class Refused(_PlainTextAnswer):
    code = 401
    text = b"not authorized\n"


class RootResource(Resource):
    """Routes to the page, /metrics and /api, asking the guard (IRequestGuard) first.

    The guard may answer at once (a bool) or later (a Deferred[bool]: a password check on
    a thread pool), so the root is a leaf that routes by hand once the answer is in; the
    request waits meanwhile without holding the reactor, and one whose client left is
    dropped when the answer comes."""

    isLeaf = True  # noqa: N815 - twisted.web's name
    log = Logger()

    def __init__(self, observer, registry, guard=None):
        super().__init__()
        self.guard = guard
        self.parts = {
            b"": PageResource(observer),
            b"metrics": MetricsResource(registry),
            b"api": ApiResource(observer),
        }

    def render(self, request):
        if self.guard is None:
            return self._serve(request)
        deciding = maybeDeferred(self.guard.allows, request)
        gone = []
        request.notifyFinish().addErrback(gone.append)
        deciding.addCallback(self._decided, request, gone)
        deciding.addErrback(self._guard_failed, request, gone)
        return NOT_DONE_YET

    def _decided(self, allowed, request, gone):
        if gone:
            return
        served = allowed is True  # (anything but True refuses: a guard's mistake fails closed)
        body = self._serve(request) if served else Refused().render(request)
        if body is NOT_DONE_YET:  # (a part that answers later finishes the request itself)
            return
        request.write(body)
        request.finish()

    def _guard_failed(self, failure, request, gone):
        self.log.failure("the HTTP listener's guard failed; refusing the request", failure)
        self._decided(False, request, gone)

    def _serve(self, request) -> bytes:
        """The answer of the part the path names (the page for /)."""
        first = request.postpath[0] if request.postpath else b""
        part = self.parts.get(first)
        if part is None:
            return NotFound().render(request)
        if request.postpath:
            request.prepath.append(request.postpath.pop(0))
        return part.render(request)


class BoundedRequest(Request):
    """A request that may carry no body: one announced (or chunked) is refused with 413
    and the connection closed, before a byte of it is buffered."""

    def gotLength(self, length):
        if length is None or length > MAX_BODY_BYTES:
            transport = self.channel.transport
            transport.write(
                b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
            transport.loseConnection()
            self.channel._requests_refused = True
            length = 0
        super().gotLength(length)


# What an HTTP request's first byte may be: a method's letter, or the empty lines a
# server should skip before the request line (RFC 9112, 2.2).
_HTTP_FIRST_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\r\n")
# A hedwig HELLO is a few dozen bytes: a frame announcing more is not one.
_MAX_HELLO_BYTES = 4096


class BoundedChannel(HTTPChannel):
    """An HTTP/1.1 channel counted by its site, reading nothing after a refused body, and
    answering a connection that does not speak HTTP (see the module docstring)."""

    _requests_refused = False
    _first_seen = False

    def dataReceived(self, data):
        if self._requests_refused:
            return
        if not self._first_seen and data:
            self._first_seen = True
            if data[0] not in _HTTP_FIRST_BYTES:
                self._not_http(data)
                return
        super().dataReceived(data)

    def _not_http(self, data: bytes) -> None:
        """The peer speaks something else: a hedwig client's HELLO is refused in hedwig's
        own terms, naming the hub's port; anything else gets a 400. Then the connection
        closes."""
        self._requests_refused = True
        local = self.transport.getHost()
        here = f"{local.host}:{local.port}"
        hub = self.site.hub_name() if self.site.hub_name is not None else ""
        where = f" of hedwig hub {hub}" if hub else " of a hedwig hub"
        told = f"{here} is the HTTP port{where} (its status page, /metrics and /api), not a hedwig port"
        if hub:
            told += f": use --hub {hub}"
        try:
            frames = FrameDecoder(_MAX_HELLO_BYTES).feed(data)
        except FrameError:
            frames = []
        if frames and frames[0][0] == Op.HELLO:
            self.transport.write(response_frame(frames[0][1], Op.HELLO, Status.COULD_NOT_CONNECT, told))
        else:
            body = f"not an HTTP request: {told}\n".encode()
            self.transport.write(
                b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
            )
        self.transport.loseConnection()

    def connectionLost(self, reason):
        self.site.open_connections -= 1
        super().connectionLost(reason)


class ObservationSite(Site):
    """The listener's site: bounded requests, an idle timeout, a connection cap, and no
    access log (Prometheus scrapes every few seconds; the hub's log is for events)."""

    protocol = BoundedChannel
    requestFactory = BoundedRequest  # noqa: N815
    displayTracebacks = False  # noqa: N815
    noisy = False

    def __init__(
        self,
        resource,
        reactor,
        max_connections: int = MAX_CONNECTIONS,
        timeout: float = IDLE_TIMEOUT_S,
        hub_name=None,
    ):
        super().__init__(resource, timeout=timeout, reactor=reactor)  # idle timeouts on the hub's clock
        self.max_connections = max_connections
        self.open_connections = 0
        self.hub_name = hub_name  # () -> the hub's "host:port", named to a client that took this port for it

    def buildProtocol(self, addr):
        if self.open_connections >= self.max_connections:
            return None  # the connection is closed at once
        channel = super().buildProtocol(addr)
        self.open_connections += 1
        return channel

    def log(self, request):
        pass
