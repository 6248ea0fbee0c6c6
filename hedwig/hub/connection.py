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
"""

from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.interfaces import IPushProducer
from twisted.internet.protocol import Protocol, ServerFactory
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from hedwig.delivery.interface import IDeliveryChannel
from hedwig.hub.errors import status_for
from hedwig.hub.replies import ReplyQueue
from hedwig.hub.stats import op_name
from hedwig.protocol.framing import FrameDecoder, FrameError, FrameTooLarge, delivery_header, encode_event
from hedwig.protocol.ops import PROTOCOL_VERSION, Op
from hedwig.protocol.requests import (
    RequestError,
    decode_close_subscription,
    decode_consume,
    decode_describe_topic,
    decode_empty,
    decode_hello,
    decode_publish,
    decode_read_range,
    decode_subscribe,
    decode_unsubscribe,
    encode_hello_reply,
    encode_json,
    encode_subscribed,
    published_response,
    response_frame,
    response_frame_parts,
)
from hedwig.protocol.status import Status
from hedwig.tls import handshake_failure, is_tls

# Deliveries held back until their SUBSCRIBE reply is out: past this, the channel pauses.
MAX_HELD_BYTES = 4 * 1024 * 1024
# Requests read but not yet answered, per connection: past either bound the connection
# stops reading until half of them are answered, so a client pipelining publishes faster
# than the disk takes them is slowed by TCP instead of growing the hub's memory.
MAX_INFLIGHT_REQUESTS = 4096
MAX_INFLIGHT_BYTES = 64 * 1024 * 1024
_MAX_HANDLE = 0xFFFFFFFF


def _describe_peer(address) -> str:
    host = getattr(address, "host", None)
    return f"{host}:{address.port}" if host is not None else str(address)


@implementer(IDeliveryChannel, IPushProducer)
class HubConnection(Protocol):
    log = Logger()
    is_hub_peer = False  # region relays (reserved "__" subscriber ids) are hubs' own connections

    def __init__(self, hub):
        self.hub = hub
        self.peer = "?"
        self.client_name = ""
        self.closed = Deferred()  # fires once the connection is gone and its pointers flushed
        self._decoder = FrameDecoder(hub.max_frame_bytes)
        self._replies = None
        self._greeted = False
        self._reading = True  # False once closing or draining: further requests are ignored
        self._read_paused = False  # the transport was told to stop reading
        self._inflight_bytes = 0  # publish bodies read and not yet answered
        self._too_busy = False
        self.max_inflight_requests = MAX_INFLIGHT_REQUESTS
        self.max_inflight_bytes = MAX_INFLIGHT_BYTES
        self._subscriptions = {}  # handle -> (topic, subscriber_id)
        self._handles = {}  # (topic, subscriber_id) -> handle
        self._held = {}  # handle -> chunks to write right after its SUBSCRIBE reply
        self._held_bytes = 0
        self._next_handle = 1
        self._transport_full = False
        self._delivery_paused = False
        self._connected = False

    # -- lifecycle --------------------------------------------------------------------------

    def connectionMade(self):
        self.peer = _describe_peer(self.transport.getPeer())
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:  # deliveries are small writes: never wait on Nagle
            set_no_delay(True)
        self._replies = ReplyQueue(self.transport.write, self.transport.writeSequence, self._replies_released)
        self.transport.registerProducer(self, True)
        self._connected = True
        self.hub.connection_made(self)

    def connectionLost(self, reason=None):
        was_reading = self._reading
        self._reading = False
        self._connected = False
        if was_reading and self._decoder.buffered:  # (after a framing error it was logged already)
            self.log.warn(
                "{peer}: disconnected mid-frame; {count} bytes of an incomplete frame discarded",
                peer=self.peer,
                count=self._decoder.buffered,
            )
        failure = handshake_failure(reason) if reason is not None and is_tls(self.transport) else None
        if failure is not None:
            self.log.warn("{peer}: {failure}", peer=self.peer, failure=failure)
        self._replies.discard()
        self._subscriptions.clear()
        self._handles.clear()
        self._held.clear()
        self._held_bytes = 0
        lost = maybeDeferred(self.hub.connection_lost, self)
        lost.addErrback(
            lambda f: self.log.failure("{peer}: flushing subscriptions failed", f, peer=self.peer)
        )
        lost.addBoth(lambda _: self.closed.callback(None))

    def stop_reading(self) -> Deferred:
        """Take no more requests (shutdown); fires once every pending reply is out."""
        self._reading = False
        self._update_reading()
        return self._replies.when_idle()

    @property
    def is_open(self) -> bool:
        """Between connectionMade and connectionLost."""
        return self._connected

    @property
    def subscription_count(self) -> int:
        return len(self._subscriptions)

    # -- frames in --------------------------------------------------------------------------

    def dataReceived(self, data):
        if not self._reading:
            return
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

    def _dispatch(self, frames) -> None:
        for op, request_id, body in frames:
            if not self._reading:
                return
            if not self._greeted:
                self._hello(op, request_id, body)
                continue
            handler = _HANDLERS.get(op) or self.hub.extra_handlers.get(op)
            if handler is None:
                self.hub.stats.unknown_operations += 1
                self._refuse(request_id, op, Status.UNKNOWN_OPERATION, f"unknown operation {op}")
                continue
            started = self.hub.clock.seconds()
            try:
                handler(self, request_id, body, started)
            except Exception as e:  # every failure becomes a status
                self._failed(Failure(e), None, request_id, op, started)
        if (
            len(self._replies) >= self.max_inflight_requests
            or self._inflight_bytes >= self.max_inflight_bytes
        ):
            self._too_busy = True
            self._update_reading()

    def _protocol_error(self, request_id: int, op: int, status: Status, message: str) -> None:
        """Answer, then close once the earlier replies are out; read nothing more."""
        self.log.warn(
            "{peer}: {status}: {message}; closing the connection",
            peer=self.peer,
            status=status.name,
            message=message,
        )
        self.hub.stats.protocol_errors += 1
        self._reading = False
        self._update_reading()
        self._replies.send(response_frame(request_id, op, status, message), self.transport.loseConnection)

    def _refuse(self, request_id: int, op: int, status: Status, message: str) -> None:
        self.log.warn(
            "{peer}: request {request_id} (op {op}) refused: {status}: {message}",
            peer=self.peer,
            request_id=request_id,
            op=op,
            status=status.name,
            message=message,
        )
        self._replies.send(response_frame(request_id, op, status, message))

    def _failed(self, failure: Failure, slot, request_id: int, op: int, started: float) -> None:
        """Answer a failed request with its status (in its slot when it has one)."""
        status, message, expected = status_for(failure.value)
        name = op_name(op)
        self.hub.stats.record(name, False, self.hub.clock.seconds() - started)
        if expected:
            self.log.warn(
                "{peer}: {op} request {request_id} refused: {status}: {message}",
                peer=self.peer,
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
            self._replies.send(frame)
        else:
            self._replies.fill(slot, frame)

    def answer(self, deferred: Deferred, request_id: int, op: Op, started: float, encode) -> None:
        """Reply with encode(result) (a whole frame, or a list of chunks) in request order
        once `deferred` fires, or with the failure's status. Handlers registered with
        Hub.register_op answer through this too."""
        slot = self._replies.reserve()
        name = op_name(op)

        def done(result):
            self.hub.stats.record(name, True, self.hub.clock.seconds() - started)
            self._replies.fill(slot, encode(result))

        deferred.addCallback(done).addErrback(self._failed, slot, request_id, op, started)

    # -- handlers ---------------------------------------------------------------------------

    def _hello(self, op: int, request_id: int, body) -> None:
        if op != Op.HELLO:
            self._protocol_error(request_id, op, Status.MALFORMED_REQUEST, "the first request must be HELLO")
            return
        try:
            hello = decode_hello(body)
        except RequestError as e:
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
        self._replies.send(response_frame(request_id, Op.HELLO, payload=reply))

    def _on_hello_again(self, request_id, body, started):
        raise RequestError(Status.MALFORMED_REQUEST, "HELLO was already exchanged on this connection")

    def _on_publish(self, request_id, body, started):
        request = decode_publish(body)
        published = self.hub.publish(request.topic, request.message_set)
        slot = self._replies.reserve()
        size = len(body)
        self._inflight_bytes += size
        published.addCallbacks(
            self._published,
            self._publish_failed,
            (slot, request_id, started, size),
            None,
            (slot, request_id, started, size),
        )

    def _publish_failed(self, failure, slot, request_id, started, size):
        self._inflight_bytes -= size
        self._failed(failure, slot, request_id, Op.PUBLISH, started)

    def _published(self, entry, slot, request_id, started, size):
        self._inflight_bytes -= size
        stats = self.hub.stats
        stats.ops["publish"].record(True, self.hub.clock.seconds() - started)
        stats.messages_published += entry.last_seq - entry.first_seq + 1
        stats.bytes_published += len(entry.data)
        self._replies.fill(slot, published_response(request_id, entry.first_seq, entry.last_seq))

    def _on_subscribe(self, request_id, body, started):
        request = decode_subscribe(body)
        limit = self.hub.max_subscriptions
        if len(self._subscriptions) >= limit and not self.is_hub_peer:  # (a region link relays many)
            raise RequestError(
                Status.TOO_MANY_SUBSCRIPTIONS, f"a connection holds at most {limit} subscriptions"
            )
        key = (request.topic, request.subscriber_id)
        attached = self._handles.get(key)
        if attached is not None:
            raise RequestError(
                Status.CLIENT_ALREADY_SUBSCRIBED,
                f"{request.subscriber_id} is already attached to {request.topic} on this connection "
                f"(handle {attached})",
            )
        handle = self._new_handle()
        self._subscriptions[handle] = key
        self._handles[key] = handle
        self._held[handle] = []
        subscribed = maybeDeferred(self.hub.subscribe, self, handle, request)
        slot = self._replies.reserve()
        subscribed.addCallbacks(
            self._subscribed,
            self._subscribe_failed,
            (slot, request_id, handle, key, started),
            None,
            (slot, request_id, handle, key, started),
        )

    def _new_handle(self) -> int:
        handle = self._next_handle
        while handle in self._subscriptions or handle in self._held:
            handle = handle + 1 if handle < _MAX_HANDLE else 1
        self._next_handle = handle + 1 if handle < _MAX_HANDLE else 1
        return handle

    def _subscribed(self, result, slot, request_id, handle, key, started):
        self.hub.stats.ops["subscribe"].record(True, self.hub.clock.seconds() - started)
        if not self._connected:
            # The client left while the topic was being acquired: the attachment made
            # since has no connection to serve, so detach it (its pointer is flushed).
            closing = self.hub.delivery.close_subscription(*key)
            closing.addErrback(lambda f: self.log.failure("detaching {key} failed", f, key=key))
            return
        payload = encode_subscribed(handle, result["consumed_seq"], result["next_seq"])
        self._replies.fill(
            slot,
            response_frame(request_id, Op.SUBSCRIBE, payload=payload),
            lambda: self._release_held(handle),
        )

    def _subscribe_failed(self, failure, slot, request_id, handle, key, started):
        if self._subscriptions.get(handle) == key:
            del self._subscriptions[handle]
            self._handles.pop(key, None)
        self._drop_held(handle)
        self._failed(failure, slot, request_id, Op.SUBSCRIBE, started)

    def _on_consume(self, request_id, body, started):
        handle, seq = decode_consume(body)
        key = self._subscriptions.get(handle)
        if key is None or handle in self._held:
            raise RequestError(
                Status.CLIENT_NOT_SUBSCRIBED, f"no subscription with handle {handle} on this connection"
            )
        self.hub.delivery.consume(key[0], key[1], seq)
        self.hub.stats.ops["consume"].record(True, self.hub.clock.seconds() - started)

    def _on_close_subscription(self, request_id, body, started):
        handle = decode_close_subscription(body)
        key = self._subscriptions.get(handle)
        if key is None or handle in self._held:
            raise RequestError(
                Status.CLIENT_NOT_SUBSCRIBED, f"no subscription with handle {handle} on this connection"
            )
        del self._subscriptions[handle]
        del self._handles[key]
        closed = self.hub.delivery.close_subscription(key[0], key[1])
        self.answer(
            closed,
            request_id,
            Op.CLOSE_SUBSCRIPTION,
            started,
            self._empty_reply(request_id, Op.CLOSE_SUBSCRIPTION),
        )

    def _on_unsubscribe(self, request_id, body, started):
        request = decode_unsubscribe(body)
        key = (request.topic, request.subscriber_id)
        unsubscribed = self.hub.unsubscribe(self, request.topic, request.subscriber_id)

        def forget(result):
            handle = self._handles.pop(key, None)
            if handle is not None:
                self._subscriptions.pop(handle, None)
                self._drop_held(handle)
            return result

        unsubscribed.addCallback(forget)
        self.answer(
            unsubscribed, request_id, Op.UNSUBSCRIBE, started, self._empty_reply(request_id, Op.UNSUBSCRIBE)
        )

    def _on_read_range(self, request_id, body, started):
        request = decode_read_range(body)
        self.answer(
            self.hub.read_range(request),
            request_id,
            Op.READ_RANGE,
            started,
            lambda parts: response_frame_parts(request_id, Op.READ_RANGE, parts),
        )

    def _on_list_topics(self, request_id, body, started):
        decode_empty(body, "LIST_TOPICS")
        self.answer(
            self.hub.list_topics(),
            request_id,
            Op.LIST_TOPICS,
            started,
            self._json_reply(request_id, Op.LIST_TOPICS),
        )

    def _on_describe_topic(self, request_id, body, started):
        topic = decode_describe_topic(body)
        self.answer(
            self.hub.describe_topic(topic),
            request_id,
            Op.DESCRIBE_TOPIC,
            started,
            self._json_reply(request_id, Op.DESCRIBE_TOPIC),
        )

    def _on_stats(self, request_id, body, started):
        decode_empty(body, "STATS")
        stats = Deferred()
        self.answer(stats, request_id, Op.STATS, started, self._json_reply(request_id, Op.STATS))
        stats.callback(self.hub.hub_stats())

    @staticmethod
    def _empty_reply(request_id, op):
        return lambda _: response_frame(request_id, op)

    @staticmethod
    def _json_reply(request_id, op):
        return lambda value: response_frame(request_id, op, payload=encode_json(value))

    # -- IDeliveryChannel -------------------------------------------------------------------

    def deliver(self, handle, entry, start, stop):
        data = entry.data
        header = delivery_header(handle, start, stop, len(data))
        stats = self.hub.stats
        stats.entries_delivered += 1
        stats.messages_delivered += stop - start
        held = self._held.get(handle)
        if held is None:
            if handle in self._subscriptions:
                self.transport.writeSequence((header, data))
            return
        held.append(header)
        held.append(data)
        self._held_bytes += len(header) + len(data)
        if self._held_bytes > MAX_HELD_BYTES:
            self._update_delivery_pause()

    def subscription_ended(self, handle, event):
        key = self._subscriptions.pop(handle, None)
        if key is None:
            return
        self._handles.pop(key, None)
        self.log.info(
            "{peer}: subscription {subscriber} of {topic} ended: {event}",
            peer=self.peer,
            subscriber=key[1],
            topic=key[0],
            event=getattr(event, "name", event),
        )
        frame = encode_event(handle, event)
        held = self._held.get(handle)
        if held is not None:
            held.append(frame)
        else:
            self.transport.write(frame)

    def subscription_removed(self, topic: str, subscriber_id: str, event) -> None:
        """The durable subscription was deleted elsewhere: end it here if attached."""
        handle = self._handles.get((topic, subscriber_id))
        if handle is not None:
            self.subscription_ended(handle, event)

    def _release_held(self, handle) -> None:
        chunks = self._held.pop(handle, None)
        if chunks:
            self._held_bytes -= sum(map(len, chunks))
            self.transport.writeSequence(chunks)
            self._update_delivery_pause()

    def _drop_held(self, handle) -> None:
        chunks = self._held.pop(handle, None)
        if chunks:
            self._held_bytes -= sum(map(len, chunks))
            self._update_delivery_pause()

    # -- IPushProducer (registered on the transport) ----------------------------------------

    def pauseProducing(self):
        self._transport_full = True
        self._update_reading()  # read no requests while the client reads nothing
        self._update_delivery_pause()

    def resumeProducing(self):
        self._transport_full = False
        self._update_reading()
        self._update_delivery_pause()

    def stopProducing(self):
        self._reading = False

    def _replies_released(self) -> None:
        """Replies went out: a connection that stopped reading for having too many
        requests in flight reads again once half of them are answered."""
        if (
            self._too_busy
            and len(self._replies) <= self.max_inflight_requests // 2
            and self._inflight_bytes <= self.max_inflight_bytes // 2
        ):
            self._too_busy = False
            self._update_reading()

    def _update_reading(self) -> None:
        """Read requests unless closing, the socket is full, or too much is in flight."""
        pause = not self._reading or self._transport_full or self._too_busy
        if pause == self._read_paused or not self._connected or self.transport.disconnecting:
            return
        self._read_paused = pause
        if pause:
            self.transport.pauseProducing()
        else:
            self.transport.resumeProducing()

    def _update_delivery_pause(self) -> None:
        paused = self._transport_full or self._held_bytes > MAX_HELD_BYTES
        if paused == self._delivery_paused or not self._connected:
            return
        self._delivery_paused = paused
        if paused:
            self.hub.delivery.pause_channel(self)
        else:
            self.hub.delivery.resume_channel(self)


_HANDLERS = {
    Op.HELLO: HubConnection._on_hello_again,
    Op.PUBLISH: HubConnection._on_publish,
    Op.SUBSCRIBE: HubConnection._on_subscribe,
    Op.CONSUME: HubConnection._on_consume,
    Op.CLOSE_SUBSCRIPTION: HubConnection._on_close_subscription,
    Op.UNSUBSCRIBE: HubConnection._on_unsubscribe,
    Op.READ_RANGE: HubConnection._on_read_range,
    Op.LIST_TOPICS: HubConnection._on_list_topics,
    Op.DESCRIBE_TOPIC: HubConnection._on_describe_topic,
    Op.STATS: HubConnection._on_stats,
}


class HubFactory(ServerFactory):
    """Makes a HubConnection per accepted socket, all serving one Hub."""

    noisy = False  # the hub logs its own start and stop

    def __init__(self, hub):
        self.hub = hub

    def buildProtocol(self, addr):
        connection = HubConnection(self.hub)
        connection.factory = self
        return connection
