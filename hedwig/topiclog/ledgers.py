"""A topic's ledgers over time (LedgerRoller): the ranges as last written to the metadata
store, rolls to a new ledger, and garbage collection of whole sealed ledgers.

The ranges (ledger id, first seq-id, last seq-id; the last one open) change only here,
and only by compare-and-set, one change at a time in the hub's per-topic queue
(`topic_ops`): a roll seals the open range and opens the next; garbage collection
drops the oldest sealed ranges, recording their ledgers as garbage in the same write,
then deletes them. Anything else that rewrites sealed ledgers (a compactor) would go the
same way: its new ranges through `change_ranges`, the ledgers it replaced through
`drop_ledgers`. When to roll, and what waits meanwhile, is the writer's (topic_log.py):
a roll is a barrier in its append order.
"""

from twisted.internet.defer import (
    Deferred,
    DeferredList,
    inlineCallbacks,
    maybeDeferred,
    succeed,
)
from twisted.logger import Logger
from twisted.python.failure import Failure

from hedwig.ledger.interface import LedgerError, NoSuchLedger
from hedwig.meta.interface import BadVersion, LedgerRange
from hedwig.topiclog.errors import LogCorrupt, TopicFenced
from hedwig.topiclog.pending import NO_LEDGER, OpenLedger
from hedwig.topiclog.retention import ledgers_to_delete

_logger = Logger()
_NOT_DELETED = object()  # what _delete_quietly fires with when the deletion failed


class LedgerRoller:
    """The ledger list of one topic log: `ranges` (as last written), `starts` (their
    first seq-ids, for bisect), `version` (the metadata's, for compare-and-set)."""

    def __init__(
        self,
        topic: str,
        *,
        ledgers,
        metadata,
        settings,
        clock,
        locator,
        topic_ops,
        ranges: list[LedgerRange],
        version: int,
        on_fenced,
        options: dict | None = None,
    ):
        self.topic = topic
        self._ledgers = ledgers
        self._metadata = metadata
        self._settings = settings
        self._clock = clock
        self._locator = locator
        self._topic_ops = topic_ops  # the hub's per-topic queue: metadata writes one at a time
        self._on_fenced = on_fenced  # called (TopicFenced) when GC finds another hub owns the topic
        self._options = options or {}  # the topic's options: written with every change of its ranges
        self._set_ranges(ranges, version)
        self._sealing: set[Deferred] = set()  # closes of ledgers rolls sealed, not yet done
        self.rolls = 0

    def _set_ranges(self, ranges: list[LedgerRange], version: int) -> None:
        self.ranges = ranges
        self.starts = [r.first_seq for r in ranges]
        self.version = version

    # -- rolls ---------------------------------------------------------------------------

    @inlineCallbacks
    def roll(self, ledger: OpenLedger, first_seq: int, switch):
        """Seal `ledger` (the open one: the store refuses appends to it from now on; its
        final sync goes on in the background) and open a new ledger from `first_seq`:
        its range written with compare-and-set, then switch(the new OpenLedger) called at
        once, before the next change of the topic's ranges. Fails TopicFenced when
        another hub changed the ranges, or as the store or metadata failed (the new
        ledger is deleted again then)."""
        if not ledger.closed:
            # Every acknowledged entry is already as durable as the policy promises, so
            # nothing waits for this sync (under fsync "never", the whole ledger) but close().
            self._track_seal(ledger.ledger_id, maybeDeferred(self._ledgers.close_ledger, ledger.ledger_id))
            ledger.closed = True
        new_id = yield self._ledgers.create()

        def replace_open(ranges):
            if ranges[-1].ledger_id != ledger.ledger_id:
                raise LogCorrupt(f"topic {self.topic}: the open range is not ledger {ledger.ledger_id}")
            if ledger.ledger_id == NO_LEDGER:  # (the first append since the acquire: none to seal)
                return [*ranges[:-1], LedgerRange(new_id, first_seq, None)]
            return [
                *ranges[:-1],
                LedgerRange(ledger.ledger_id, ledger.first_seq, first_seq - 1),
                LedgerRange(new_id, first_seq, None),
            ]

        def opened():
            if ledger.ledger_id != NO_LEDGER:  # (else the first ledger since the acquire: no roll)
                self._locator.keep_index(ledger.ledger_id, ledger.index)
                self.rolls += 1
            switch(OpenLedger(new_id, first_seq))

        try:
            yield self._topic_ops.run(self.topic, self.change_ranges, replace_open, opened)
        except BaseException:
            self._delete_quietly(new_id)
            raise

    def _track_seal(self, ledger_id: int, closing: Deferred) -> None:
        self._sealing.add(closing)

        def closed(result):
            self._sealing.discard(closing)
            if isinstance(result, Failure):
                _logger.warn(
                    "topic {topic}: closing ledger {ledger_id} failed: {error}",
                    topic=self.topic,
                    ledger_id=ledger_id,
                    error=result.value,
                )

        closing.addBoth(closed)

    @inlineCallbacks
    def close(self, ledger: OpenLedger):
        """The log closes: close the open `ledger` in the store (a failure is logged),
        then wait for the closes rolls started."""
        try:
            if not ledger.closed:
                yield maybeDeferred(self._ledgers.close_ledger, ledger.ledger_id)
                ledger.closed = True
                self._locator.keep_index(ledger.ledger_id, ledger.index)
        except Exception as e:
            _logger.warn(
                "topic {topic}: closing ledger {ledger_id} failed: {error}",
                topic=self.topic,
                ledger_id=ledger.ledger_id,
                error=e,
            )
        finally:
            if self._sealing:  # ledgers sealed by rolls, still syncing
                yield DeferredList(list(self._sealing))

    # -- the ranges ------------------------------------------------------------------------

    @inlineCallbacks
    def change_ranges(self, change, then=None, garbage=(), options=None):
        """Compare-and-set the topic's ranges to change(current), then call then(): at once,
        before the lock passes to the next writer. Call under the lock (`topic_ops`).
        `garbage`: ledgers the change drops, recorded as garbage with it (so a sweep may
        finish deleting them); `options`: the record's options, when they change with it.
        Fails TopicFenced when the ranges changed under this hub."""
        ranges = change(list(self.ranges))
        extra = (list(garbage),) if garbage else ()
        options = self._options if options is None else options
        try:
            version = yield self._metadata.put_topic(
                self.topic, ranges, self.version, *extra, options=options
            )
        except BadVersion:
            raise TopicFenced(
                f"topic {self.topic}: its ledger ranges changed under this hub (another hub acquired it)"
            ) from None
        self._set_ranges(ranges, version)
        if then is not None:
            then()

    def change_options(self, options: dict) -> Deferred:
        """Write the topic's record with `options` merged into its options (the ranges as
        they are, compare-and-set), one change at a time with the ranges' (`topic_ops`);
        the options are the roller's from then on. Fails TopicFenced as change_ranges."""

        def write():
            merged = {**self._options, **options}
            return self.change_ranges(lambda ranges: ranges, lambda: self._options.update(merged), (), merged)

        return self._topic_ops.run(self.topic, write)

    def describe(self, last_seq: int) -> list:
        """Every range with its size in the store (None: the ledger is lost)."""
        store = self._ledgers
        described = []
        for r in self.ranges:
            if r.ledger_id == NO_LEDGER:  # (none yet: the first append creates it)
                continue
            try:
                size, location = store.ledger_bytes(r.ledger_id), store.location(r.ledger_id)
            except NoSuchLedger:
                size = location = None  # lost: missing from the store (its seq-ids cannot be read)
            described.append(
                {
                    "ledger_id": r.ledger_id,
                    "first_seq": r.first_seq,
                    "last_seq": last_seq if r.last_seq is None else r.last_seq,
                    "bytes": size,
                    "location": location,
                }
            )
        return described

    # -- garbage collection and retention --------------------------------------------------

    def collect_garbage(self, min_consumed_seq: int) -> Deferred:
        """Delete whole sealed ledgers whose last seq-id <= min_consumed_seq, then those
        that retention (age, then total size) drops, oldest first; never the open ledger.
        Deferred[int]: how many ledgers were deleted."""
        return self._topic_ops.run(self.topic, self._collect, min_consumed_seq)

    @inlineCallbacks
    def _collect(self, min_consumed_seq: int):
        ranges = self.ranges
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
            yield self.change_ranges(lambda current: current[doomed:], garbage=gone_ids)
        except TopicFenced as e:
            self._on_fenced(e)
            raise
        yield self.drop_ledgers(gone_ids)
        _logger.info(
            "topic {topic}: deleted {count} ledger(s) holding seq-ids {first}..{last}",
            topic=self.topic,
            count=doomed,
            first=gone[0].first_seq,
            last=gone[-1].last_seq,
        )
        return doomed

    @inlineCallbacks
    def drop_ledgers(self, ledger_ids):
        """Delete ledgers no range names any more (recorded as garbage by the change that
        dropped them), and then their garbage records. A ledger whose deletion failed
        stays recorded: the next start-up sweep retries it."""
        deleted = []
        for ledger_id in ledger_ids:
            self._locator.forget(ledger_id)
            if (yield self._delete_quietly(ledger_id)) is not _NOT_DELETED:
                deleted.append(ledger_id)
        yield self._forget_garbage(deleted)

    def _delete_quietly(self, ledger_id: int):
        """Deferred firing once the ledger is deleted, or with _NOT_DELETED (logged)."""

        def failed(failure):
            _logger.warn(
                "could not delete ledger {ledger_id}: {error}", ledger_id=ledger_id, error=failure.value
            )
            return _NOT_DELETED

        return maybeDeferred(self._ledgers.delete, ledger_id).addErrback(failed)

    def forget_garbage(self, ledger_ids):
        """Drop the garbage records of ledgers kept after all (a compaction's new one,
        recorded as garbage while it was written); a failure is logged."""
        return self._forget_garbage(ledger_ids)

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
