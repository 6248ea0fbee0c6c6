"""One client connection's protocol, without I/O: request ids, frames out, frames in.

Both clients (blocking and Twisted) wrap a ClientChannel: they hand it the bytes their
transport received and it calls the receiver back once per frame, so the parsing of
replies, deliveries and events lives in one place and is tested without sockets.
"""

import struct

from zope.interface import Interface

from hedwig.protocol import Op, frame_header
from hedwig.protocol.framing import DEFAULT_MAX_FRAME_BYTES
from hedwig.protocol.request_ids import RequestIds
from hedwig.protocol.requests import RequestError, publish_prefix
from hedwig.protocol.responses import decode_response

_PUBLISH_ONE_HEAD = struct.Struct("!IBI")
_ONE_MESSAGE_SET = struct.Struct("!BBII")  # version, flags, count 1, the payload's length
_PREFIX_CACHE = 1024
_LENGTH = struct.Struct("!I")
_OP_AND_ID = struct.Struct("!BI")
_DELIVERY = struct.Struct("!III")
_EVENT = struct.Struct("!IB")


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

    __slots__ = (
        "_max_frame_bytes",
        "_needed",
        "_ids",
        "_partial",
        "_partial_bytes",
        "_prefixes",
        "_receiver",
    )

    def __init__(self, receiver, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES):
        self._receiver = receiver
        # The hub may send frames of its own limit; a reply carries at most that plus
        # its small headers, and a client never refuses what it asked for.
        self._max_frame_bytes = max_frame_bytes + 4096
        self._partial = []  # the start of a frame that did not arrive whole
        self._partial_bytes = 0
        self._needed = 0  # bytes the partial frame needs before it can be parsed
        self._ids = RequestIds()
        self._prefixes = {}  # topic -> its str8, for publish_one

    def next_request_id(self) -> int:
        return self._ids.next()

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

        Frames are cut straight out of the received bytes: an entry is copied once (the
        slice handed to the receiver), never through an intermediate buffer; only a
        frame split across reads is joined. Raises ProtocolViolation for bytes no hub
        sends; the caller drops the connection.
        """
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
                receiver.delivery_received(handle, start, stop, data[position + 21 : end])
            elif op == Op.RESPONSE:
                try:
                    response = decode_response(data[position + 9 : end])
                except (RequestError, ValueError) as e:
                    raise ProtocolViolation(f"bad RESPONSE from the hub: {e}") from None
                receiver.response_received(request_id, response)
            elif op == Op.EVENT:
                if length < 10:
                    raise ProtocolViolation("EVENT shorter than its body")
                handle, event = _EVENT.unpack_from(data, position + 9)
                receiver.event_received(handle, event)
            else:
                raise ProtocolViolation(f"unexpected op {op} from the hub")
            position = end
        if position < size:
            rest = data[position:]
            self._partial = [rest]
            self._partial_bytes = len(rest)
            self._needed = 4 + _LENGTH.unpack_from(rest)[0] if len(rest) >= 4 else 4
