"""Durable subscriptions as the delivery manager holds them: consume pointers and their writes.

A consume moves the pointer in memory at once; the metadata store sees it when it has moved
`consume_interval` messages or `consume_flush_ms` after the first unwritten move, and always
on close, unsubscribe and shutdown (Hedwig's consume_interval). One write is in flight per
subscription at a time, and however many consumes arrive meanwhile they collapse into the
next single write, so a slow store costs one pending write, never a queue.

With message sets one consume often moves the pointer past `consume_interval` at once, so
that rule alone means a metadata write per consume; `consume_write_gap_ms` (0: off) spaces
one subscriber's writes by at least that long, bounding the write rate whatever the set size.
"""

from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.logger import Logger

from hedwig.concurrency import Waiters
from hedwig.meta.interface import BadVersion, SubscriptionState

_logger = Logger()


class Subscription:
    """One durable subscriber (topic, subscriber id) loaded on this hub."""

    __slots__ = (
        "_clock",
        "_flush_after_s",
        "_flush_waiters",
        "_interval",
        "_last_write",
        "_write_gap_s",
        "_metadata",
        "_rewrite",
        "_timer",
        "_writing",
        "consumed_seq",
        "cursor",
        "deleted",
        "persisted_seq",
        "preferences",
        "subscriber_id",
        "topic",
        "version",
        "write_failures",
        "writes",
    )

    def __init__(self, topic, subscriber_id, consumed_seq, preferences, version, metadata, clock, settings):
        self.topic = topic
        self.subscriber_id = subscriber_id
        self.consumed_seq = consumed_seq
        self.persisted_seq = consumed_seq
        self.preferences = dict(preferences or {})
        self.version = version
        self.cursor = None  # the live Cursor when attached to a channel
        self.deleted = False
        self.writes = 0
        self.write_failures = 0
        self._metadata = metadata
        self._clock = clock
        self._interval = max(1, settings.consume_interval)
        self._flush_after_s = settings.consume_flush_ms / 1000.0
        self._write_gap_s = settings.consume_write_gap_ms / 1000.0
        self._last_write = float("-inf")
        self._timer = None
        self._writing = False
        self._rewrite = False
        self._flush_waiters = Waiters()  # answered by the next write that starts

    @property
    def dirty(self) -> bool:
        return self.consumed_seq != self.persisted_seq

    def consumed(self, seq: int) -> None:
        """The pointer moved to `seq` in memory; write it when the policy says so."""
        self.consumed_seq = seq
        if seq - self.persisted_seq >= self._interval:
            wait = self._last_write + self._write_gap_s - self._clock.seconds()
            if wait <= 0:
                self._request_write()
            else:
                self._arm(wait)
        else:
            self._arm(self._flush_after_s)

    def _arm(self, delay: float) -> None:
        """Have the timer fire within `delay` (an earlier one stays)."""
        timer = self._timer
        if timer is not None:
            if timer.getTime() <= self._clock.seconds() + delay:
                return
            timer.cancel()
        self._timer = self._clock.callLater(delay, self._timer_fired)

    def reposition(self, seq: int) -> None:
        """A SUBSCRIBE with an explicit starting point moved the pointer (maybe back)."""
        self.consumed_seq = seq

    def flush(self) -> Deferred:
        """Deferred firing once the pointer as it is now is in the metadata store."""
        self._cancel_timer()
        if self.deleted or (not self._writing and not self.dirty):
            return succeed(None)
        d = self._flush_waiters.wait()
        if self._writing:
            self._rewrite = True
        else:
            self._start_write()
        return d

    def settle(self) -> Deferred:
        """Deferred firing once no write is in flight (before deleting the record)."""
        self._cancel_timer()
        if not self._writing:
            return succeed(None)
        return self._flush_waiters.wait()

    def cancel(self) -> None:
        """Stop the flush timer (the subscription is going away)."""
        self._cancel_timer()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            if self._timer.active():
                self._timer.cancel()
            self._timer = None

    def _timer_fired(self) -> None:
        self._timer = None
        self._request_write()

    def _request_write(self) -> None:
        self._cancel_timer()
        if self.deleted:
            return
        if self._writing:
            self._rewrite = True
        elif self.dirty:
            self._start_write()

    def _start_write(self) -> None:
        self._writing = True
        self._rewrite = False
        self._last_write = self._clock.seconds()
        seq = self.consumed_seq
        waiters, self._flush_waiters = self._flush_waiters, Waiters()
        d = maybeDeferred(
            self._metadata.put_subscription,
            self.topic,
            self.subscriber_id,
            SubscriptionState(seq, self.preferences),
            self.version,
        )
        d.addCallbacks(self._written, self._write_failed, callbackArgs=(seq, waiters), errbackArgs=(waiters,))

    def _written(self, version, seq, waiters) -> None:
        self._writing = False
        self.version = version
        self.persisted_seq = seq
        self.writes += 1
        if self.dirty and (self._rewrite or self._flush_waiters):
            self._start_write()  # (takes the waiters that came meanwhile)
        waiters.fire()
        later, self._flush_waiters = self._flush_waiters, Waiters()
        later.fire()

    def _write_failed(self, failure, waiters) -> None:
        self._writing = False
        self.write_failures += 1
        if failure.check(BadVersion):
            # Not a fault of this hub: the record changed under the write (another writer,
            # or the subscription was deleted meanwhile, as an UNSUBSCRIBE racing a
            # CONSUME does). Learn its version (or that it is gone), then let the timer
            # write ours again. A warning, without a traceback; none once it is deleted.
            if not self.deleted:
                _logger.warn(
                    "the consume pointer of {topic}/{subscriber} changed under this hub ({why});"
                    " reading it again",
                    topic=self.topic,
                    subscriber=self.subscriber_id,
                    why=failure.getErrorMessage(),
                )
            d = maybeDeferred(self._metadata.get_subscription, self.topic, self.subscriber_id)
            d.addCallbacks(self._refreshed, lambda f: None)
        else:
            _logger.failure(
                "writing the consume pointer of {topic}/{subscriber} failed",
                failure,
                topic=self.topic,
                subscriber=self.subscriber_id,
            )
        if self.dirty and self._timer is None and not self.deleted:
            self._timer = self._clock.callLater(self._flush_after_s, self._timer_fired)
        later, self._flush_waiters = self._flush_waiters, Waiters()
        waiters.fail(failure)
        later.fail(failure)

    def _refreshed(self, record) -> None:
        if record is None:
            self.deleted = True
            self._cancel_timer()
        else:
            self.version = record.version
