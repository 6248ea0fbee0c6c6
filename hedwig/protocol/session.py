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
handed REDELIVERY frames, and events that leave it attached (FETCH_DONE); `ack` and
`nack` make its ACK and NACK frames.
Which hub to ask is the redirect rule's (redirects.py), the same for every driver.

What stays with the drivers is what needs I/O or time: waiting, timeouts (they `forget`
a request that timed out), and what to do with a lost connection (`take_pending`,
`detach_all`).

Frames are cut straight out of the received bytes: an entry is copied once (the slice
handed to the receiver), never through an intermediate buffer; only a frame split across
reads is joined. Bytes no hub sends raise ProtocolViolation; the driver drops the
connection.
"""

import struct

from zope.interface import Interface

from hedwig.protocol.framing import DEFAULT_MAX_FRAME_BYTES, frame_header
from hedwig.protocol.layouts import RequestRefused
from hedwig.protocol.messageset import ONE_MESSAGE_HEADER, SET_VERSION
from hedwig.protocol.ops import Op
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
from hedwig.protocol.work_requests import MAX_RANGES, encode_ranges

_PUBLISH_ONE_HEAD = struct.Struct("!IBI")
_PREFIX_CACHE = 1024
_LENGTH = struct.Struct("!I")
_OP_AND_ID = struct.Struct("!BI")
_DELIVERY = struct.Struct("!III")
# A read that is one whole DELIVERY frame (a subscriber keeping up with a stream gets
# one per message): length, op, request id, handle, start, stop in one unpack.
_DELIVERY_FRAME = struct.Struct("!IBIIII")
_DELIVERY_OP = int(Op.DELIVERY)
_DELIVERY_ENTRY_AT = _DELIVERY_FRAME.size
_REDELIVERY = struct.Struct("!IIII")
_EVENT = struct.Struct("!IB")
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

    def on_event(event):
        """As ISubscriber's; an event that does not end the subscription (FETCH_DONE,
        hedwig.protocol.status.ends_subscription) leaves its handle attached."""


class HubSession:
    """Frames and pending replies for one connection. Request ids count up from 1 and wrap,
    skipping 0 (the id of pushed frames); a reply is matched to its request by id."""

    __slots__ = (
        "_accepts",
        "_ids",
        "_max_frame_bytes",
        "_needed",
        "_partial",
        "_partial_bytes",
        "_pending",
        "_prefixes",
        "_raw_responses",
        "_receiver",
        "_subscribers",
        "_subscribing",
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
        self._max_frame_bytes = max_frame_bytes + 4096
        self._raw_responses = raw_responses
        self._accepts = frozenset(accepts)
        self._partial = []  # the start of a frame that did not arrive whole
        self._partial_bytes = 0
        self._needed = 0  # bytes the partial frame needs before it can be parsed
        self._ids = RequestIds()
        self._pending = {}  # request id -> the driver's context, until answered or forgotten
        self._prefixes = {}  # topic -> its str8, for publish_one
        self._subscribing = {}  # request id of a SUBSCRIBE -> (position, subscriber)
        self._subscribers = {}  # handle -> the ISubscriber attached with it

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
        head = _PUBLISH_ONE_HEAD.pack(5 + len(prefix) + 10 + len(payload), Op.PUBLISH, request_id)
        return request_id, head + prefix + ONE_MESSAGE_HEADER.pack(SET_VERSION, 0, 1, len(payload)) + payload

    # -- subscriptions ---------------------------------------------------------------------

    def subscribe(self, position, subscriber, context=None) -> tuple[int, bytes]:
        """(request id, whole frame) of the SUBSCRIBE `position` asks for: as asked the
        first time, to resume from its last acknowledgement later. A SUCCESS reply
        attaches `subscriber` (an ISubscriber) under the handle the hub gave."""
        body = encode_subscribe_request(position.subscribe_request())
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
        return not self._partial

    def data_received(self, data) -> None:
        """Parse what the transport received and call the receiver once per frame."""
        size = len(data)
        if size >= _DELIVERY_ENTRY_AT and not self._partial:
            length, op, _, handle, start, stop = _DELIVERY_FRAME.unpack_from(data)
            if op == _DELIVERY_OP and length + 4 == size and length <= self._max_frame_bytes:
                # (the read is exactly one delivery: the loop below, without the loop)
                subscriber = self._subscribers.get(handle)
                if subscriber is not None:  # (else one the driver released meanwhile)
                    subscriber.on_delivery(start, stop, data[_DELIVERY_ENTRY_AT:])
                return
        if self._partial:
            self._partial.append(data)
            self._partial_bytes += len(data)
            if self._partial_bytes < self._needed:
                return
            data = b"".join(self._partial)
            self._partial = []
        receiver = self._receiver
        size = len(data)
        position = 0
        while size - position >= 4:
            (length,) = _LENGTH.unpack_from(data, position)
            if length < 5 or length > self._max_frame_bytes:
                raise ProtocolViolation(f"bad frame from the hub: length {length}")
            end = position + 4 + length
            if end > size:
                break
            op, request_id = _OP_AND_ID.unpack_from(data, position + 4)
            if op == Op.DELIVERY:
                if length < 17:
                    raise ProtocolViolation("DELIVERY shorter than its header")
                handle, start, stop = _DELIVERY.unpack_from(data, position + 9)
                subscriber = self._subscribers.get(handle)
                if subscriber is not None:  # (else one the driver released meanwhile)
                    subscriber.on_delivery(start, stop, data[position + 21 : end])
            elif op == Op.RESPONSE:
                self._response(request_id, data[position + 9 : end])
            elif op == Op.EVENT:
                if length < 10:
                    raise ProtocolViolation("EVENT shorter than its body")
                handle, event = _EVENT.unpack_from(data, position + 9)
                if ends_subscription(event):
                    subscriber = self._subscribers.pop(handle, None)
                else:
                    subscriber = self._subscribers.get(handle)
                if subscriber is not None:
                    subscriber.on_event(event)
            elif op == Op.REDELIVERY:
                self._redelivery(data, position, length, end)
            elif op in self._accepts:
                receiver.request_received(op, request_id, data[position + 9 : end])
            else:
                raise ProtocolViolation(f"unexpected op {op} from the hub")
            position = end
        if position < size:
            rest = data[position:]
            self._partial = [rest]
            self._partial_bytes = len(rest)
            self._needed = 4 + _LENGTH.unpack_from(rest, 0)[0] if len(rest) >= 4 else 4

    def _redelivery(self, data, position: int, length: int, end: int) -> None:
        if length < 21:
            raise ProtocolViolation("REDELIVERY shorter than its header")
        handle, start, stop, count = _REDELIVERY.unpack_from(data, position + 9)
        subscriber = self._subscribers.get(handle)
        if subscriber is None:
            return  # (one the driver released meanwhile)
        if not ISharedSubscriber.providedBy(subscriber):
            raise ProtocolViolation(f"REDELIVERY for handle {handle}, an exclusive subscription")
        subscriber.on_redelivery(start, stop, data[position + 25 : end], count)

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
        if self._subscribing and request_id in self._subscribing:
            self._attach(request_id, response)
        self._receiver.response_received(request_id, response, None if context is _UNKNOWN else context)
