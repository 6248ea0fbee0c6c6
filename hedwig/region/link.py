"""The link from a child region's hub to its parent's: one connection, both directions.

Links are configured child -> parent only (a parent does not know its children's
addresses), so the child connects, and keeps connecting: HELLO, then REGION_LINK naming
its region. The parent answers with its region and its path to the root; the child
refuses a parent that is not the region it was configured with, or whose path holds its
own name (a cycle), and waits while that path does not reach a root yet. Once linked, a
LinkSession (session.py) relays both ways over the connection until it breaks.

States: connecting -> linking -> relaying; any failure -> retrying (after a back-off
doubling from `retry_backoff_ms` to `max_retry_backoff_ms`, trying the parent's
addresses in turn); a refusal -> refused, retried at the longest back-off (the hierarchy
may be fixed meanwhile); a parent not yet linked to the root -> waiting. A request left
unanswered `link_timeout_s` drops the connection. None of this blocks anything local:
publishes and local deliveries never wait on a link.
"""

from functools import partial

from twisted.internet.defer import Deferred, succeed
from twisted.internet.protocol import ClientFactory, Protocol
from twisted.logger import Logger

from hedwig.config.tls import TlsError, handshake_failure
from hedwig.protocol.addresses import format_address, parse_addresses
from hedwig.protocol.auth_request import Credentials
from hedwig.protocol.ops import Op
from hedwig.protocol.requests import RequestRefused, decode_hello_reply, encode_hello
from hedwig.protocol.session import HubSession, ProtocolViolation
from hedwig.protocol.status import Status
from hedwig.region.backoff import Backoff
from hedwig.region.path import cycle_through
from hedwig.region.settings import read_parent_password
from hedwig.region.wire import (
    SEVERAL_HUBS,
    decode_region_link_reply,
    encode_region_link,
    region_link_reply_flags,
)

_logger = Logger()

STOPPED = "stopped"
CONNECTING = "connecting"
LINKING = "linking"
RELAYING = "relaying"
RETRYING = "retrying"
WAITING = "waiting"  # the parent's path does not reach a root yet
REFUSED = "refused"  # a misconfigured hierarchy: a cycle, or the wrong region at the address


class LinkDropped(Exception):
    """The link's connection ended before the request was answered."""


class LinkProtocol(Protocol):
    """One link connection: its bytes go through a HubSession (hedwig.protocol.session),
    the same sans-IO session the clients drive, and each frame to its ParentLink while
    this connection is the link's current one."""

    def __init__(self, link, max_frame_bytes: int):
        self.link = link
        # Replies keep their payloads raw (REGION_LINK's and RELAY_PUBLISH's are the
        # link's to decode); the parent's REGION_INTEREST and TOPIC_OPTIONS come as requests.
        self.channel = HubSession(
            self, max_frame_bytes, raw_responses=True, accepts=(Op.REGION_INTEREST, Op.TOPIC_OPTIONS)
        )

    def connectionMade(self):
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:
            set_no_delay(True)
        self.link._connected(self)

    def dataReceived(self, data):
        try:
            self.channel.data_received(data)
        except ProtocolViolation as e:
            self.link.drop(f"the parent sent something no hub sends: {e}")

    def connectionLost(self, reason):
        self.link._lost(self, reason)

    # -- ISessionReceiver: replies and requests, while this is the link's connection ---------
    # (Deliveries and events go by handle to the relay subscriptions, session.py's _Down.)

    def response_received(self, request_id, response, pending):
        if self.link._protocol is self:
            self.link._answered(request_id, response, pending)

    def request_received(self, op, request_id, body):
        session = self.link.session
        if self.link._protocol is self and session is not None:
            if op == Op.TOPIC_OPTIONS:
                session.options_pushed(body)
            else:
                session.interest(body)  # (REGION_INTEREST)


class _LinkFactory(ClientFactory):
    """One connection attempt."""

    noisy = False  # the link logs its own attempts

    def __init__(self, link, address):
        self.link = link
        self.address = address

    def buildProtocol(self, addr):
        protocol = LinkProtocol(self.link, self.link._max_frame_bytes)
        protocol.factory = self
        return protocol

    def clientConnectionFailed(self, connector, reason):
        self.link._connect_failed(reason, self.address)


class ParentLink:
    """The child's side of the link to its parent region."""

    def __init__(self, manager, settings, reactor, *, max_frame_bytes: int, tls=None, rng=None, address=None):
        """`tls`: a hedwig.config.tls.ClientTls to reach the parent with, None for plain TCP.
        `address`: one hub of a parent region of several, instead of parent_address."""
        self.manager = manager
        self.tls = tls
        self.region = settings.name
        self.parent = settings.parent
        self.addresses = parse_addresses(address or settings.parent_address)
        self.parent_hub = None  # the name the parent hub answering HELLO gave itself
        self.several_hubs = False  # its REGION_LINK reply said its region runs on several
        self.timeout = settings.link_timeout_s
        # AUTH after HELLO, when the parent authenticates its children ([auth] there)
        self.credentials = None
        if settings.parent_user:
            self.credentials = Credentials(settings.parent_user, read_parent_password(settings))
        self.backoff = Backoff(
            settings.retry_backoff_ms / 1000, settings.max_retry_backoff_ms / 1000, rng=rng
        )
        self._reactor = reactor
        self._max_frame_bytes = max_frame_bytes
        self.state = STOPPED
        self.reason = ""
        self.address = None  # the address of the current (or last) attempt
        self.attempts = 0
        self.links = 0  # times the link came up
        self.connected_at = None
        self.retry_at = None
        self.session = None
        self._protocol = None
        self._rotation = 0
        self._retry_call = None
        self._retry_delay = None  # set by a refusal or a wait: the delay after this connection
        self._running = False
        self._closed_waiters = []
        self._logged_reason = None
        self._drop_reason = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        if self._running:
            return
        self._running = True
        self._attempt()

    def stop(self) -> Deferred:
        """Stop retrying and close the connection; fires once it is closed."""
        self._running = False
        self._cancel_retry()
        self.state = STOPPED
        self.reason = ""
        protocol = self._protocol
        if protocol is None:
            return succeed(None)
        waiter = Deferred()
        self._closed_waiters.append(waiter)
        protocol.transport.loseConnection()
        return waiter

    def drop(self, reason: str) -> None:
        """Abort the connection (it is retried): a timeout, a bad frame, a relay failure."""
        protocol = self._protocol
        if protocol is None:
            return
        self._drop_reason = reason
        _logger.warn("region link to {parent}: {reason}; reconnecting", parent=self.parent, reason=reason)
        protocol.transport.abortConnection()

    def _attempt(self) -> None:
        self._retry_call = None
        self.retry_at = None
        if not self._running:
            return
        address = self.addresses[self._rotation % len(self.addresses)]
        self._rotation += 1
        self.address = address
        self.attempts += 1
        self.state = CONNECTING
        factory = _LinkFactory(self, address)
        if self.tls is None:
            self._reactor.connectTCP(address[0], address[1], factory, timeout=self.timeout)
            return
        try:
            creator = self.tls.creator(address[0])  # (read each attempt: renewed files are picked up)
        except TlsError as e:
            self._retry_later(RETRYING, f"cannot set up TLS for {format_address(address)}: {e}")
            return
        self._reactor.connectSSL(address[0], address[1], factory, creator, timeout=self.timeout)

    def _connect_failed(self, failure, address) -> None:
        if not self._running:
            return
        self._retry_later(RETRYING, f"cannot reach {format_address(address)}: {failure.getErrorMessage()}")

    def _retry_later(self, state: str, reason: str, delay: float | None = None) -> None:
        if not self._running:
            return
        self.state = state
        self.reason = reason
        if delay is None:
            delay = self.backoff.next_delay()
        self.retry_at = self._reactor.seconds() + delay
        if reason != self._logged_reason:
            self._logged_reason = reason
            log = _logger.error if state == REFUSED else _logger.warn
            log(
                "region link to {parent}: {reason}; retrying in {delay:.1f}s",
                parent=self.parent,
                reason=reason,
                delay=delay,
            )
        self._cancel_retry()
        self._retry_call = self._reactor.callLater(delay, self._attempt)

    def _cancel_retry(self) -> None:
        if self._retry_call is not None and self._retry_call.active():
            self._retry_call.cancel()
        self._retry_call = None

    # -- the handshake ------------------------------------------------------------------------

    def _connected(self, protocol) -> None:
        if not self._running:
            protocol.transport.loseConnection()
            return
        self._protocol = protocol
        self._retry_delay = None
        self.state = LINKING
        greeted = self.request(Op.HELLO, encode_hello(f"hub of region {self.region}"))
        greeted.addCallbacks(self._greeted, lambda _failure: None)
        if self.credentials is None:
            self._link()
            return
        # REGION_LINK waits for the AUTH reply: the parent takes nothing while it checks.
        authenticated = self.request(Op.AUTH, self.credentials.request_body())
        authenticated.addCallbacks(self._authenticated, lambda _failure: None)

    def _authenticated(self, reply) -> None:
        status, message, _payload = reply
        if status is not Status.SUCCESS:
            where = format_address(self.address)
            self._close(REFUSED, f"{where} refused AUTH as {self.credentials.user}: {status.name}: {message}")
            return
        self._link()

    def _link(self) -> None:
        # A hub of a region of several hubs names itself: the parent keeps a link per hub.
        me = self.manager.hub.name if self.manager.ownership.shared else ""
        linked = self.request(Op.REGION_LINK, encode_region_link(self.region, me))
        linked.addCallbacks(self._linked, lambda _failure: None)  # (a lost connection retries)

    def _greeted(self, reply) -> None:
        status, message, payload = reply
        if status is not Status.SUCCESS:
            self._close(REFUSED, f"the parent refused HELLO: {status.name}: {message}")
            return
        try:
            self.parent_hub = decode_hello_reply(payload).hub_name or None
        except RequestRefused:
            self.parent_hub = None

    def _linked(self, reply) -> None:
        status, message, payload = reply
        where = format_address(self.address)
        if status is Status.REGION_REFUSED:
            self._close(REFUSED, f"{where} refused the link: {message}")
            return
        if status is not Status.SUCCESS:
            self._close(RETRYING, f"{where} answered REGION_LINK with {status.name}: {message}")
            return
        try:
            region, path, complete = decode_region_link_reply(payload)
            self.several_hubs = bool(region_link_reply_flags(payload) & SEVERAL_HUBS)
        except RequestRefused as e:
            self._close(RETRYING, f"{where} sent a bad REGION_LINK reply: {e.reason}")
            return
        if region != self.parent:
            self._close(
                REFUSED, f"{where} serves region {region}, not the configured parent region {self.parent}"
            )
            return
        cycle = cycle_through(path, self.region)
        # Learnt even when refused: a cycle's regions see each other's paths grow this way.
        self.manager.path_learned(path, complete and cycle is None)
        if cycle is not None:
            self._close(REFUSED, cycle)
            return
        if not complete:
            self._close(
                WAITING, f"region {self.parent} does not reach a root region yet (path {' -> '.join(path)})"
            )
            return
        self.state = RELAYING
        self.reason = ""
        self._logged_reason = None
        self.backoff.reset()
        self.connected_at = self._reactor.seconds()
        self.links += 1
        _logger.info(
            "region link to {parent} at {where} is up (path {path})",
            parent=self.parent,
            where=where,
            path=" -> ".join([self.region, *path]),
        )
        self.session = self.manager.link_up(self)

    def _close(self, state: str, reason: str) -> None:
        """End this connection; the next attempt waits as `state` says."""
        delay = self.backoff.longest() if state == REFUSED else self.backoff.next_delay()
        self._retry_delay = (state, reason, delay)
        protocol = self._protocol
        if protocol is not None:
            protocol.transport.loseConnection()

    # -- requests -----------------------------------------------------------------------------

    @property
    def is_up(self) -> bool:
        return self.state == RELAYING and self._protocol is not None

    def request(self, op: Op, body: bytes) -> Deferred:
        """Deferred[(status, message, payload)]; fails with LinkDropped if the connection ends."""
        channel = self._protocol_channel()
        return self._send_request(op, partial(channel.request, op, body))

    def request_parts(self, op: Op, make_parts) -> Deferred:
        """As request, for a frame built by make_parts(request_id) as chunks."""
        channel = self._protocol_channel()
        return self._send_request(op, partial(channel.request_parts, op, make_parts))

    def subscribe(self, position, subscriber) -> Deferred:
        """SUBSCRIBE at the parent as `position` asks (hedwig.protocol.position); the
        protocol session attaches `subscriber` (an ISubscriber) when the parent agrees.
        Deferred[(status, message, payload)] as `request`."""
        channel = self._protocol_channel()
        return self._send_request(Op.SUBSCRIBE, partial(channel.subscribe, position, subscriber))

    def _protocol_channel(self):
        if self._protocol is None:
            raise LinkDropped("the region link is not connected")
        return self._protocol.channel

    def _send_request(self, op: Op, build) -> Deferred:
        """build(pending) -> (request id, frame or chunks), written at once; the reply (or
        LinkDropped) goes to pending's Deferred, and a reply later than link_timeout_s
        drops the link."""
        pending = [Deferred(), None]
        request_id, frame = build(pending)
        pending[1] = self._reactor.callLater(self.timeout, self._timed_out, request_id, op)
        if isinstance(frame, list):
            self._protocol.transport.writeSequence(frame)
        else:
            self._protocol.transport.write(frame)
        return pending[0]

    def consume(self, handle: int, seq: int) -> None:
        """Move the consumed seq-id of the relay subscription `handle` at the parent (a
        CONSUME is answered only when it fails)."""
        if self._protocol is not None:
            self._protocol.transport.write(self._protocol.channel.consume(handle, seq))

    def release(self, handle: int) -> None:
        """The relay subscription `handle` is given up: its frames go to nobody."""
        if self._protocol is not None:
            self._protocol.channel.release(handle)

    def _timed_out(self, request_id: int, op: Op) -> None:
        protocol = self._protocol
        if protocol is not None and protocol.channel.waiting(request_id):
            self.drop(f"no reply to {op.name} in {self.timeout:g}s")

    def pause_reading(self) -> None:
        if self._protocol is not None:
            self._protocol.transport.pauseProducing()

    def resume_reading(self) -> None:
        if self._protocol is not None:
            self._protocol.transport.resumeProducing()

    # -- frames in ----------------------------------------------------------------------------

    def _answered(self, request_id: int, response, pending) -> None:
        _answered, status, message, payload = response
        if pending is not None:
            d, timer = pending
            if timer is not None and timer.active():
                timer.cancel()
            d.callback((status, message, payload))
        elif status is not Status.SUCCESS:  # a CONSUME refused
            self.drop(f"the parent refused request {request_id}: {status.name}: {message}")

    def _lost(self, protocol, reason) -> None:
        if protocol is not self._protocol:
            return
        self._protocol = None
        self.connected_at = None
        dropped = LinkDropped(f"region link to {self.parent} lost: {reason.getErrorMessage()}")
        for d, timer in protocol.channel.take_pending():
            if timer is not None and timer.active():
                timer.cancel()
            d.errback(dropped)
        session, self.session = self.session, None
        if session is not None:
            session.close()
            self.manager.link_down(self)
        waiters, self._closed_waiters = self._closed_waiters, []
        for waiter in waiters:
            waiter.callback(None)
        if not self._running:
            return
        if self._retry_delay is not None:
            state, why, delay = self._retry_delay
            self._retry_delay = None
            self._retry_later(state, why, delay)
        else:
            why = (
                self._drop_reason
                or self._tls_failure(reason)
                or f"connection lost: {reason.getErrorMessage()}"
            )
            self._retry_later(RETRYING, why)
        self._drop_reason = None

    def _tls_failure(self, reason) -> str | None:
        if self.tls is None:
            return None
        failure = handshake_failure(reason, "does parent_address name the parent's [tls] port?")
        if failure is None:
            return None
        return f"{format_address(self.address)}: {failure}"

    # -- observation --------------------------------------------------------------------------

    def describe(self) -> dict:
        now = self._reactor.seconds()
        return {
            "parent": self.parent,
            "parent_hub": self.parent_hub,
            "address": format_address(self.address) if self.address else None,
            "addresses": [format_address(a) for a in self.addresses],
            "tls": self.tls is not None,
            "state": self.state,
            "reason": self.reason,
            "attempts": self.attempts,
            "links": self.links,
            "up_for_s": round(now - self.connected_at, 3) if self.connected_at is not None else None,
            "retry_in_s": round(max(0.0, self.retry_at - now), 3) if self.retry_at is not None else None,
        }
