"""The hub's handlers of ACK, NACK and FETCH, the requests of shared and pull
subscriptions (registered by hub/handlers.py's request_handlers): decode, find the
subscription the handle names on this connection, hand to the delivery manager.

ACK and NACK are answered only when they fail, as CONSUME is; FETCH is answered at once
(its messages follow as deliveries, and a FETCH_DONE event ends it), so a long poll
never holds back the replies of the requests after it.
"""

from twisted.internet.defer import succeed

from hedwig.protocol.ops import Op
from hedwig.protocol.responses import response_frame
from hedwig.protocol.spec import OPS


class _Ranges:
    """ACK or NACK: seq-id ranges of the subscription an attached handle names."""

    op = None

    def __init__(self, act, stats, clock):
        self.spec = OPS[self.op]
        self._act = act  # the delivery manager's acknowledge or reject
        self._stats = stats.record
        self._name = self.spec.name
        self._seconds = clock.seconds

    def handle(self, connection, request_id, body, started) -> None:
        handle, ranges = self.spec.decode(body)
        topic, subscriber_id = connection.handles.attached(handle)
        self._act(topic, subscriber_id, connection, ranges)
        self._stats(self._name, True, self._seconds() - started)


class AckHandler(_Ranges):
    op = Op.ACK

    def __init__(self, delivery, stats, clock):
        super().__init__(delivery.acknowledge, stats, clock)


class NackHandler(_Ranges):
    op = Op.NACK

    def __init__(self, delivery, stats, clock):
        super().__init__(delivery.reject, stats, clock)


class FetchHandler:
    """FETCH: a pull subscription asks for messages; answered at once."""

    spec = OPS[Op.FETCH]

    def __init__(self, delivery):
        self._fetch = delivery.fetch

    def handle(self, connection, request_id, body, started) -> None:
        request = self.spec.decode(body)
        topic, subscriber_id = connection.handles.attached(request.handle)
        self._fetch(topic, subscriber_id, connection, request.max_messages, request.timeout_ms / 1000.0)
        connection.answer(
            succeed(None), request_id, Op.FETCH, started, lambda _: response_frame(request_id, Op.FETCH)
        )
