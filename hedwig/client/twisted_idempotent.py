"""The Twisted client's idempotent publishing (Client(..., idempotent=True)): one
producer id from the hub, a PublishLane (idempotent_lane.py) per topic, and the resends
a lane asks for after a lost connection, a redirect or a hub that went away, with
backoff, until `retry_timeout` seconds pass without an answer.

A publish's Deferred fires once, with the seq-ids the set was stored at: the first
answer the hub gives, or the same seq-ids again when a resend was a repeat.
"""

from twisted.internet.defer import Deferred, succeed

from hedwig.client.idempotent_lane import PublishLane
from hedwig.client.idempotent_resends import RETRYABLE, LanePublisher
from hedwig.protocol.errors import ProducerSequenceGap
from hedwig.protocol.ops import Op
from hedwig.protocol.producer_requests import encode_idempotent_publish
from hedwig.protocol.requests import Published


class IdempotentPublisher(LanePublisher):
    """Part of hedwig.client.twisted.Client: sends its message sets numbered. `_asking`
    is the list of Deferreds waiting for the producer id."""

    def __init__(self, client, clock, *, max_sets_in_flight: int = 32, retry_timeout: float = 60.0):
        super().__init__(client, max_sets_in_flight=max_sets_in_flight, retry_timeout=retry_timeout)
        self._clock = clock

    def send(self, topic: str, message_set: bytes, count: int) -> Deferred:
        """Deferred[Published] of one message set of `topic`."""
        waiter = Deferred()
        self._add(topic, message_set, count, waiter)
        return waiter

    def _call_later(self, delay: float, function, *args) -> None:
        self._clock.callLater(delay, function, *args)

    def _producer(self, topic, lane) -> Deferred:
        if lane.producer_id is not None:
            return succeed(lane.producer_id)
        if lane is not self._first_lanes.setdefault(topic, lane):  # a lane after a full one
            asked = self.client._request(topic, lambda p: p.call(Op.INIT_PRODUCER, b""), retry=True)
            return asked.addCallback(_own_producer, lane)
        if self.producer_id is not None:
            return succeed(self.producer_id)
        d = Deferred()
        if self._asking is None:
            self._asking = [d]
            asked = self.client._request(topic, lambda p: p.call(Op.INIT_PRODUCER, b""), retry=True)
            asked.addBoth(self._got_producer)
        else:
            self._asking.append(d)
        return d

    def _got_producer(self, result) -> None:
        waiters, self._asking = self._asking, None
        if isinstance(result, int):
            self.producer_id = result
        for waiter in waiters:
            waiter.callback(result) if isinstance(result, int) else waiter.errback(result)

    def _pump(self, topic: str, lane: PublishLane) -> None:
        for item in lane.ready():
            d = self._producer(topic, lane)
            d.addCallback(self._send_set, topic, item)
            d.addCallbacks(self._answered, self._failed, (topic, lane, item), None, (topic, lane, item))

    def _send_set(self, producer_id, topic, item):
        first_send = item.attempts == 1
        body = encode_idempotent_publish(topic, producer_id, item.sequence, item.message_set, first_send)
        return self.client._request(topic, lambda p: p.call(Op.IDEMPOTENT_PUBLISH, body), retry=False)

    def _answered(self, published, topic, lane, item) -> None:
        self._failing_since.pop(topic, None)
        self._backoff.pop(topic, None)
        if lane.answered(item):
            item.waiters.callback(Published(*published))
        self._next(topic, lane)

    def _failed(self, failure, topic, lane, item) -> None:
        now = self._clock.seconds()
        since = self._failing_since.setdefault(topic, now)
        retryable = failure.check(*RETRYABLE) is not None and now - since < self.retry_timeout
        gap = failure.check(ProducerSequenceGap) is not None
        for given_up in lane.failed(item, retryable, gap):
            given_up.waiters.errback(failure)
        self._next(topic, lane)


def _own_producer(producer_id, lane):
    """A lane's own producer id: asked once (its first sets may ask together: the first
    answer is kept)."""
    if lane.producer_id is None:
        lane.producer_id = producer_id
    return lane.producer_id


class IdempotentPublishing:
    """Part of hedwig.client.twisted.Client: where its message sets go. `_idempotent` is
    the client's IdempotentPublisher when it was made with idempotent=True."""

    _idempotent = None

    def _publish_set(self, topic, message_set, count) -> Deferred:
        """Deferred[Published] of one message set: numbered and resent until answered by
        an idempotent client; otherwise sent once (a lost connection fails it)."""
        if self._idempotent is not None:
            return self._idempotent.send(topic, message_set, count)
        return self._request(topic, lambda p: p.publish(topic, message_set), retry=False)
