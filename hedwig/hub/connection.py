"""One client connection: the Twisted protocol that drives the hub's side of it.

HubConnection is a thin driver. What the protocol promises lives in its session
(HubSideSession, hedwig/protocol/hub_side.py, no I/O: frames, the handshake, the
subscription handles, replies in request order, framing errors as statuses); the
connection hands it the bytes its transport reads and owns the parts that need the hub
or the reactor, each given what it works with when the connection is made:

    session   HubSideSession: bytes in, each request to its op's handler (Hub.handlers,
              hub/handlers.py), replies out in order
    answers   Answerer (answers.py): a request's outcome as its reply, a failure as its
              status, counted and logged
    flow      DeliveryFlow (flow.py): deliveries out, held until their SUBSCRIBE reply,
              and their backpressure (the delivery manager pauses the channel)
    intake    IntakeGuard (partial_requests.py): the hub-wide budget of partial frames,
              and the frame timeout

The connection is what handlers act on (its `replies`, `handles`, `answer` and `fail`
are its parts'), the delivery manager's IDeliveryChannel (the flow's methods, handed over
as they are), and the transport's IPushProducer: when the socket buffer fills, the
delivery manager pauses the channel and the connection stops reading requests, so
neither side buffers without bound. Every byte to the client goes through `write` /
`write_sequence` (hub/sending.py sends what a read produces at its end), and the
connection is closed only with `close_when_sent`.

Error handling, as the protocol promises: a framing error (bad length, oversized frame,
a request before HELLO, a wrong version) is answered and the connection closed once the
earlier replies are out; any other bad request is answered with its status and the
connection goes on. Each refusal is logged once per peer per interval; nothing stored
changes.
"""

from functools import partial

from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.internet.interfaces import IPushProducer
from twisted.internet.protocol import Protocol, ServerFactory
from twisted.logger import Logger
from zope.interface import implementer

from hedwig.concurrency.deferreds import Waiters
from hedwig.config.tls import handshake_failure, is_tls
from hedwig.delivery.interface import ISharedDeliveryChannel
from hedwig.hub.answers import Answerer
from hedwig.hub.flow import DeliveryFlow
from hedwig.hub.partial_requests import IntakeGuard
from hedwig.protocol.hub_side import CHECKING, CLOSED, HubSideSession, IHubSideDriver
from hedwig.protocol.requests import encode_hello_reply
from hedwig.protocol.status import Status

# Requests read but not yet answered, per connection: past either bound the connection
# stops reading until half of them are answered, so a client pipelining publishes faster
# than the disk takes them is slowed by TCP instead of growing the hub's memory.
MAX_INFLIGHT_REQUESTS = 4096
MAX_INFLIGHT_BYTES = 64 * 1024 * 1024


def _describe_peer(address) -> str:
    host = getattr(address, "host", None)
    return f"{host}:{address.port}" if host is not None else str(address)


@implementer(IHubSideDriver, ISharedDeliveryChannel, IPushProducer)
class HubConnection(Protocol):
    log = Logger()
    is_hub_peer = False  # region relays (reserved "__" subscriber ids) are hubs' own connections

    def __init__(self, hub):
        self.hub = hub
        self.peer = "?"
        self.peer_host = "?"  # the peer its client errors are counted under (hub/peerlog.py)
        self.client_name = ""
        self.principal = None  # the user it acts as, with [auth] on (hedwig.auth)
        self.closed = Deferred()  # fires once the connection is gone and its pointers flushed
        self._writes = hub.writes
        self._connected = False
        self._read_paused = False  # the transport was told to stop reading
        self._idle = Waiters()  # stop_reading's callers, fired once no reply is owed
        config = hub.config.hub
        access = None if hub.auth is None else hub.auth.connection_access(self)
        self.session = session = HubSideSession(
            self,
            hub.handlers,
            clock=hub.clock,
            hello_reply=encode_hello_reply(hub.region, hub.name, hub.max_frame_bytes, hub.max_message_bytes),
            hello_timeout_s=config.hello_timeout_s,
            max_frame_bytes=hub.max_frame_bytes,
            max_requests=MAX_INFLIGHT_REQUESTS,
            max_bytes=MAX_INFLIGHT_BYTES,
            gate=access,
            auth_timeout_s=hub.config.auth.auth_timeout_s,
        )
        self.answers = answers = Answerer(self, hub, session.replies)
        self.flow = flow = DeliveryFlow(self, session.handles, hub, self.write, self.write_sequence)
        self.intake = IntakeGuard(self, session, hub.intake, hub.clock, config.frame_timeout_s)
        self._decoder = session.decoder
        # What handlers act on: the session's replies and handles, the answers.
        self.replies = session.replies
        self.handles = session.handles
        self.answer = answers.answer
        self.fail = answers.fail
        # IDeliveryChannel: the delivery manager's calls go to the flow as they are.
        self.deliver = flow.deliver
        self.redeliver = flow.redeliver
        self.deliver_subset = flow.deliver_subset
        self.fetch_done = flow.fetch_done
        self.subscription_ended = flow.subscription_ended
        self.subscription_removed = flow.subscription_removed
        self.release_held = flow.release_held
        self.drop_held = flow.drop_held
        self.forget_subscription = flow.forget_subscription

    # -- lifecycle --------------------------------------------------------------------------

    def connectionMade(self):
        address = self.transport.getPeer()
        self.peer = _describe_peer(address)
        self.peer_host = getattr(address, "host", None) or self.peer
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:  # deliveries are small writes: never wait on Nagle
            set_no_delay(True)
        # The last request of a read: a small write to another connection leaves at once.
        self.session.last_request = partial(self._writes.last_request, self.transport)
        self.transport.registerProducer(self, True)
        self._connected = True
        self.session.start()
        self.hub.connection_made(self)

    def connectionLost(self, reason=None):
        was_reading = self.session.stage is not CLOSED
        self._connected = False
        if was_reading and self._decoder.buffered:  # (after a framing error it was logged already)
            self.client_error(
                "{peer}: disconnected mid-frame; {count} bytes of an incomplete frame discarded",
                count=self._decoder.buffered,
            )
        self.intake.stop()
        self.session.connection_lost()
        failure = handshake_failure(reason) if reason is not None and is_tls(self.transport) else None
        if failure is not None:
            self.client_error("{peer}: {failure}", failure=failure)
        lost = maybeDeferred(self.hub.connection_lost, self)
        lost.addErrback(
            lambda f: self.log.failure("{peer}: flushing subscriptions failed", f, peer=self.peer)
        )
        lost.addBoth(lambda _: self.closed.callback(None))

    def stop_reading(self) -> Deferred:
        """Take no more requests (shutdown); fires once every pending reply is out."""
        self.session.stop_reading()
        if not self.replies.waiting:
            return succeed(None)
        return self._idle.wait()

    def abandon(self) -> None:
        """Close a connection that broke a time limit: nothing more is read or answered,
        and what it held is released now, whether or not its socket goes at once."""
        self.session.stop_reading()
        self.intake.release()
        self.transport.abortConnection()

    @property
    def is_open(self) -> bool:
        """Between connectionMade and connectionLost."""
        return self._connected

    @property
    def max_inflight_requests(self) -> int:
        """Requests read and not yet answered before the connection stops reading (the
        session's bound)."""
        return self.session.max_requests

    @max_inflight_requests.setter
    def max_inflight_requests(self, count: int) -> None:
        self.session.max_requests = count

    @property
    def max_inflight_bytes(self) -> int:
        """Bytes of those requests' bodies likewise."""
        return self.session.max_bytes

    @max_inflight_bytes.setter
    def max_inflight_bytes(self, size: int) -> None:
        self.session.max_bytes = size

    @property
    def subscription_count(self) -> int:
        return len(self.handles)

    @property
    def buffered_bytes(self) -> int:
        """Bytes of an incomplete request frame read and held (observed by /metrics)."""
        return self._decoder.buffered

    # -- bytes in ---------------------------------------------------------------------------

    def dataReceived(self, data):
        session = self.session
        if session.stage is CLOSED:
            return
        writes = self._writes
        writes.begin()  # what this read makes the hub write leaves at its end (sending.py)
        try:
            session.data_received(data)
            if session.stage is CLOSED:  # (closing: what is left of the stream is never read)
                self.intake.release()
            elif self._decoder.partial or self.intake.reserved:  # (else nothing to reserve or release)
                self.intake.after_read()
        finally:
            writes.end()

    # -- bytes out (sending.py: held while a read is handled, then sent at once) -------------

    def write(self, data: bytes) -> None:
        """Send a frame. Every byte to the client goes through here or write_sequence, in
        order; never straight to the transport."""
        self._writes.write(self.transport, data)

    def write_sequence(self, chunks) -> None:
        self._writes.write_sequence(self.transport, chunks)

    def close_when_sent(self) -> None:
        """Close once what was written is sent (transport.loseConnection, after it)."""
        self._writes.flush(self.transport)
        self.transport.loseConnection()

    # -- what the session tells its driver (IHubSideDriver) ------------------------------------

    def greeted(self, client_name: str) -> None:
        self.client_name = client_name
        self.log.info("{peer}: hello from {client}", peer=self.peer, client=client_name or "a client")
        self.hub.stats.record("hello", True, 0.0)

    def refused(self, request_id: int, op: int, status: Status, message: str, closing: bool) -> None:
        stats = self.hub.stats
        if closing:
            stats.protocol_errors += 1
            self.client_error(
                "{peer}: {status}: {message}; closing the connection", status=status.name, message=message
            )
            return
        if status is Status.UNKNOWN_OPERATION:
            stats.unknown_operations += 1
        self.client_error(
            "{peer}: request {request_id} (op {op}) refused: {status}: {message}",
            request_id=request_id,
            op=op,
            status=status.name,
            message=message,
        )

    def request_failed(self, error: Exception, request_id: int, op: int, started: float) -> None:
        self.answers.fail(error, None, request_id, op, started)

    def reading_changed(self) -> None:
        self.update_reading()

    def replies_idle(self) -> None:
        self._idle.fire()

    def hello_overdue(self, timeout: float) -> None:
        if not self._connected:
            return
        self.hub.stats.hello_timeouts += 1
        self.client_error(
            "{peer}: no HELLO within {timeout:g}s of connecting ({count} bytes received);"
            " closing the connection",
            timeout=timeout,
            count=self._decoder.buffered,
        )
        self.abandon()

    def admitted(self) -> None:
        self.hub.auth.room.proven(self)

    def auth_overdue(self, timeout: float) -> None:
        if self._connected:
            self.hub.auth.room.overdue(self, timeout)

    @property
    def checking(self) -> bool:
        """Whether the connection's AUTH is being checked now."""
        return self.session.stage is CHECKING

    def client_error(self, format: str, **fields) -> None:
        """A line about this client's mistake: once per peer per interval (hub/peerlog.py)."""
        self.hub.client_errors.warn(self.log, self.peer_host, format, peer=self.peer, **fields)

    # -- what the gate tells the connection (hedwig.auth.gate) ------------------------------

    def refuse_and_close(self, request_id: int, op: int, status: Status, message: str, after) -> None:
        """Read nothing more; once `after` (a Deferred: a failed AUTH's delay) fires,
        answer with `status` and close once the earlier replies are out."""
        self.session.stop_reading()

        def refuse(_):
            if self._connected:
                self.session.refuse_and_close(request_id, op, status, message)

        after.addCallback(refuse)

    # -- reading: IPushProducer (registered on the transport) ---------------------------------

    def pauseProducing(self):
        self.flow.transport_full = True
        self.update_reading()  # read no requests while the client reads nothing
        self.flow.update()

    def resumeProducing(self):
        self.flow.transport_full = False
        self.update_reading()
        self.flow.update()

    def stopProducing(self):
        self.session.stop_reading()

    def update_reading(self) -> None:
        """Read requests unless the session takes none (closing, or too many in flight),
        the socket is full, or the frame in progress waits for the hub's intake budget."""
        pause = not self.session.reading or self.flow.transport_full or self.intake.awaiting
        if pause == self._read_paused or not self._connected or self.transport.disconnecting:
            return
        self._read_paused = pause
        if pause:
            self.transport.pauseProducing()
        else:
            self.intake.reading_resumed()
            self.transport.resumeProducing()


class HubFactory(ServerFactory):
    """Makes a HubConnection per accepted socket, all serving one Hub."""

    noisy = False  # the hub logs its own start and stop

    def __init__(self, hub):
        self.hub = hub

    def buildProtocol(self, addr):
        connection = HubConnection(self.hub)
        connection.factory = self
        return connection
