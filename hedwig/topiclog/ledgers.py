"""A topic log's ledgers over time: rolls to a new ledger (full, aged, or at acquire), their
ranges written with compare-and-set, and garbage collection of whole closed ledgers
(TopicLog's part for the ledger list; see topic_log.py for the barrier rules)."""


from twisted.internet.defer import (
    Deferred,
    fail,
    inlineCallbacks,
    maybeDeferred,
    succeed,
)
from twisted.logger import Logger
from twisted.python.failure import Failure

from hedwig.concurrency.deferreds import Waiters
from hedwig.ledger.interface import LedgerError, StorageFull
from hedwig.meta.interface import BadVersion, LedgerRange
from hedwig.topiclog.errors import LogCorrupt, TopicFenced
from hedwig.topiclog.pending import NO_LEDGER, LogState, OpenLedger
from hedwig.topiclog.retention import ledgers_to_delete

_logger = Logger()
_NOT_DELETED = object()  # what _delete_quietly fires with when the deletion failed


class LedgerLifecycle:
    """Part of TopicLog (topic_log.py): rolls and garbage collection of its ledgers."""

    def _start_roll(self) -> None:
        if self._rolling:
            return
        self._rolling = True
        self._roll().addBoth(self._rolled)

    @inlineCallbacks
    def _roll(self):
        yield self._until(self._drained_waiters, not self._inflight)
        if self._state == LogState.FAILED:
            return
        ledger = self._open
        if not ledger.closed:
            # The store refuses appends to it at once; its final sync (the whole ledger,
            # under fsync "never": up to max_ledger_bytes) goes on while appends continue
            # in the new ledger. Every acknowledged entry is already as durable as the
            # policy promises, so nothing waits for that sync but close().
            self._track_close(ledger.ledger_id, maybeDeferred(self._ledgers.close_ledger, ledger.ledger_id))
            ledger.closed = True
        new_id = yield self._ledgers.create()
        first = self._next_seq

        def replace_open(ranges):
            if ranges[-1].ledger_id != ledger.ledger_id:
                raise LogCorrupt(f"topic {self.topic}: the open range is not ledger {ledger.ledger_id}")
            if ledger.ledger_id == NO_LEDGER:  # acquired on a full disk: no ledger to close
                return [*ranges[:-1], LedgerRange(new_id, first, None)]
            return [
                *ranges[:-1],
                LedgerRange(ledger.ledger_id, ledger.first_seq, first - 1),
                LedgerRange(new_id, first, None),
            ]

        def switch():
            if ledger.ledger_id != NO_LEDGER:
                self._locator.keep_index(ledger.ledger_id, ledger.index)
            self._open = OpenLedger(new_id, first)
            self.rolls += 1

        try:
            yield self._topic_ops.run(self.topic, self._write_ranges, replace_open, switch)
        except BaseException:
            self._delete_quietly(new_id)
            raise

    def roll_if_aged(self) -> Deferred:
        """Roll the open ledger if its first entry is older than max_ledger_age_s; never
        an empty one. Appends roll a busy topic themselves; the periodic GC pass calls this
        so that a topic gone quiet closes its last ledger too, which GC and retention can
        then delete. Deferred[bool]: whether this call rolled; a roll already under way
        is waited for and stands in for one (False). It fails as the roll it started did."""
        if self._state != LogState.OPEN:
            return fail(self._unavailable())
        return self._roll_aged()

    @inlineCallbacks
    def _roll_aged(self):
        if self._rolling:
            yield self._until_rolled().addErrback(lambda _failure: None)  # logged by _rolled
        ledger = self._open
        if (
            self._state != LogState.OPEN
            or self._rolling
            or not ledger.entries
            or int(self._clock.seconds() * 1_000_000) <= ledger.roll_after_us
        ):
            return False
        before = self.rolls
        rolled = self._until_rolled()  # (first: a roll over synchronous stores ends at once)
        self._start_roll()
        yield rolled
        return self.rolls != before

    def _until_rolled(self) -> Deferred:
        """Deferred firing when the roll under way ends (failing as it failed)."""
        return self._roll_waiters.wait()

    def _track_close(self, ledger_id: int, closing: Deferred) -> None:
        self._ledger_closes.add(closing)

        def closed(result):
            self._ledger_closes.discard(closing)
            if isinstance(result, Failure):
                _logger.warn(
                    "topic {topic}: closing ledger {ledger_id} failed: {error}",
                    topic=self.topic,
                    ledger_id=ledger_id,
                    error=result.value,
                )

        closing.addBoth(closed)

    def _rolled(self, result) -> None:
        self._rolling = False
        roll_waiters, self._roll_waiters = self._roll_waiters, Waiters()
        if isinstance(result, Failure):
            if result.check(TopicFenced):
                self._fail(result.value)
            else:
                (_logger.warn if result.check(StorageFull) else _logger.error)(
                    "topic {topic}: rolling to a new ledger failed: {error}",
                    topic=self.topic,
                    error=result.value,
                )
                # The waiting appends fail with the cause; the next append tries the roll again.
                while self._waiting:
                    op = self._waiting.popleft()
                    op.failure = (
                        result if result.check(LedgerError) else Failure(LedgerError(str(result.value)))
                    )
                    op.done = True
                    self._inflight.append(op)
        while self._waiting and not self._rolling:
            self._hand_over(self._waiting.popleft())
        self._deliver()
        self._check_idle()
        if isinstance(result, Failure):
            roll_waiters.fail(result)
        else:
            roll_waiters.fire()

    @inlineCallbacks
    def _write_ranges(self, change, then=None, garbage=()):
        """Compare-and-set the topic's ranges to change(current), then call then(): at once,
        before the lock passes to the next writer. Call under the lock. `garbage`: ledgers
        the change drops, recorded as garbage with it (so a sweep may finish deleting them)."""
        ranges = change(list(self._ranges))
        extra = (list(garbage),) if garbage else ()
        try:
            version = yield self._metadata.put_topic(self.topic, ranges, self._version, *extra)
        except BadVersion:
            raise TopicFenced(
                f"topic {self.topic}: its ledger ranges changed under this hub (another hub acquired it)"
            ) from None
        self._set_ranges(ranges, version)
        if then is not None:
            then()

    def _delete_quietly(self, ledger_id: int):
        """Deferred firing once the ledger is deleted, or with _NOT_DELETED (logged)."""

        def failed(failure):
            _logger.warn(
                "could not delete ledger {ledger_id}: {error}", ledger_id=ledger_id, error=failure.value
            )
            return _NOT_DELETED

        return maybeDeferred(self._ledgers.delete, ledger_id).addErrback(failed)

    def _forget_garbage(self, ledger_ids):
        """Drop the garbage records of deleted ledgers; a failure only leaves the records
        for the next sweep (which forgets records of ledgers already gone), so log it."""
        if not ledger_ids:
            return succeed(None)
        d = maybeDeferred(self._metadata.forget_garbage, ledger_ids)
        d.addErrback(
            lambda f: _logger.warn(
                "topic {topic}: could not forget deleted ledgers {ids}: {error}",
                topic=self.topic,
                ids=ledger_ids,
                error=f.value,
            )
        )
        return d

    def collect_garbage(self, min_consumed_seq: int) -> Deferred:
        """Delete whole closed ledgers whose last seq-id <= min_consumed_seq, then those that
        retention (age, then total size) drops, oldest first; never the open ledger.
        Deferred[int]: how many ledgers were deleted."""
        if type(min_consumed_seq) is not int or min_consumed_seq < 0:
            return fail(ValueError(f"a consumed seq-id is a non-negative integer, not {min_consumed_seq!r}"))
        if self._state != LogState.OPEN:
            return fail(self._unavailable())
        return self._topic_ops.run(self.topic, self._collect, min_consumed_seq)

    @inlineCallbacks
    def _collect(self, min_consumed_seq: int):
        ranges = self._ranges
        store = self._ledgers
        last_times = {}  # the store's reads are Deferreds: asked first, raised if reached
        if self._settings.retention_secs > 0:
            for r in ranges[:-1]:
                try:
                    last_times[r.ledger_id] = yield store.entry_time(
                        r.ledger_id, store.last_entry_id(r.ledger_id)
                    )
                except LedgerError as e:
                    last_times[r.ledger_id] = e

        def last_time_us(r):
            found = last_times[r.ledger_id]
            if isinstance(found, Exception):
                raise found
            return found

        doomed = ledgers_to_delete(
            ranges,
            min_consumed_seq,
            self._settings,
            int(self._clock.seconds() * 1_000_000),
            last_time_us,
            lambda r: store.ledger_bytes(r.ledger_id),
        )
        if not doomed:
            return 0
        gone = ranges[:doomed]
        gone_ids = [r.ledger_id for r in gone]
        try:
            yield self._write_ranges(lambda current: current[doomed:], garbage=gone_ids)
        except TopicFenced as e:
            self._fail(e)
            raise
        deleted = []
        for r in gone:
            self._locator.forget(r.ledger_id)
            if (yield self._delete_quietly(r.ledger_id)) is not _NOT_DELETED:
                deleted.append(r.ledger_id)
        # A ledger whose deletion failed stays recorded: the next start-up sweep retries it.
        yield self._forget_garbage(deleted)
        _logger.info(
            "topic {topic}: deleted {count} ledger(s) holding seq-ids {first}..{last}",
            topic=self.topic,
            count=doomed,
            first=gone[0].first_seq,
            last=gone[-1].last_seq,
        )
        return doomed
