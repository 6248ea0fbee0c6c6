"""One client connection's protocol, without I/O: request ids, frames out, frames in.

Both clients (blocking and Twisted) wrap a ClientChannel: they hand it the bytes their
transport received and it calls the receiver back once per frame, so the parsing of
replies, deliveries and events lives in one place and is tested without sockets.
"""

import struct

from zope.interface import Interface

from hedwig.protocol import FrameDecoder, Op, frame_header, parse_delivery, parse_event
from hedwig.protocol.framing import DEFAULT_MAX_FRAME_BYTES
from hedwig.protocol.requests import RequestError, decode_response, publish_prefix

_MAX_REQUEST_ID = 0xFFFFFFFF
_PUBLISH_ONE_HEAD = struct.Struct("!IBI")
_ONE_MESSAGE_SET = struct.Struct("!BBII")  # version, flags, count 1, the payload's length
_PREFIX_CACHE = 1024


class ProtocolViolation(Exception):
    """The hub sent something no hub sends: the connection cannot be trusted any more."""


class IChannelReceiver(Interface):
    """What a ClientChannel calls for each frame from the hub."""

    def response_received(request_id, response):
        """A RESPONSE (hedwig.protocol.requests.Response) to request `request_id`."""

    def delivery_received(handle, start, stop, entry):
        """Messages [start, stop) of a stored entry, for the subscription `handle`."""

    def event_received(handle, event):
        """A SubscriptionEvent for the subscription `handle`."""


class ClientChannel:
    """Frames for one connection. Request ids count up from 1 and wrap, skipping 0 (the id
    of pushed frames); a reply is matched to its request by id alone."""

    __slots__ = ("_decoder", "_next_id", "_prefixes", "_receiver")

    def __init__(self, receiver, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES):
        self._receiver = receiver
        # The hub may send frames of its own limit; a reply carries at most that plus
        # its small headers, and a client never refuses what it asked for.
        self._decoder = FrameDecoder(max_frame_bytes + 4096)
        self._next_id = 0
        self._prefixes = {}  # topic -> its str8, for publish_one

    def next_request_id(self) -> int:
        request_id = self._next_id + 1
        if request_id > _MAX_REQUEST_ID:
            request_id = 1
        self._next_id = request_id
        return request_id

    def request(self, op: Op, body: bytes) -> tuple[int, bytes]:
        """(request id, whole frame) for a request."""
        request_id = self.next_request_id()
        return request_id, frame_header(op, request_id, len(body)) + body

    def publish(self, topic: str, message_set: bytes) -> tuple[int, list]:
        """(request id, frame parts) for a PUBLISH: the message set is sent as it is."""
        request_id = self.next_request_id()
        prefix = publish_prefix(topic)
        header = frame_header(Op.PUBLISH, request_id, len(prefix) + len(message_set))
        return request_id, [header + prefix, message_set]

    def publish_one(self, topic: str, payload: bytes) -> tuple[int, bytes]:
        """(request id, whole frame) for a PUBLISH of one message without properties:
        the same bytes as encode_message_set([payload]) behind the header, packed at once."""
        request_id = self.next_request_id()
        prefix = self._prefixes.get(topic)
        if prefix is None:
            if len(self._prefixes) >= _PREFIX_CACHE:
                self._prefixes.clear()
            prefix = self._prefixes[topic] = publish_prefix(topic)
        head = _PUBLISH_ONE_HEAD.pack(5 + len(prefix) + 10 + len(payload), Op.PUBLISH, request_id)
        return request_id, head + prefix + _ONE_MESSAGE_SET.pack(1, 0, 1, len(payload)) + payload

    def data_received(self, data) -> None:
        """Parse what the transport received and call the receiver once per frame.

        Raises ProtocolViolation for bytes no hub sends; the caller drops the connection.
        """
        try:
            frames = self._decoder.feed(data)
        except ValueError as e:
            raise ProtocolViolation(f"bad frame from the hub: {e}") from None
        receiver = self._receiver
        for op, request_id, body in frames:
            if op == Op.DELIVERY:
                if len(body) < 12:
                    raise ProtocolViolation("DELIVERY shorter than its header")
                handle, start, stop, entry = parse_delivery(body)
                receiver.delivery_received(handle, start, stop, entry)
            elif op == Op.RESPONSE:
                try:
                    response = decode_response(body)
                except (RequestError, ValueError) as e:
                    raise ProtocolViolation(f"bad RESPONSE from the hub: {e}") from None
                receiver.response_received(request_id, response)
            elif op == Op.EVENT:
                if len(body) < 5:
                    raise ProtocolViolation("EVENT shorter than its body")
                handle, event = parse_event(body)
                receiver.event_received(handle, event)
            else:
                raise ProtocolViolation(f"unexpected op {op} from the hub")
