"""The hub's handlers of INIT_PRODUCER and IDEMPOTENT_PUBLISH (registered by
hub/handlers.py's request_handlers): decode, hand to the hub's Producers (producers.py),
answer in request order through the connection."""

from twisted.internet.defer import succeed

from hedwig.hub.producers import user_producer_id
from hedwig.protocol.ops import Op
from hedwig.protocol.producer_requests import idempotent_published_response
from hedwig.protocol.responses import response_frame
from hedwig.protocol.spec import OPS


class InitProducerHandler:
    """INIT_PRODUCER: a new producer id (drawn, never recorded)."""

    spec = OPS[Op.INIT_PRODUCER]

    def __init__(self, producers):
        self._producers = producers  # hub/producers.py

    def handle(self, connection, request_id, body, started) -> None:
        spec = self.spec
        spec.decode(body)
        connection.answer(
            succeed(self._producers.new_id()),
            request_id,
            Op.INIT_PRODUCER,
            started,
            lambda pid: response_frame(request_id, Op.INIT_PRODUCER, payload=spec.encode_reply(pid)),
        )


class IdempotentPublishHandler:
    """IDEMPOTENT_PUBLISH, as PUBLISH is handled: a reply slot kept in request order, the
    body counted in flight until answered (a flood of them pauses reading), one callback
    pair."""

    spec = OPS[Op.IDEMPOTENT_PUBLISH]

    def __init__(self, producers, stats, clock):
        self._publish = producers.publish
        self._stats = stats
        self._seconds = clock.seconds

    def handle(self, connection, request_id, body, started) -> None:
        request = self.spec.decode(body)
        producer_id = request.producer_id
        principal = connection.principal
        owner = None
        if principal is not None:  # ([auth] on) the user's own producer, in its share: producers.py
            owner = principal.name
            producer_id = user_producer_id(owner, producer_id)
        published = self._publish(
            request.topic, request.message_set, producer_id, request.sequence, request.first_send, owner
        )
        slot = connection.replies.reserve(len(body))
        context = (connection, slot, request_id, started, request.topic)
        published.addCallbacks(self._published, self._failed, context, None, context)

    def _published(self, seq_ids, connection, slot, request_id, started, _topic) -> None:
        self._stats.record("idempotent_publish", True, self._seconds() - started)
        connection.replies.fill(slot, idempotent_published_response(request_id, *seq_ids))

    def _failed(self, failure, connection, slot, request_id, started, topic) -> None:
        connection.fail(failure, slot, request_id, Op.IDEMPOTENT_PUBLISH, started, topic)
