"""One client connection: frames in, replies in request order, deliveries out.

The connection decodes frames, checks the handshake, keeps the connection's
subscriptions (channel-local handles), and orders replies; the work itself is the
Hub's (core.py). It is the delivery manager's IDeliveryChannel, and the transport's
IPushProducer: when the socket buffer fills, the delivery manager pauses the channel and
the connection stops reading requests, so neither side buffers without bound.

Error handling, as the protocol promises: a framing error (bad length, oversized frame,
a request before HELLO, a wrong version) is answered and the connection closed once the
earlier replies are out; any other bad request is answered with its status and the
connection goes on. Each refusal is logged once; nothing stored changes.

HubConnection is split by job: this module reads frames, dispatches them and orders the
replies; handlers.py holds the handler of each op (the HANDLERS table); flow.py the
deliveries and the backpressure both ways.
"""

from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.interfaces import IPushProducer
from twisted.internet.protocol import Protocol, ServerFactory
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from hedwig.config.tls import handshake_failure, is_tls
from hedwig.delivery.interface import ISharedDeliveryChannel
from hedwig.hub.errors import status_for
from hedwig.hub.flow import DeliveryFlow
from hedwig.hub.partial_requests import PartialRequests
from hedwig.hub.replies import ReplyQueue
from hedwig.hub.stats import op_name
from hedwig.meta.interface import OwnershipLost
from hedwig.protocol.framing import FrameDecoder, FrameError, FrameTooLarge
from hedwig.protocol.handles import HandleTable
from hedwig.protocol.ops import PROTOCOL_VERSION, Op
from hedwig.protocol.requests import RequestRefused, decode_hello, encode_hello_reply
from hedwig.protocol.responses import response_frame
from hedwig.protocol.status import Status
from hedwig.topiclog.errors import TopicFenced

# Requests read but not yet answered, per connection: past either bound the connection
# stops reading until half of them are answered, so a client pipelining publishes faster
# than the disk takes them is slowed by TCP instead of growing the hub's memory.
MAX_INFLIGHT_REQUESTS = 4096
MAX_INFLIGHT_BYTES = 64 * 1024 * 1024


def _describe_peer(address) -> str:
    host = getattr(address, "host", None)
    return f"{host}:{address.port}" if host is not None else str(address)


@implementer(ISharedDeliveryChannel, IPushProducer)
class HubConnection(DeliveryFlow, PartialRequests, Protocol):
    log = Logger()
    is_hub_peer = False  # region relays (reserved "__" subscriber ids) are hubs' own connections

    def __init__(self, hub):
        self.hub = hub
        self.peer = "?"
        self.peer_host = "?"  # the peer its client errors are counted under (hub/peerlog.py)
        self.client_name = ""
        self.principal = None  # the user it acts as, with [auth] on (hedwig.auth)
        self.access = None if hub.auth is None else hub.auth.connection_access(self)
        self.closed = Deferred()  # fires once the connection is gone and its pointers flushed
        self._decoder = FrameDecoder(hub.max_frame_bytes)
        self._handlers = hub.handlers  # op -> handle(connection, request_id, body, started)
        self.replies = None  # ReplyQueue, once connected
        self.handles = HandleTable()  # the subscriptions attached here, by handle
        self._greeted = False
        self._reading = True  # False once closing or draining: further requests are ignored
        self._read_paused = False  # the transport was told to stop reading
        self._too_busy = False
        self.max_inflight_requests = MAX_INFLIGHT_REQUESTS
        self.max_inflight_bytes = MAX_INFLIGHT_BYTES
        self._transport_full = False
        self._delivery_paused = False
        self._connected = False

    # -- lifecycle --------------------------------------------------------------------------

    def connectionMade(self):
        address = self.transport.getPeer()
        self.peer = _describe_peer(address)
        self.peer_host = getattr(address, "host", None) or self.peer
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:  # deliveries are small writes: never wait on Nagle
            set_no_delay(True)
        self.replies = ReplyQueue(self.write, self.write_sequence, self._replies_released)
        self.transport.registerProducer(self, True)
        self._connected = True
        self._start_hello_timer()
        self.hub.connection_made(self)

    def connectionLost(self, reason=None):
        was_reading = self._reading
        self._reading = False
        self._connected = False
        if was_reading and self._decoder.buffered:  # (after a framing error it was logged already)
            self._client_error(
                "{peer}: disconnected mid-frame; {count} bytes of an incomplete frame discarded",
                count=self._decoder.buffered,
            )
        self._stop_partial_requests()
        failure = handshake_failure(reason) if reason is not None and is_tls(self.transport) else None
        if failure is not None:
            self._client_error("{peer}: {failure}", failure=failure)
        self.replies.discard()
        self.handles.clear()
        lost = maybeDeferred(self.hub.connection_lost, self)
        lost.addErrback(
            lambda f: self.log.failure("{peer}: flushing subscriptions failed", f, peer=self.peer)
        )
        lost.addBoth(lambda _: self.closed.callback(None))

    def stop_reading(self) -> Deferred:
        """Take no more requests (shutdown); fires once every pending reply is out."""
        self._reading = False
        self._update_reading()
        return self.replies.when_idle()

    @property
    def is_open(self) -> bool:
        """Between connectionMade and connectionLost."""
        return self._connected

    @property
    def subscription_count(self) -> int:
        return len(self.handles)

    @property
    def buffered_bytes(self) -> int:
        """Bytes of an incomplete request frame read and held (observed by /metrics)."""
        return self._decoder.buffered

    # -- frames in --------------------------------------------------------------------------

    def dataReceived(self, data):
        if not self._reading:
            return
        writes = self.hub.writes
        writes.begin()  # what this read makes the hub write leaves at its end (sending.py)
        try:
            self._read(data)
        finally:
            writes.end()

    def _read(self, data) -> None:
        framing_error = None
        try:
            frames = self._decoder.feed(data)
        except FrameError as e:
            # Answer the whole frames that came before the bad one, then refuse the stream.
            frames, framing_error = e.frames, e
        self._dispatch(frames)
        if framing_error is not None and self._reading:
            too_large = isinstance(framing_error, FrameTooLarge)
            status = Status.FRAME_TOO_LARGE if too_large else Status.MALFORMED_REQUEST
            self._protocol_error(0, 0, status, str(framing_error))
        if self._reading:
            if self._decoder.partial or self._frame_reserved:  # (else nothing to reserve or release)
                self._last_read = self.hub.clock.seconds()  # (a frame's stall counts from here)
                self._reserve_frame()
        else:  # (closing: what is left of the stream is never read)
            self._release_frame()

    # -- bytes out (sending.py: held while a read is handled, then sent at once) -------------

    def write(self, data: bytes) -> None:
        """Send a frame. Every byte to the client goes through here or write_sequence, in
        order; never straight to the transport."""
        self.hub.writes.write(self.transport, data)

    def write_sequence(self, chunks) -> None:
        self.hub.writes.write_sequence(self.transport, chunks)

    def close_when_sent(self) -> None:
        """Close once what was written is sent (transport.loseConnection, after it)."""
        self.hub.writes.flush(self.transport)
        self.transport.loseConnection()

    def _dispatch(self, frames) -> None:
        last = frames[-1] if frames else None
        for frame in frames:
            if not self._reading:
                return
            op, request_id, body = frame
            if frame is last:  # (its subscribers' deliveries leave at once: sending.py)
                self.hub.writes.last_request(self.transport)
            if not self._greeted:
                self._hello(op, request_id, body)
                if self._greeted:
                    self._hello_done()
                continue
            if self.access is not None and not self._admitted(op, request_id, body):
                continue  # ([auth] on: AUTH, or refused, answered by the gate)
            handler = self._handlers.get(op)
            if handler is None:
                self.hub.stats.unknown_operations += 1
                self._refuse(request_id, op, Status.UNKNOWN_OPERATION, f"unknown operation {op}")
                continue
            started = self.hub.clock.seconds()
            try:
                handler(self, request_id, body, started)
            except Exception as e:  # every failure becomes a status
                self.fail(Failure(e), None, request_id, op, started)
        if (
            len(self.replies.waiting) >= self.max_inflight_requests
            or self.replies.weight >= self.max_inflight_bytes
        ):
            self._too_busy = True
            self._update_reading()

    def _hello(self, op: int, request_id: int, body) -> None:
        if op != Op.HELLO:
            self._protocol_error(request_id, op, Status.MALFORMED_REQUEST, "the first request must be HELLO")
            return
        try:
            hello = decode_hello(body)
        except RequestRefused as e:
            self._protocol_error(request_id, op, e.status, e.reason)
            return
        if hello.version != PROTOCOL_VERSION:
            self._protocol_error(
                request_id,
                op,
                Status.UNSUPPORTED_VERSION,
                f"this hub speaks protocol version {PROTOCOL_VERSION}, not {hello.version}",
            )
            return
        self._greeted = True
        self.client_name = hello.client_name
        hub = self.hub
        self.log.info("{peer}: hello from {client}", peer=self.peer, client=hello.client_name or "a client")
        hub.stats.record("hello", True, 0.0)
        reply = encode_hello_reply(hub.region, hub.name, hub.max_frame_bytes, hub.max_message_bytes)
        self.replies.send(response_frame(request_id, Op.HELLO, payload=reply))

    def _protocol_error(self, request_id: int, op: int, status: Status, message: str) -> None:
        """Answer, then close once the earlier replies are out; read nothing more."""
        self._client_error(
            "{peer}: {status}: {message}; closing the connection",
            status=status.name,
            message=message,
        )
        self.hub.stats.protocol_errors += 1
        self._reading = False
        self._update_reading()
        self.replies.send(response_frame(request_id, op, status, message), self.close_when_sent)

    def _refuse(self, request_id: int, op: int, status: Status, message: str) -> None:
        self._client_error(
            "{peer}: request {request_id} (op {op}) refused: {status}: {message}",
            request_id=request_id,
            op=op,
            status=status.name,
            message=message,
        )
        self.replies.send(response_frame(request_id, op, status, message))

    def fail(self, failure: Failure, slot, request_id: int, op: int, started: float, topic=None) -> None:
        """Answer a failed request with its status (in its slot when it has one). A
        publish to `topic` that failed because another hub took the topic over is
        answered with a redirect to that hub."""
        if topic is not None and failure.check(TopicFenced, OwnershipLost):
            located = self.hub.locate_moved(topic, failure)
            located.addErrback(self.fail, slot, request_id, op, started)
            return
        status, message, expected = status_for(failure.value)
        name = op_name(op)
        self.hub.stats.record(name, False, self.hub.clock.seconds() - started)
        if status is Status.NOT_RESPONSIBLE_FOR_TOPIC:  # a region's routine: the client follows
            self.hub.stats.redirected += 1
            self.log.debug(
                "{peer}: {op} request {request_id} redirected to {owner}",
                peer=self.peer,
                op=name.upper(),
                request_id=request_id,
                owner=message or "(no owner known)",
            )
        elif expected:
            self._client_error(
                "{peer}: {op} request {request_id} refused: {status}: {message}",
                op=name.upper(),
                request_id=request_id,
                status=status.name,
                message=message,
            )
        else:
            self.log.failure(
                "{peer}: {op} request {request_id} failed",
                failure,
                peer=self.peer,
                op=name.upper(),
                request_id=request_id,
            )
        frame = response_frame(request_id, op, status, message)
        if slot is None:
            self.replies.send(frame)
        else:
            self.replies.fill(slot, frame)

    def answer(self, deferred: Deferred, request_id: int, op: Op, started: float, encode) -> None:
        """Reply with encode(result) (a whole frame, or a list of chunks) in request order
        once `deferred` fires, or with the failure's status. Handlers registered with
        Hub.register_op answer through this too."""
        slot = self.replies.reserve()
        name = op_name(op)

        def done(result):
            self.hub.stats.record(name, True, self.hub.clock.seconds() - started)
            self.replies.fill(slot, encode(result))

        deferred.addCallback(done).addErrback(self.fail, slot, request_id, op, started)

    def _admitted(self, op: int, request_id: int, body) -> bool:
        """[auth] on: whether the request goes on to its handler; if not, the gate
        (hedwig.auth.gate) answered it, or refused it with a status answered here."""
        try:
            return self.access.admit(op, request_id, body)
        except Exception as e:
            self.fail(Failure(e), None, request_id, op, self.hub.clock.seconds())
            return False

    def send_reply(self, frame: bytes) -> None:
        """Send a reply after those already queued (the gate's answer to AUTH)."""
        self.replies.send(frame)

    def refuse_and_close(self, request_id: int, op: int, status: Status, message: str, after) -> None:
        """Read nothing more; once `after` (a Deferred: a failed AUTH's delay) fires,
        answer with `status` and close once the earlier replies are out."""
        self._reading = False
        self._update_reading()

        def refuse(_):
            if self._connected:
                self._protocol_error(request_id, op, status, message)

        after.addCallback(refuse)

    # -- handlers ---------------------------------------------------------------------------

    # -- IDeliveryChannel -------------------------------------------------------------------

    # -- IPushProducer (registered on the transport) ----------------------------------------


class HubFactory(ServerFactory):
    """Makes a HubConnection per accepted socket, all serving one Hub."""

    noisy = False  # the hub logs its own start and stop

    def __init__(self, hub):
        self.hub = hub

    def buildProtocol(self, addr):
        connection = HubConnection(self.hub)
        connection.factory = self
        return connection
