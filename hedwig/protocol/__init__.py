"""The wire format: frames, message sets, entries, status codes. No I/O here."""

from hedwig.protocol.entry import EntryHeader, decode_entry, decode_entry_header, encode_entry_header
from hedwig.protocol.framing import (
    FrameDecoder,
    FrameError,
    FrameTooLarge,
    delivery_header,
    encode_event,
    encode_frame,
    frame_header,
    parse_delivery,
    parse_event,
)
from hedwig.protocol.message import Message
from hedwig.protocol.messageset import (
    MessageSetError,
    encode_message_set,
    parse_message_set,
    validate_message_set,
)
from hedwig.protocol.names import InvalidName, check_subscriber_id, check_topic
from hedwig.protocol.ops import PROTOCOL_VERSION, Op
from hedwig.protocol.status import Status, SubscriptionEvent

__all__ = [
    "PROTOCOL_VERSION",
    "EntryHeader",
    "FrameDecoder",
    "FrameError",
    "FrameTooLarge",
    "InvalidName",
    "Message",
    "MessageSetError",
    "Op",
    "Status",
    "SubscriptionEvent",
    "check_subscriber_id",
    "check_topic",
    "decode_entry",
    "decode_entry_header",
    "delivery_header",
    "encode_entry_header",
    "encode_event",
    "encode_frame",
    "encode_message_set",
    "frame_header",
    "parse_delivery",
    "parse_event",
    "parse_message_set",
    "validate_message_set",
]
