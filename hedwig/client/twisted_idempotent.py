"""The Twisted client's idempotent publishing (Client(..., idempotent=True)): one
producer id from the hub, a PublishLane (idempotent_lane.py) per topic, and the resends
a lane asks for after a lost connection, a redirect or a hub that went away, with
backoff, until `retry_timeout` seconds pass without an answer.

A publish's Deferred fires once, with the seq-ids the set was stored at: the first
answer the hub gives, or the same seq-ids again when a resend was a repeat.
"""

from twisted.internet.defer import Deferred, succeed

from hedwig.client.idempotent_lane import PublishLane
from hedwig.protocol.errors import (
    ConnectionLost,
    CouldNotConnect,
    NotResponsibleForTopic,
    ProducerSequenceGap,
    RequestTimeout,
    ServiceDown,
    TooManyRedirects,
)
from hedwig.protocol.ops import Op
from hedwig.protocol.producer_requests import MAX_SEQUENCE, encode_idempotent_publish
from hedwig.protocol.requests import Published

# What a resend may get past: the set may or may not have been stored, or was not.
RETRYABLE = (
    ConnectionLost,
    CouldNotConnect,
    RequestTimeout,
    ServiceDown,
    NotResponsibleForTopic,
    TooManyRedirects,
)
_BACKOFF_FIRST = 0.05
_BACKOFF_MAX = 1.0


class IdempotentPublisher:
    """Part of hedwig.client.twisted.Client: sends its message sets numbered."""

    def __init__(self, client, clock, *, max_sets_in_flight: int = 32, retry_timeout: float = 60.0):
        self.client = client
        self._clock = clock
        self.max_sets_in_flight = max_sets_in_flight
        self.max_sequence = MAX_SEQUENCE  # the last number of a producer's sets of a topic
        self.retry_timeout = retry_timeout
        self.producer_id = None
        self._asking = None  # list of Deferreds waiting for the producer id
        self._lanes = {}  # topic -> PublishLane
        self._first_lanes = {}  # topic -> its first lane, which uses the client's producer id
        self._backoff = {}  # topic -> the next resend delay
        self._failing_since = {}  # topic -> when its resends began (reset by an answer)
        self.resends = 0

    def send(self, topic: str, message_set: bytes, count: int) -> Deferred:
        """Deferred[Published] of one message set of `topic`."""
        lane = self._lanes.get(topic)
        if lane is None or lane.full:  # (2^32 sets numbered: a new producer goes on after it)
            lane = self._lanes[topic] = PublishLane(
                self.max_sets_in_flight, after=lane, max_sequence=self.max_sequence
            )
        waiter = Deferred()
        lane.add(message_set, count, waiter)
        self._pump(topic, lane)
        return waiter

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

    def _next(self, topic: str, lane: PublishLane) -> None:
        if lane.successor is not None and lane.idle:
            self._pump(topic, lane.successor)  # the lane after this full one may go now
        if lane.rewind_due():
            delay = self._backoff.get(topic, _BACKOFF_FIRST)
            self._backoff[topic] = min(delay * 2, _BACKOFF_MAX)
            self.resends += len(lane.to_resend)
            lane.rewind()
            self._clock.callLater(delay, self._pump, topic, lane)
        else:
            self._pump(topic, lane)


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
