"""Durable subscriptions as the delivery manager holds them: consume pointers and their writes.

A consume moves the pointer in memory at once; the metadata store sees it when it has moved
`consume_interval` messages or `consume_flush_ms` after the first unwritten move, and always
on close, unsubscribe and shutdown (Hedwig's consume_interval). One write is in flight per
subscription at a time, and however many consumes arrive meanwhile they collapse into the
next single write, so a slow store costs one pending write, never a queue.

With message sets one consume often moves the pointer past `consume_interval` at once, so
that rule alone means a metadata write per consume; `consume_write_gap_ms` (0: off) spaces
one subscriber's writes by at least that long, bounding the write rate whatever the set size.

A shared or pull subscription (its `dispatcher`, shared.py) is also acknowledged above
its pointer, message by message: `acks_changed` counts those acknowledgements toward the
same policy, and every write carries them (`acked_source(consumed_seq)`, the record's
opaque `acked` bytes) with the pointer, so the two are never persisted apart.
"""

from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.logger import Logger

from hedwig.concurrency.deferreds import Waiters
from hedwig.meta.interface import BadVersion, SubscriptionState

_logger = Logger()


class Subscription:
    """One durable subscriber (topic, subscriber id) loaded on this hub."""

    __slots__ = (
        "_changes",
        "_clock",
        "_flush_after_s",
        "_flush_waiters",
        "_interval",
        "_last_write",
        "_write_gap_s",
        "_metadata",
        "_persisted_changes",
        "_rewrite",
        "_unwritten_acks",
        "_timer",
        "_writing",
        "acked_source",
        "consumed_seq",
        "cursor",
        "deleted",
        "dispatcher",
        "persisted_seq",
        "preferences",
        "skipped_by_bound",
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
        self.cursor = None  # the live Cursor when attached to a channel (or a pull subscription's member)
        self.dispatcher = None  # a shared or pull subscription's SharedDispatcher
        self.acked_source = None  # seq -> the acked bytes to write with consumed seq-id seq
        self.skipped_by_bound = 0  # messages its message bound skipped (exclusive; shared: its dispatcher's)
        # Changes written beside the pointer (acks above it, preferences): made, and written.
        self._changes = 0
        self._persisted_changes = 0
        self._unwritten_acks = 0
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
        return self.consumed_seq != self.persisted_seq or self._changes != self._persisted_changes

    @property
    def kind(self) -> str:
        return self.preferences.get("kind", "exclusive")

    @property
    def pull(self) -> bool:
        return bool(self.preferences.get("pull"))

    def reply(self) -> dict:
        """What a SUBSCRIBE that attached to it answers: where delivery goes on."""
        return {"consumed_seq": self.consumed_seq, "next_seq": self.consumed_seq + 1}

    def consumed(self, seq: int) -> None:
        """The pointer moved to `seq` in memory; write it when the policy says so (as
        _schedule does, inline: every CONSUME comes here)."""
        self.consumed_seq = seq
        if seq - self.persisted_seq >= self._interval:
            wait = self._last_write + self._write_gap_s - self._clock.seconds()
            if wait <= 0:
                self._request_write()
            else:
                self._arm(wait)
        else:
            self._arm(self._flush_after_s)

    def acks_changed(self, count: int) -> None:
        """`count` messages above the pointer were acknowledged (or the set of them
        changed otherwise): written with the pointer, under the same policy."""
        self._changes += 1
        self._unwritten_acks += count
        self._schedule(self._unwritten_acks >= self._interval)

    def preferences_changed(self) -> None:
        """A SUBSCRIBE changed the preferences: written within consume_flush_ms."""
        self._changes += 1
        self._schedule(False)

    def _schedule(self, due: bool) -> None:
        """Write now (or once the write gap allows) when `due`, else within the flush delay."""
        if due:
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
        changes, self._unwritten_acks = self._changes, 0
        acked = self.acked_source(seq) if self.acked_source is not None else b""
        waiters, self._flush_waiters = self._flush_waiters, Waiters()
        d = maybeDeferred(
            self._metadata.put_subscription,
            self.topic,
            self.subscriber_id,
            SubscriptionState(seq, self.preferences, acked),
            self.version,
        )
        d.addCallbacks(
            self._written, self._write_failed, callbackArgs=(seq, changes, waiters), errbackArgs=(waiters,)
        )

    def _written(self, version, seq, changes, waiters) -> None:
        self._writing = False
        self.version = version
        self.persisted_seq = seq
        self._persisted_changes = changes
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
