"""A hub connection's handlers of ACK, NACK and FETCH, the requests of shared and pull
subscriptions (entries of the HANDLERS table in handlers.py): decode, find the
subscription the handle names on this connection, hand to the delivery manager.

ACK and NACK are answered only when they fail, as CONSUME is; FETCH is answered at once
(its messages follow as deliveries, and a FETCH_DONE event ends it), so a long poll
never holds back the replies of the requests after it.
"""

from twisted.internet.defer import succeed

from hedwig.protocol.ops import Op
from hedwig.protocol.responses import response_frame
from hedwig.protocol.work_requests import decode_fetch, decode_ranges


def on_ack(connection, request_id, body, started) -> None:
    handle, ranges = decode_ranges(body, "ACK")
    topic, subscriber_id = connection._attached_key(handle)
    connection.hub.delivery.acknowledge(topic, subscriber_id, connection, ranges)
    connection.hub.stats.record("ack", True, connection.hub.clock.seconds() - started)


def on_nack(connection, request_id, body, started) -> None:
    handle, ranges = decode_ranges(body, "NACK")
    topic, subscriber_id = connection._attached_key(handle)
    connection.hub.delivery.reject(topic, subscriber_id, connection, ranges)
    connection.hub.stats.record("nack", True, connection.hub.clock.seconds() - started)


def on_fetch(connection, request_id, body, started) -> None:
    request = decode_fetch(body)
    topic, subscriber_id = connection._attached_key(request.handle)
    delivery = connection.hub.delivery
    delivery.fetch(topic, subscriber_id, connection, request.max_messages, request.timeout_ms / 1000.0)
    connection.answer(
        succeed(None), request_id, Op.FETCH, started, lambda _: response_frame(request_id, Op.FETCH)
    )
