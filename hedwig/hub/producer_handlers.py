"""A hub connection's handlers of INIT_PRODUCER and IDEMPOTENT_PUBLISH (entries of the
HANDLERS table in handlers.py): decode, hand to the hub's Producers (producers.py),
answer in request order through the connection."""

from twisted.internet.defer import succeed

from hedwig.protocol.ops import Op
from hedwig.protocol.producer_requests import decode_idempotent_publish, encode_producer_id
from hedwig.protocol.requests import decode_empty, encode_published
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
    request = decode_idempotent_publish(body)
    published = connection.hub.producers.publish(
        request.topic, request.message_set, request.producer_id, request.sequence, request.first_send
    )
    # Counted like a PUBLISH's body until answered, so a flood of them pauses reading.
    size = len(body)
    connection._inflight_bytes += size

    def answered(result):
        connection._inflight_bytes -= size
        return result

    connection.answer(
        published.addBoth(answered),
        request_id,
        Op.IDEMPOTENT_PUBLISH,
        started,
        lambda seq_ids: response_frame(request_id, Op.IDEMPOTENT_PUBLISH, payload=encode_published(*seq_ids)),
    )
