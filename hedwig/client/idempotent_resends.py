"""What the three clients' idempotent publishing shares: which failures a resend may get
past, how long it waits between resends, and (for the Twisted and asyncio clients, which
both keep a PublishLane per topic) the lanes and the rewind that sends failed sets again.

The rules live here once so that the clients cannot drift apart on them; each client's
module keeps only what its I/O model makes different (Deferreds, Futures, or a thread
that waits).
"""

from hedwig.client.idempotent_lane import PublishLane
from hedwig.protocol.errors import (
    ConnectionLost,
    CouldNotConnect,
    NotResponsibleForTopic,
    RequestTimeout,
    ServiceDown,
    TooManyRedirects,
)
from hedwig.protocol.producer_requests import MAX_SEQUENCE

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


class LanePublisher:
    """A client's producer id and its topics' PublishLanes; subclasses send the sets
    (`_pump`) and schedule a call later (`_call_later`) in their own event loop."""

    def __init__(self, client, *, max_sets_in_flight: int = 32, retry_timeout: float = 60.0):
        self.client = client
        self.max_sets_in_flight = max_sets_in_flight
        self.max_sequence = MAX_SEQUENCE  # the last number of a producer's sets of a topic
        self.retry_timeout = retry_timeout
        self.producer_id = None
        self._asking = None  # the INIT_PRODUCER under way (what waits for it: the subclass's)
        self._lanes = {}  # topic -> PublishLane
        self._first_lanes = {}  # topic -> its first lane, which uses the client's producer id
        self._backoff = {}  # topic -> the next resend delay
        self._failing_since = {}  # topic -> when its resends began (reset by an answer)
        self.resends = 0

    def _add(self, topic: str, message_set: bytes, count: int, waiter) -> None:
        """Number one message set of `topic` now; `waiter` learns its outcome."""
        lane = self._lanes.get(topic)
        if lane is None or lane.full:  # (2^32 sets numbered: a new producer goes on after it)
            lane = self._lanes[topic] = PublishLane(
                self.max_sets_in_flight, after=lane, max_sequence=self.max_sequence
            )
        lane.add(message_set, count, waiter)
        self._pump(topic, lane)

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
            self._call_later(delay, self._pump, topic, lane)
        else:
            self._pump(topic, lane)

    def _pump(self, topic: str, lane: PublishLane) -> None:
        raise NotImplementedError

    def _call_later(self, delay: float, function, *args) -> None:
        raise NotImplementedError
