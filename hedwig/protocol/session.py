"""One connection's hub protocol, without I/O: request ids, pending replies, subscription
handles and positions, frames in and out.

The model is h11 / hyper-h2: a HubSession owns no socket, no reactor, no thread and no
clock. A driver hands it the bytes its transport received (`data_received`) and writes
the bytes it returns for each request; the session parses frames and calls its receiver
(ISessionReceiver) once per reply or request, with the context the driver gave when it
sent the request a reply answers. Three drivers share it: the blocking client
(hedwig/client/connection.py), the Twisted client (hedwig/client/protocol.py) and the
region link (hedwig/region/link.py), so request numbering, reply matching, frame
parsing and the subscriptions of a connection live in one place, tested by feeding it
bytes (tests/protocol/test_session.py).

Subscriptions: `subscribe(position, subscriber)` sends the SUBSCRIBE its
SubscriptionPosition (position.py: the client's side of the window, acks, resuming)
asks for. When the hub attaches it, the session moves the position, keeps the
connection-local handle, and from then on hands the subscriber (ISubscriber) the
DELIVERY and EVENT frames of that handle; a lost connection detaches every subscriber.
A shared or pull subscription (an ISharedSubscriber with a SharedPosition) is also
handed REDELIVERY frames (a key_shared one SUBSET_DELIVERY frames too), and events that
leave it attached (FETCH_DONE); `ack` and `nack` make its ACK and NACK frames.
Which hub to ask is the redirect rule's (redirects.py), the same for every driver.

What stays with the drivers is what needs I/O or time: waiting, timeouts (they `forget`
a request that timed out), and what to do with a lost connection (`take_pending`,
`detach_all`).

Frames are parsed by the protocol's one FrameDecoder (framing.py), cut straight out of
the received bytes: an entry is copied once (the slice handed to the receiver), never
through an intermediate buffer; only a frame split across reads is joined. A read that
is one whole DELIVERY (a subscriber keeping up with a stream gets one per message) or
one whole RESPONSE (a publisher waiting on each reply) is taken by the decoder's
deliveries_reader without the frame loop. Bytes no hub sends
raise ProtocolViolation; the driver drops the connection.
"""

import struct

from zope.interface import Interface

from hedwig.protocol.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    DELIVERY_HEAD,
    EVENT_HEAD,
    FrameDecoder,
    FrameError,
    frame_header,
)
from hedwig.protocol.layouts import RequestRefused
from hedwig.protocol.messageset import ONE_MESSAGE_HEADER, SET_VERSION
from hedwig.protocol.ops import HUB_FEATURE_SUBSETS, Op
from hedwig.protocol.request_ids import RequestIds
from hedwig.protocol.requests import (
    Published,
    decode_subscribed,
    encode_consume,
    encode_subscribe_request,
    publish_prefix,
)
from hedwig.protocol.responses import Response, decode_response, split_response
from hedwig.protocol.status import Status, ends_subscription
from hedwig.protocol.work_requests import MAX_RANGES, REDELIVERY_HEAD, SUBSET_HEAD, encode_ranges

_PUBLISH_ONE_HEAD = struct.Struct("!IBI")
# A one-message PUBLISH's length without its topic and payload: op and request id, and
# the message set's header.
_PUBLISH_ONE_FIXED = _PUBLISH_ONE_HEAD.size - 4 + ONE_MESSAGE_HEADER.size
_PUBLISH = int(Op.PUBLISH)
_PREFIX_CACHE = 1024
# The heads the decoder cuts off the frames a hub pushes.
_HEADS = {
    Op.DELIVERY: DELIVERY_HEAD,
    Op.REDELIVERY: REDELIVERY_HEAD,
    Op.SUBSET_DELIVERY: SUBSET_HEAD,
    Op.EVENT: EVENT_HEAD,
}
_DELIVERY, _RESPONSE, _EVENT, _REDELIVERY, _SUBSET = (
    int(Op.DELIVERY),
    int(Op.RESPONSE),
    int(Op.EVENT),
    int(Op.REDELIVERY),
    int(Op.SUBSET_DELIVERY),
)
_PUBLISHED_BODY = struct.Struct("!BHHQQ")  # a RESPONSE body: op, status, message length, seq-ids
_UNKNOWN = object()


class ProtocolViolation(Exception):
    """The hub sent something no hub sends: the connection cannot be trusted any more."""


class ISessionReceiver(Interface):
    """What a HubSession calls for each reply, and each request the peer may send."""

    def response_received(request_id, response, context):
        """A RESPONSE to request `request_id`: a hedwig.protocol.responses.Response (its
        payload decoded by the op it answers), or with `raw_responses` the tuple
        (op, status, message, payload) of split_response. `context` is what the driver
        gave with the request; None for a request the session does not know (one the
        driver forgot after a timeout, or one sent without expecting a reply)."""

    def request_received(op, request_id, body):
        """A request the peer sent (only ops the session was told to accept)."""


class ISubscriber(Interface):
    """A subscription as the session sees it: what it calls for the frames of its handle.
    Both clients' subscriptions and the region link's relay subscriptions provide it."""

    def on_attached(driver, subscribed):
        """The hub attached it (SUBSCRIBE answered SUCCESS; `subscribed` is the reply's
        hedwig.protocol.requests.Subscribed, its position already moved). Called before
        the reply reaches the driver, and before any delivery of the handle: `driver` is
        the session's receiver, the connection to send CONSUMEs on."""

    def on_delivery(start, stop, entry):
        """Messages [start, stop) of a stored entry."""

    def on_event(event):
        """The hub ended the subscription on this connection (a SubscriptionEvent:
        forced closed, topic moved, or one newer than this code); its handle is free."""

    def on_detached():
        """The connection is gone: the subscription is attached nowhere now."""


class ISharedSubscriber(ISubscriber):
    """A shared or pull subscription (acknowledged message by message): it may also be
    sent messages again, and told things that do not end it."""

    def on_redelivery(start, stop, entry, count):
        """Messages [start, stop) of a stored entry, delivered for the `count`th time."""

    def on_subset(start, stop, selection, entry):
        """The messages of [start, stop) of a stored entry that `selection` picks
        (hedwig.protocol.work_requests.selected_indexes): a SUBSET_DELIVERY, first
        deliveries, sent only to a SUBSCRIBE that asked for them (`subsets`)."""

    def on_event(event):
        """As ISubscriber's; an event that does not end the subscription (FETCH_DONE,
        hedwig.protocol.status.ends_subscription) leaves its handle attached."""


class HubSession:
    """Frames and pending replies for one connection. Request ids count up from 1 and wrap,
    skipping 0 (the id of pushed frames); a reply is matched to its request by id.

    `data_received(data)`: parse what the transport received and call the receiver once
    per frame (the decoder's deliveries_reader, made for this session)."""

    __slots__ = (
        "_accepts",
        "_decoder",
        "_hub_features",
        "_ids",
        "_pending",
        "_prefixes",
        "_raw_responses",
        "_receiver",
        "_subscribers",
        "_subscribing",
        "data_received",
    )

    def __init__(
        self,
        receiver,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        *,
        raw_responses: bool = False,
        accepts=(),
    ):
        """`raw_responses`: hand responses as split_response tuples (a region link decodes
        its own payloads); `accepts`: ops the peer may send as requests (a parent sends
        REGION_INTEREST down a link)."""
        self._receiver = receiver
        # The hub may send frames of its own limit; a reply carries at most that plus
        # its small headers, and a client never refuses what it asked for.
        self._decoder = FrameDecoder(max_frame_bytes + 4096, heads=_HEADS)
        self._raw_responses = raw_responses
        self._accepts = frozenset(accepts)
        self._ids = RequestIds()
        self._pending = {}  # request id -> the driver's context, until answered or forgotten
        self._prefixes = {}  # topic -> its str8, for publish_one
        self._subscribing = {}  # request id of a SUBSCRIBE -> (position, subscriber)
        self._subscribers = {}  # handle -> the ISubscriber attached with it
        self._hub_features = 0  # what HELLO's reply offered (ops.HUB_FEATURE_*)
        self.data_received = self._decoder.deliveries_reader(self._subscribers, self._frames, self._response)

    # -- requests out ----------------------------------------------------------------------

    def request(self, op: Op, body: bytes, context=None) -> tuple[int, bytes]:
        """(request id, whole frame) for a request whose reply goes to `context`."""
        request_id = self._ids.next()
        self._pending[request_id] = context
        return request_id, frame_header(op, request_id, len(body)) + body

    def request_parts(self, op: Op, make_parts, context=None) -> tuple[int, list]:
        """(request id, frame chunks) for a request built by make_parts(request_id)."""
        request_id = self._ids.next()
        self._pending[request_id] = context
        return request_id, make_parts(request_id)

    def send(self, op: Op, body: bytes) -> bytes:
        """The frame of a request answered only when it fails (CONSUME): nothing waits."""
        return frame_header(op, self._ids.next(), len(body)) + body

    def publish(self, topic: str, message_set: bytes, context=None) -> tuple[int, list]:
        """(request id, frame parts) for a PUBLISH: the message set is sent as it is."""
        request_id = self._ids.next()
        self._pending[request_id] = context
        prefix = publish_prefix(topic)
        header = frame_header(Op.PUBLISH, request_id, len(prefix) + len(message_set))
        return request_id, [header + prefix, message_set]

    def publish_one(self, topic: str, payload: bytes, context=None) -> tuple[int, bytes]:
        """(request id, whole frame) for a PUBLISH of one message without properties:
        the same bytes as encode_message_set([payload]) behind the header, packed at once."""
        request_id = self._ids.next()
        self._pending[request_id] = context
        prefix = self._prefixes.get(topic)
        if prefix is None:
            if len(self._prefixes) >= _PREFIX_CACHE:
                self._prefixes.clear()
            prefix = self._prefixes[topic] = publish_prefix(topic)
        head = _PUBLISH_ONE_HEAD.pack(_PUBLISH_ONE_FIXED + len(prefix) + len(payload), _PUBLISH, request_id)
        return request_id, head + prefix + ONE_MESSAGE_HEADER.pack(SET_VERSION, 0, 1, len(payload)) + payload

    # -- subscriptions ---------------------------------------------------------------------

    def subscribe(self, position, subscriber, context=None) -> tuple[int, bytes]:
        """(request id, whole frame) of the SUBSCRIBE `position` asks for: as asked the
        first time, to resume from its last acknowledgement later. A SUCCESS reply
        attaches `subscriber` (an ISubscriber) under the handle the hub gave. SUBSET_DELIVERY
        frames are asked for only of a hub whose HELLO offered them (an older one refuses
        the flag)."""
        request = position.subscribe_request()
        if request.subsets and not self._hub_features & HUB_FEATURE_SUBSETS:
            request = request._replace(subsets=False)
        body = encode_subscribe_request(request)
        request_id, frame = self.request(Op.SUBSCRIBE, body, context)
        self._subscribing[request_id] = (position, subscriber)
        return request_id, frame

    def consume(self, handle: int, seq: int) -> bytes:
        """The CONSUME frame moving the consumed seq-id of the subscription `handle`."""
        return self.send(Op.CONSUME, encode_consume(handle, seq))

    def ack(self, handle: int, ranges) -> bytes:
        """The ACK frame(s) acknowledging seq-id ranges [(first, last)] of a shared or pull
        subscription (answered only when it fails): one frame per MAX_RANGES ranges."""
        return self._ranges(Op.ACK, handle, ranges)

    def nack(self, handle: int, ranges) -> bytes:
        """The NACK frame(s) asking for seq-id ranges to be delivered again now."""
        return self._ranges(Op.NACK, handle, ranges)

    def _ranges(self, op: Op, handle: int, ranges) -> bytes:
        return b"".join(
            self.send(op, encode_ranges(handle, ranges[i : i + MAX_RANGES]))
            for i in range(0, len(ranges), MAX_RANGES)
        )

    def release(self, handle: int) -> None:
        """The driver closed the subscription `handle`: its frames go to nobody now."""
        self._subscribers.pop(handle, None)

    def subscriber(self, handle: int):
        """The ISubscriber attached with `handle`, or None."""
        return self._subscribers.get(handle)

    def detach_all(self) -> None:
        """The connection is gone: every subscriber on it is told, and none is kept."""
        subscribers = list(self._subscribers.values())
        self._subscribers.clear()
        self._subscribing.clear()
        for subscriber in subscribers:
            subscriber.on_detached()

    def _attach(self, request_id: int, response) -> None:
        """A reply to a SUBSCRIBE: on SUCCESS, move its position and keep its handle."""
        position, subscriber = self._subscribing.pop(request_id)
        if self._raw_responses:
            _op, status, _message, payload = response
            if status is not Status.SUCCESS:
                return
            try:
                subscribed = decode_subscribed(payload)
            except RequestRefused as e:
                raise ProtocolViolation(f"bad SUBSCRIBE reply from the hub: {e}") from None
        else:
            if response.status is not Status.SUCCESS:
                return
            subscribed = response.value
        position.on_subscribed(subscribed)
        self._subscribers[subscribed.handle] = subscriber
        subscriber.on_attached(self._receiver, subscribed)

    # -- pending replies -------------------------------------------------------------------

    def forget(self, request_id: int):
        """Stop waiting for a reply (its caller gave up); its context, or None. A
        SUBSCRIBE forgotten attaches nothing, even if the hub answers it later."""
        self._subscribing.pop(request_id, None)
        return self._pending.pop(request_id, None)

    def waiting(self, request_id: int) -> bool:
        """Whether a reply to `request_id` is still awaited."""
        return request_id in self._pending

    def take_pending(self) -> list:
        """The contexts of every request still waiting (the connection is gone)."""
        pending, self._pending = self._pending, {}
        self._subscribing.clear()
        return list(pending.values())

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    # -- frames in -------------------------------------------------------------------------

    def between_frames(self) -> bool:
        """No frame is half-received: the next bytes start a frame."""
        return not self._decoder.partial

    def _frames(self, data) -> None:
        """Every frame of what the transport received (but a read of one whole DELIVERY)
        to its subscriber or the receiver, in order, each handed on as it is cut."""
        receiver = self._receiver
        subscribers = self._subscribers
        try:
            for op, request_id, body in self._decoder.frames(data):
                if op == _DELIVERY:
                    (handle, start, stop), entry = body
                    subscriber = subscribers.get(handle)
                    if subscriber is not None:  # (else one the driver released meanwhile)
                        subscriber.on_delivery(start, stop, entry)
                elif op == _RESPONSE:
                    self._response(request_id, body)
                elif op == _EVENT:
                    (handle, event), _rest = body
                    if ends_subscription(event):
                        subscriber = subscribers.pop(handle, None)
                    else:
                        subscriber = subscribers.get(handle)
                    if subscriber is not None:
                        subscriber.on_event(event)
                elif op == _REDELIVERY:
                    self._redelivery(*body)
                elif op == _SUBSET:
                    self._subset(*body)
                elif op in self._accepts:
                    receiver.request_received(op, request_id, body)
                else:
                    raise ProtocolViolation(f"unexpected op {op} from the hub")
                # Let go of this frame's body before the next is cut: a large read's
                # entries are then made one at a time, in the same memory.
                body = entry = None
        except FrameError as e:
            raise ProtocolViolation(f"bad frame from the hub: {e}") from None

    def _shared_subscriber(self, handle: int, what: str):
        """The ISharedSubscriber of `handle` a frame only shared subscriptions are sent
        is for; None for a handle the driver released meanwhile."""
        subscriber = self._subscribers.get(handle)
        if subscriber is not None and not ISharedSubscriber.providedBy(subscriber):
            raise ProtocolViolation(f"{what} for handle {handle}, an exclusive subscription")
        return subscriber

    def _redelivery(self, head, entry) -> None:
        handle, start, stop, count = head
        subscriber = self._shared_subscriber(handle, "REDELIVERY")
        if subscriber is not None:
            subscriber.on_redelivery(start, stop, entry, count)

    def _subset(self, head, rest) -> None:
        handle, start, stop, length = head
        subscriber = self._shared_subscriber(handle, "SUBSET_DELIVERY")
        if subscriber is None:
            return
        if len(rest) < length:
            raise ProtocolViolation(f"SUBSET_DELIVERY for handle {handle} shorter than its selection")
        subscriber.on_subset(start, stop, rest[:length], rest[length:])

    def _response(self, request_id: int, body) -> None:
        if len(body) == _PUBLISHED_BODY.size and not self._raw_responses:
            # PUBLISHED, the one-message path's reply: one unpack (decode_response's result)
            op, status, message_length, first_seq, last_seq = _PUBLISHED_BODY.unpack(body)
            if op == Op.PUBLISH and status == 0 and not message_length:
                response = Response(op, Status.SUCCESS, "", Published(first_seq, last_seq))
                context = self._pending.pop(request_id, None)
                self._receiver.response_received(request_id, response, context)
                return
        try:
            response = split_response(body) if self._raw_responses else decode_response(body)
        except (RequestRefused, ValueError) as e:
            raise ProtocolViolation(f"bad RESPONSE from the hub: {e}") from None
        context = self._pending.pop(request_id, _UNKNOWN)
        if not self._raw_responses and response.op == Op.HELLO and response.status is Status.SUCCESS:
            self._hub_features = response.value.features
        if self._subscribing and request_id in self._subscribing:
            self._attach(request_id, response)
        self._receiver.response_received(request_id, response, None if context is _UNKNOWN else context)
