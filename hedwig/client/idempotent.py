"""Idempotent publishing (a client made with idempotent=True), for the three clients.

One producer id from the hub (INIT_PRODUCER, asked once), a PublishLane per topic
(idempotent_lane.py: numbering, order, what to send again, without I/O) and the resends
a lane asks for after a lost connection, a redirect or a hub that went away, with
backoff, until `reconnect_timeout` seconds pass without an answer. The hub stores a
number once and answers a repeat with the seq-ids of the first time
(hedwig.hub.producer_state), so nothing is stored twice and nothing is lost; a set
refused for good (too large, not authorised) was not stored, and its number is used
again by the next set. A producer the hub forgot, with nothing in doubt, is replaced by
a new one (Kafka's KIP-360): the topic's unanswered sets go on under a new producer id.

The work is written as steps (core.py) and run by the client's IWaiting: an event-loop
client keeps up to `max_sets_in_flight` sets of a topic on the wire; the blocking
client's thread holds the topic's turn while its set is out (threads publishing to one
topic take turns, to different topics they do not wait for each other) and runs the
resends due meanwhile itself (waiting.BlockingWaiting's agenda).
"""

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
RESEND_BACKOFF_FIRST = 0.05
RESEND_BACKOFF_MAX = 1.0
_PRODUCER_TURN = ("producer id",)  # (a turn no topic name can be)


class IdempotentPublisher:
    """A client core's producer id and its topics' PublishLanes."""

    def __init__(self, core, *, max_sets_in_flight: int = 32):
        self._core = core
        self._waiting = core._waiting
        self.max_sets_in_flight = max_sets_in_flight
        self.max_sequence = MAX_SEQUENCE  # the last number of a producer's sets of a topic
        self.retry_timeout = core.config.reconnect_timeout
        self.producer_id = None
        self._asking = None  # results waiting for the INIT_PRODUCER under way
        self._lanes = {}  # topic -> PublishLane
        self._first_lanes = {}  # topic -> its first lane, which uses the client's producer id
        self._backoff = {}  # topic -> the next resend delay
        self._failing_since = {}  # topic -> when its resends began (reset by an answer)
        self.resends = 0

    def publish_steps(self, topic: str, message_set: bytes, count: int):
        """Steps: Published of one message set of `topic`, numbered now, sent until
        answered (or refused for good, or failing for retry_timeout)."""
        waiting = self._waiting
        with waiting.turn(topic):
            result = waiting.new_result()
            lane = self._lanes.get(topic)
            if lane is None or lane.full:  # (2^32 sets numbered: a new producer goes on after it)
                lane = self._lanes[topic] = PublishLane(
                    self.max_sets_in_flight, after=lane, max_sequence=self.max_sequence
                )
            lane.add(message_set, count, result)
            self._pump(topic, lane)
            return (yield result)

    def _pump(self, topic: str, lane: PublishLane) -> None:
        for item in lane.ready():
            self._waiting.spawn(self._send_item(topic, lane, item))

    def _send_item(self, topic, lane, item):
        """Steps: one attempt at one set, and what its outcome does to the lane."""
        try:
            producer_id = yield from self._producer(topic, lane)
            first_send = item.attempts == 1
            body = encode_idempotent_publish(topic, producer_id, item.sequence, item.message_set, first_send)
            send = lambda c: c.call(Op.IDEMPOTENT_PUBLISH, body)  # noqa: E731
            published = yield from self._core._request_steps(topic, send, retry=False)
        except Exception as e:
            self._failed(topic, lane, item, e)
        else:
            self._failing_since.pop(topic, None)
            self._backoff.pop(topic, None)
            if lane.answered(item):
                self._waiting.settle(item.waiters, Published(*published))
        self._next(topic, lane)

    def _producer(self, topic, lane):
        """Steps: the producer id the lane's sets carry: the client's (asked once, by
        the first set that needs it), or a lane's own after a full one."""
        if lane.producer_id is not None:
            return lane.producer_id
        # A lane after a full one, or one whose producer the hub forgot (idempotent_lane.py).
        if lane is not self._first_lanes.setdefault(topic, lane) or lane.restarted:
            producer_id = yield from self._new_producer(topic)
            if lane.producer_id is None:  # (its first sets may ask together: the first answer is kept)
                lane.producer_id = producer_id
            return lane.producer_id
        with self._waiting.turn(_PRODUCER_TURN):  # (blocking: one thread asks, the others wait)
            if self.producer_id is not None:
                return self.producer_id
            if self._asking is not None:  # (an event loop: the sets of other topics ask too)
                asked = self._waiting.new_result()
                self._asking.append(asked)
                return (yield asked)
            self._asking = []
            try:
                self.producer_id = yield from self._new_producer(topic)
            except Exception as e:
                asking, self._asking = self._asking, None
                self._waiting.fail_all(asking, e)
                raise
            asking, self._asking = self._asking, None
            for asked in asking:
                self._waiting.settle(asked, self.producer_id)
            return self.producer_id

    def _new_producer(self, topic):
        send = lambda c: c.call(Op.INIT_PRODUCER, b"")  # noqa: E731
        return (yield from self._core._request_steps(topic, send, retry=True))

    def _failed(self, topic, lane, item, error) -> None:
        if isinstance(error, RequestTimeout):
            # (a hub that does not answer may be paused or cut off, its topics owned by
            # another hub by now: the resend asks the next hub of the list, which
            # redirects it back if the topic has not moved)
            self._core._ask_elsewhere(topic, self._core._routes.address(topic))
        now = self._waiting.now()
        since = self._failing_since.setdefault(topic, now)
        in_time = now - since < self.retry_timeout and not self._core._closed
        retryable = isinstance(error, RETRYABLE) and in_time
        for given_up in lane.failed(item, retryable, isinstance(error, ProducerSequenceGap), in_time):
            self._waiting.fail(given_up.waiters, error)

    def _next(self, topic: str, lane: PublishLane) -> None:
        """After an answer or a failure: let a successor lane go, rewind with backoff, or
        send what the lane has ready."""
        if lane.successor is not None and lane.idle:
            self._pump(topic, lane.successor)  # the lane after this full one may go now
        if lane.rewind_due():
            delay = self._backoff.get(topic, RESEND_BACKOFF_FIRST)
            self._backoff[topic] = min(delay * 2, RESEND_BACKOFF_MAX)
            self.resends += len(lane.to_resend)
            lane.rewind()
            self._waiting.call_later(delay, self._pump, topic, lane)
        else:
            self._pump(topic, lane)
