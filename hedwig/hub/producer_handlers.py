"""A hub connection's handlers of INIT_PRODUCER and IDEMPOTENT_PUBLISH (entries of the
HANDLERS table in handlers.py): decode, hand to the hub's Producers (producers.py),
answer in request order through the connection."""

from twisted.internet.defer import succeed

from hedwig.protocol.ops import Op
from hedwig.protocol.producer_requests import (
    decode_idempotent_publish,
    encode_producer_id,
    idempotent_published_response,
)
from hedwig.protocol.requests import decode_empty
from hedwig.protocol.responses import response_frame


def on_init_producer(connection, request_id, body, started) -> None:
    decode_empty(body, "INIT_PRODUCER")
    producer_id = connection.hub.producers.new_id()
    connection.answer(
        succeed(producer_id),
        request_id,
        Op.INIT_PRODUCER,
        started,
        lambda pid: response_frame(request_id, Op.INIT_PRODUCER, payload=encode_producer_id(pid)),
    )


def on_idempotent_publish(connection, request_id, body, started) -> None:
    """As the connection's PUBLISH handler: a reply slot kept in request order, the body
    counted in flight until answered (a flood of them pauses reading), one callback pair."""
    request = decode_idempotent_publish(body)
    published = connection.hub.producers.publish(
        request.topic, request.message_set, request.producer_id, request.sequence, request.first_send
    )
    slot = connection._replies.reserve()
    size = len(body)
    connection._inflight_bytes += size
    context = (connection, slot, request_id, started, size, request.topic)
    published.addCallbacks(_published, _failed, context, None, context)


def _published(seq_ids, connection, slot, request_id, started, size, _topic) -> None:
    connection._inflight_bytes -= size
    hub = connection.hub
    hub.stats.record("idempotent_publish", True, hub.clock.seconds() - started)
    connection._replies.fill(slot, idempotent_published_response(request_id, *seq_ids))


def _failed(failure, connection, slot, request_id, started, size, topic) -> None:
    connection._inflight_bytes -= size
    connection._failed(failure, slot, request_id, Op.IDEMPOTENT_PUBLISH, started, topic)
