"""Bodies of the idempotent publish ops (Kafka's idempotent producer), docs/protocol.md.

INIT_PRODUCER asks for a producer id: the request body is empty, the reply's payload is
one u64, never 0. IDEMPOTENT_PUBLISH is PUBLISH with the producer's number for the set:

    str8 topic
    u64  producer_id   from INIT_PRODUCER (not 0)
    u32  sequence      the producer's number for this set on this topic: 0, 1, 2, ...
    u8   flags         bit 0 (FLAG_FIRST_SEND): the producer never sent this set before;
                       every other bit 0
    the message set    as in PUBLISH

and its reply is PUBLISH's (u64 first_seq, u64 last_seq). A producer numbers its sets of
each topic from 0, one by one, and sends them in that order; after a lost connection or
a redirect it sends the unanswered ones again, in order, with the same numbers, and
without FLAG_FIRST_SEND: a set sent for the first time cannot be a repeat, so the hub
needs no look into the topic's log for a new producer's set 0 that says so.
"""

import struct
from typing import NamedTuple

from hedwig.protocol.layouts import U64, RequestRefused, read_topic, str8
from hedwig.protocol.ops import Op
from hedwig.protocol.status import Status

PRODUCER_FIELDS = struct.Struct("!QIB")  # producer id, sequence, flags
FLAG_FIRST_SEND = 0x01
MAX_SEQUENCE = (1 << 32) - 1  # a producer that reaches it asks for a new producer id


class IdempotentPublish(NamedTuple):
    topic: str
    producer_id: int
    sequence: int
    message_set: bytes  # exactly as the publisher encoded it
    first_send: bool = False  # FLAG_FIRST_SEND


def encode_producer_id(producer_id: int) -> bytes:
    return U64.pack(producer_id)


def decode_producer_id(payload) -> int:
    if len(payload) != U64.size:
        raise RequestRefused(Status.MALFORMED_REQUEST, "an INIT_PRODUCER reply is one u64")
    (producer_id,) = U64.unpack_from(payload)
    if producer_id == 0:
        raise RequestRefused(Status.MALFORMED_REQUEST, "producer id 0")
    return producer_id


def idempotent_publish_prefix(topic: str, producer_id: int, sequence: int, first_send: bool = False) -> bytes:
    """The body before the message set (sent with writeSequence, as publish_prefix)."""
    return str8(topic) + PRODUCER_FIELDS.pack(producer_id, sequence, FLAG_FIRST_SEND if first_send else 0)


def encode_idempotent_publish(
    topic: str, producer_id: int, sequence: int, message_set: bytes, first_send: bool = False
) -> bytes:
    return idempotent_publish_prefix(topic, producer_id, sequence, first_send) + message_set


def decode_idempotent_publish(body) -> IdempotentPublish:
    """Every field range-checked: the topic by the name rules, the producer id not 0 (the
    u64 and u32 widths bound the rest), a message set present (validated by the hub)."""
    topic, offset = read_topic(body, 0)
    if len(body) - offset < PRODUCER_FIELDS.size:
        raise RequestRefused(Status.MALFORMED_REQUEST, "IDEMPOTENT_PUBLISH truncated in its producer fields")
    producer_id, sequence, flags = PRODUCER_FIELDS.unpack_from(body, offset)
    if producer_id == 0:
        raise RequestRefused(Status.MALFORMED_REQUEST, "producer id 0 is not a producer")
    if flags & ~FLAG_FIRST_SEND:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"unknown IDEMPOTENT_PUBLISH flags {flags:#x}")
    offset += PRODUCER_FIELDS.size
    if offset == len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, "IDEMPOTENT_PUBLISH without a message set")
    first_send = bool(flags & FLAG_FIRST_SEND)
    return IdempotentPublish(topic, producer_id, sequence, bytes(body[offset:]), first_send)


_PUBLISHED_FRAME = struct.Struct("!IBIBHHQQ")  # RESPONSE frame head, op, status, empty message, seq-ids


def idempotent_published_response(request_id: int, first_seq: int, last_seq: int) -> bytes:
    """The whole SUCCESS RESPONSE frame to an IDEMPOTENT_PUBLISH, in one pack (as
    responses.published_response is PUBLISH's)."""
    return _PUBLISHED_FRAME.pack(
        _PUBLISHED_FRAME.size - 4,
        Op.RESPONSE,
        request_id,
        Op.IDEMPOTENT_PUBLISH,
        Status.SUCCESS,
        0,
        first_seq,
        last_seq,
    )
