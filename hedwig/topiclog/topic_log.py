"""A topic's log: dense seq-ids over a list of ledgers, written by one writer.

Seq-ids 1, 2, ... map to (ledger, entry) by ranges: the metadata store keeps the topic's
ledger ranges (ledger id, first seq-id, last seq-id; the last range is the open ledger),
and each ledger's entries hold message sets of several consecutive seq-ids, found by an
LedgerIndex (open ledger) or the shared EntryLocator (closed ledgers).

A topic rolls to a new ledger when the open one is full (max_ledger_bytes,
max_ledger_entries), when it is too old (its first entry older than max_ledger_age_s: at
the next append, or from the GC pass through roll_if_aged when the topic has gone quiet;
an empty ledger never rolls), and whenever the topic is acquired. GC and retention delete
whole closed ledgers only, so the age roll is what lets them reach a quiet topic's data.
The append path pays one comparison for it.

Appends are pipelined: each is handed to the ledger store at once (seq-ids are assigned
then, in call order, on the reactor thread) and acknowledged in call order once durable.
Rolling to a new ledger is a barrier: appends arriving meanwhile wait in order, the
appends already in the old ledger are acknowledged, the old ledger is closed to appends
(its final sync runs on in the background), and the new ranges are written with
compare-and-set before anything enters the new ledger. So the
ranges in the metadata store always cover every acknowledged entry, and a ledger closed
by a roll ends exactly where its range says.

Failures: an append the store refuses at once (StorageFull, or any error raised before
anything was stored) consumes no seq-ids, so there is never a gap, and the next append
may succeed. A failure after the store accepted the bytes (a failed sync) leaves the
ledger's tail uncertain: the log stops (LogFailed) and closes; opening the topic again
recovers the ledger as it is. A lost compare-and-set means another hub owns the topic:
the log stops with TopicFenced.

TopicLog is split by job: this module is the writer (appends in flight, their order,
the state: pending.py's LogState); ledgers.py rolls and collects ledgers; reading.py
reads entries and searches by time.
"""

from collections import deque

from twisted.internet.defer import (
    Deferred,
    DeferredList,
    fail,
    inlineCallbacks,
    maybeDeferred,
    succeed,
)
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from hedwig.concurrency.deferreds import OpQueue, SharedResult, Waiters
from hedwig.config.settings import LogSettings
from hedwig.ledger.interface import LedgerClosed, LedgerFenced, NoSuchLedger
from hedwig.meta.interface import LedgerRange
from hedwig.protocol.entry import ENTRY_HEADER_FIXED_SIZE, LocalEntryHeaders, encode_entry_header
from hedwig.topiclog.ack_gate import AckGate
from hedwig.topiclog.entry import LogEntry
from hedwig.topiclog.errors import LogClosed, LogFailed, TopicFenced
from hedwig.topiclog.interface import ITopicLog
from hedwig.topiclog.ledgers import LedgerLifecycle
from hedwig.topiclog.local_append import LocalAppend
from hedwig.topiclog.locator import EntryLocator
from hedwig.topiclog.pending import NO_LIMIT, SEQ_LIMIT, LogState, OpenLedger, PendingAppend, check_append
from hedwig.topiclog.reading import ReadingEntries

_logger = Logger()

_OPEN, _CLOSING, _CLOSED, _FAILED = LogState.OPEN, LogState.CLOSING, LogState.CLOSED, LogState.FAILED
NEVER_HELD = AckGate()  # the gate of a log no hub holds (tests, tools)

@implementer(ITopicLog)
class TopicLog(LocalAppend, LedgerLifecycle, ReadingEntries):
    """The log of one topic owned by this hub. Made by TopicLogManager.open (which recovers
    the previous ledger and writes the ranges); never construct one directly elsewhere.

    `ranges` ends with the open ledger's range (last_seq None), empty at construction.
    """

    def __init__(
        self,
        topic: str,
        *,
        ledgers,
        metadata,
        settings: LogSettings,
        region: str,
        clock,
        ranges: list[LedgerRange],
        version: int,
        last_time_us: int = 0,
        locator: EntryLocator | None = None,
        on_close=None,
        topic_ops=None,
        gate: AckGate = NEVER_HELD,
    ):
        if not ranges or ranges[-1].last_seq is not None:
            raise ValueError("a topic log's ranges end with its open ledger")
        self.topic = topic
        self._ledgers = ledgers
        self._append_now = getattr(ledgers, "append_now", ledgers.append)  # (ILedgerStore.append)
        self._metadata = metadata
        self._settings = settings
        self._region = region.encode("utf-8")
        self._local_headers = LocalEntryHeaders(self._region)  # (a client's publish: one pack)
        self._clock = clock
        self._locator = locator if locator is not None else EntryLocator(ledgers, 16 << 20)
        self._on_close = on_close
        self._gate = gate  # held hub-wide while ownership is uncertain (ack_gate.py)
        self._set_ranges(list(ranges), version)
        # Roll limits, read once: "no limit" (0) becomes a bound never reached.
        self._max_entries = settings.max_ledger_entries if settings.max_ledger_entries > 0 else NO_LIMIT
        self._max_bytes = settings.max_ledger_bytes if settings.max_ledger_bytes > 0 else NO_LIMIT
        age_us = settings.max_ledger_age_s * 1_000_000
        self._max_age_us = int(age_us) if 0 < age_us < NO_LIMIT else NO_LIMIT  # (NaN: off too)
        opened = ranges[-1]
        self._open = OpenLedger(opened.ledger_id, opened.first_seq)
        self.last_seq = opened.first_seq - 1
        self._next_seq = opened.first_seq
        self._last_time_us = last_time_us
        self._state = _OPEN
        self._inflight: deque[PendingAppend] = deque()  # handed to the store (or refused), in call order
        self._waiting: deque[PendingAppend] = deque()  # arrived during a roll, not yet handed over
        self._rolling = False
        self._delivering = False
        self._handing = None
        self._drained_waiters = Waiters()  # fired when no append is in flight
        self._idle_waiters = Waiters()  # ... and none waits and no roll runs
        # Metadata writes of this topic (roll, GC) one at a time, in the hub's per-topic queue.
        self._topic_ops = topic_ops if topic_ops is not None else OpQueue()
        self._ledger_closes: set[Deferred] = set()  # closes started by rolls, not yet done
        self._roll_waiters = Waiters()  # told how the roll under way ended
        self._closed_result = None
        self._stopped_by = None  # why the log failed, for the appends that come after
        self.rolls = 0

    # -- state ---------------------------------------------------------------------------

    @property
    def first_seq(self) -> int:
        """The earliest retained seq-id (last_seq + 1 when nothing is retained)."""
        return self._ranges[0].first_seq

    @property
    def open_ledger_id(self) -> int:
        return self._open.ledger_id

    @property
    def ranges(self) -> list[LedgerRange]:
        """The ledger ranges as last written to the metadata store."""
        return list(self._ranges)

    @property
    def is_open(self) -> bool:
        return self._state == _OPEN

    @property
    def stopped_by(self) -> Exception | None:
        """Why the log failed (TopicFenced: another hub took the topic over), or None."""
        return self._stopped_by

    def _set_ranges(self, ranges: list[LedgerRange], version: int) -> None:
        self._ranges = ranges
        self._starts = [r.first_seq for r in ranges]
        self._version = version

    def _now_us(self) -> int:
        """Publish time: the clock, never earlier than the previous entry's (find_by_time
        searches publish times, so they must not go backwards when the wall clock does)."""
        now = int(self._clock.seconds() * 1_000_000)
        if now < self._last_time_us:
            now = self._last_time_us
        self._last_time_us = now
        return now

    # -- append ----------------------------------------------------------------------------

    def append(
        self,
        message_set,
        count: int,
        origin_region: str | None = None,
        origin_seq: int | None = None,
        via: str | None = None,
        producer=None,
    ):
        """Append one entry holding `count` messages; Deferred[LogEntry] firing in call
        order once durable. See the module docstring for failures. A region relay passes
        the origin it keeps and `via`, the neighbour region the entry came from; an
        idempotent publish its `producer` (producer id, sequence), kept in the entry's
        header (hedwig.hub.producer_state derives its tables from them)."""
        stored = self.append_now(message_set, count, origin_region, origin_seq, via, producer)
        return succeed(stored) if stored.__class__ is LogEntry else stored

    def append_now(
        self,
        message_set,
        count: int,
        origin_region: str | None = None,
        origin_seq: int | None = None,
        via: str | None = None,
        producer=None,
    ):
        """append, answered within the call when it can be: the LogEntry itself when the
        entry is acknowledged at once (the store acknowledges at once, under fsync
        `never` or `interval`, and no earlier append is still in flight), else append's
        Deferred[LogEntry] (a failure too is a failed Deferred, as from append)."""
        if (  # the common case in one call (local_append.py)
            origin_region is None
            and origin_seq is None
            and via is None
            and producer is None
            and self._state is _OPEN
            and not self._inflight
            and not self._waiting
            and not self._rolling
            and not self._gate.held
        ):
            stored = self._append_local(message_set, count)
            if stored is not None:
                return stored
        try:
            origin = self._region if origin_region is None else origin_region.encode("utf-8")
            check_append(message_set, count, origin, origin_seq)
            via_name = via.encode("utf-8") if via else b""
            if len(via_name) > 255:
                raise ValueError("region names are at most 255 bytes")
        except (TypeError, ValueError, UnicodeError) as e:
            return fail(e)
        op = PendingAppend(message_set, count, origin, origin_seq, self._now_us(), via_name, producer)
        if self._state != _OPEN:
            self._refuse(op, self._unavailable())
        elif self._rolling or self._waiting:
            self._waiting.append(op)
        else:
            self._hand_over(op)
        self._deliver()
        return self._outcome(op)

    @staticmethod
    def _outcome(op: PendingAppend):
        """What append_now answers for `op` once it was handed over (or refused)."""
        if op.deferred is None:  # (every op still in the log past this call has its Deferred)
            if op.out:  # acknowledged or failed at once
                return op.entry if op.failure is None else fail(op.failure)
            op.deferred = Deferred()
        return op.deferred

    def _unavailable(self) -> Exception:
        if self._stopped_by is not None:
            return type(self._stopped_by)(str(self._stopped_by))
        return LogClosed(f"topic {self.topic}: the log is {self._state.value}")

    def _is_full(self) -> bool:
        ledger = self._open
        return ledger.entries >= self._max_entries or ledger.bytes >= self._max_bytes

    def _hand_over(self, op: PendingAppend) -> None:
        """Assign op its seq-ids and give it to the store (or start a roll first)."""
        ledger = self._open
        entries = ledger.entries
        if ledger.closed or (
            entries
            and (
                entries >= self._max_entries
                or ledger.bytes + ENTRY_HEADER_FIXED_SIZE + len(op.origin) + len(op.message_set)
                > self._max_bytes
                or op.time_us > ledger.roll_after_us
            )
        ):
            self._waiting.appendleft(op)
            self._start_roll()
            return
        if not entries:
            ledger.roll_after_us = op.time_us + self._max_age_us
        first = self._next_seq
        last = first + op.count - 1
        if last >= SEQ_LIMIT:
            self._refuse(op, ValueError(f"topic {self.topic}: seq-ids exhausted"))
            return
        if op.origin is self._region and op.origin_seq is None and not op.via and op.producer is None:
            header = self._local_headers.header(first, op.count, op.time_us)
        else:
            origin_seq = first if op.origin_seq is None else op.origin_seq
            header = encode_entry_header(
                first, op.count, op.time_us, op.origin, origin_seq, op.via, op.producer
            )
        data = header + op.message_set
        op.entry = LogEntry(first, last, data, op.time_us)
        op.message_set = None
        # State moves first: a store acknowledging synchronously must find it settled.
        nbytes = len(data)
        self._next_seq = last + 1
        ledger.index.append(first)
        ledger.entries += 1
        ledger.bytes += nbytes
        self._inflight.append(op)
        self._handing = op
        try:
            d = self._ledgers.append(ledger.ledger_id, data, op.time_us)
        except Exception:
            d = fail()
        if d.called and not isinstance(d.result, Failure):
            op.done = True  # acknowledged at once (fsync never): skip the callback machinery
        else:
            d.addCallbacks(self._stored, self._store_failed, callbackArgs=(op,), errbackArgs=(op,))
        self._handing = None
        self._handed(op, ledger, first, nbytes)

    def _handed(self, op: PendingAppend, ledger, first: int, nbytes: int) -> None:
        """After the store was given op's entry: take the seq-ids back if it refused at
        once, or roll a ledger it filled."""
        if op.failure is not None:  # refused at once: nothing stored, so the seq-ids are free again
            self._next_seq = first
            ledger.index.pop()
            ledger.entries -= 1
            ledger.bytes -= nbytes
            if op.failure.check(LedgerClosed, NoSuchLedger):
                if op.failure.check(LedgerFenced):
                    # Another hub took the topic over and fenced its ledger on the shared
                    # storage (hedwig.ledger.fencing): this hub owns the topic no more.
                    stopped = TopicFenced(f"topic {self.topic}: {op.failure.value}")
                else:  # closed or removed under us: another owner recovered it
                    stopped = LogFailed(
                        f"topic {self.topic}: ledger {ledger.ledger_id} is no longer writable "
                        f"({op.failure.value})"
                    )
                op.failure = Failure(stopped)
                self._fail(stopped)
        elif self._state == _OPEN and self._is_full():
            self._start_roll()  # now, so a full ledger is closed (and collectable) without waiting

    def _stored(self, _entry_id, op: PendingAppend) -> None:
        if op.done:  # already failed by an earlier append's failure
            return
        op.done = True
        if self._handing is None:
            self._deliver()

    def _store_failed(self, failure: Failure, op: PendingAppend) -> None:
        if op.done:
            return
        op.failure = failure
        op.done = True
        if self._handing is op:
            return  # refused at once; _hand_over takes the seq-ids back
        if failure.check(LedgerFenced):  # found fenced by a group commit round
            stopped = TopicFenced(f"topic {self.topic}: {failure.value}")
            op.failure = Failure(stopped)
            self._fail(stopped)
        else:
            self._fail(
                LogFailed(
                    f"topic {self.topic}: an earlier append failed in the store ({failure.value}); "
                    "reopen the topic"
                )
            )
        self._deliver()

    def _refuse(self, op: PendingAppend, exc: Exception) -> None:
        """Fail op in its place in the call order."""
        op.failure = Failure(exc)
        op.done = True
        self._inflight.append(op)

    def _deliver(self) -> None:
        """Fire finished appends from the head, in call order."""
        if self._delivering:
            return
        self._delivering = True
        try:
            inflight = self._inflight
            gate = self._gate
            while inflight and inflight[0].done:
                if gate.held and inflight[0].failure is None:
                    gate.park(self)  # (acknowledged, in order, when the gate opens: ack_gate.py)
                    break
                op = inflight.popleft()
                op.out = True
                if op.failure is None:
                    self.last_seq = op.entry.last_seq
                    if op.deferred is not None:  # (None: the append_now on the stack answers it)
                        op.deferred.callback(op.entry)
                elif op.deferred is not None:
                    op.deferred.errback(op.failure)
        finally:
            self._delivering = False
        if not self._inflight and (self._drained_waiters or self._idle_waiters):
            self._drained_waiters.fire()
            self._check_idle()

    def deliver_held(self) -> None:
        """The hub's AckGate opened: acknowledge what it held, in order."""
        self._deliver()

    def _check_idle(self) -> None:
        if not self._inflight and not self._waiting and not self._rolling:
            self._idle_waiters.fire()

    @staticmethod
    def _until(waiters: Waiters, ready: bool) -> Deferred:
        return succeed(None) if ready else waiters.wait()

    def _fail(self, exc: Exception) -> None:
        """Stop the log: appends not yet stored fail in call order; then close."""
        if self._state in (_FAILED, _CLOSED):
            return
        # (taken over by another hub of the region: its routine, not this hub's fault)
        (_logger.warn if isinstance(exc, TopicFenced) else _logger.error)("{error}", error=exc)
        self._state = _FAILED
        self._stopped_by = exc
        reason = Failure(exc)
        for op in self._inflight:
            if not op.done:
                op.failure = reason
                op.done = True
        while self._waiting:
            op = self._waiting.popleft()
            op.failure = reason
            op.done = True
            self._inflight.append(op)
        self._begin_close()

    # -- rolls -----------------------------------------------------------------------------

    # -- reads -----------------------------------------------------------------------------

    # -- find by time ----------------------------------------------------------------------

    # -- garbage collection and retention --------------------------------------------------

    # -- description and close -------------------------------------------------------------

    def describe(self) -> dict:
        store = self._ledgers
        ledgers = []
        for r in self._ranges:
            try:
                size, location = store.ledger_bytes(r.ledger_id), store.location(r.ledger_id)
            except NoSuchLedger:
                size = location = None  # lost: missing from the store (its seq-ids cannot be read)
            ledgers.append(
                {
                    "ledger_id": r.ledger_id,
                    "first_seq": r.first_seq,
                    "last_seq": self.last_seq if r.last_seq is None else r.last_seq,
                    "bytes": size,
                    "location": location,
                }
            )
        return {
            "topic": self.topic,
            "state": self._state.value,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "pending_appends": len(self._inflight) + len(self._waiting),
            "metadata_version": self._version,
            "ledgers": ledgers,
        }

    def close(self) -> Deferred:
        """Stop taking appends, let those accepted finish, close the open ledger."""
        if self._state == _OPEN:
            self._state = _CLOSING
        self._begin_close()
        return self._closed_result.wait()

    def _begin_close(self) -> None:
        if self._closed_result is None:
            self._closed_result = SharedResult(self._close())

    @inlineCallbacks
    def _close(self):
        yield self._until(self._idle_waiters, not (self._inflight or self._waiting or self._rolling))
        ledger = self._open
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
            if self._ledger_closes:  # ledgers closed by rolls, still syncing
                yield DeferredList(list(self._ledger_closes))
            if self._state != _FAILED:
                self._state = _CLOSED
            if self._on_close is not None:
                self._on_close(self)
