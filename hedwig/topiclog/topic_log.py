"""A topic's log: dense seq-ids over a list of ledgers, written by one writer.

Seq-ids 1, 2, ... map to (ledger, entry) by ranges: the metadata store keeps the topic's
ledger ranges (ledger id, first seq-id, last seq-id; the last range is the open ledger),
and each ledger's entries hold message sets of several consecutive seq-ids, found by an
LedgerIndex (open ledger) or the shared EntryLocator (closed ledgers).

A topic rolls to a new ledger when the open one is full (max_ledger_bytes,
max_ledger_entries), when it is too old (its first entry older than max_ledger_age_s: at
the next append, or from the GC pass through roll_if_aged when the topic has gone quiet;
an empty ledger never rolls), and at the first append after the topic is acquired (an
acquire records no ledger: its open range names none, NO_LEDGER, so a topic acquired to
be read creates none, and a ledger is written by one owner only). GC and retention delete
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

Failures: an append the store refuses at once (LedgerStoreFull, or any error raised before
anything was stored) consumes no seq-ids, so there is never a gap, and the next append
may succeed. A failure after the store accepted the bytes (a failed sync) leaves the
ledger's tail uncertain: the log stops (LogFailed) and closes; opening the topic again
recovers the ledger as it is. A lost compare-and-set means another hub owns the topic:
the log stops with TopicFenced.

TopicLog is the writer: appends in flight, their order and acknowledgement, the roll
barrier and the log's state (pending.py's LogState). It owns two parts, made in its
constructor: a LedgerRoller (ledgers.py: the ranges as written, the mechanics of a roll,
garbage collection and retention) and an EntryReader (reading.py: reads and the search
by time), whose `read` and `find_by_time` it binds as its own.
"""

from collections import deque

from twisted.internet.defer import (
    Deferred,
    fail,
    inlineCallbacks,
    succeed,
)
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from hedwig.concurrency.deferreds import OpQueue, SharedResult, Waiters, as_deferred
from hedwig.config.settings import LogSettings
from hedwig.ledger.interface import LedgerClosed, LedgerError, LedgerFenced, LedgerStoreFull, NoSuchLedger
from hedwig.meta.interface import LedgerRange, MetadataError, MetadataUnavailable
from hedwig.protocol.entry import ENTRY_HEADER_FIXED_SIZE, LocalEntryHeaders, encode_entry_header
from hedwig.topiclog.ack_gate import AckGate
from hedwig.topiclog.compaction import Compactor
from hedwig.topiclog.entry import LogEntry
from hedwig.topiclog.errors import LogClosed, LogFailed, TopicFenced
from hedwig.topiclog.interface import ITopicLog
from hedwig.topiclog.ledgers import LedgerRoller
from hedwig.topiclog.locator import EntryLocator
from hedwig.topiclog.pending import (
    MAX_COUNT,
    NO_LIMIT,
    SEQ_LIMIT,
    LogState,
    OpenLedger,
    PendingAppend,
    check_append,
)
from hedwig.topiclog.reading import EntryReader

_logger = Logger()

_OPEN, _CLOSING, _CLOSED, _FAILED = LogState.OPEN, LogState.CLOSING, LogState.CLOSED, LogState.FAILED
NEVER_HELD = AckGate()  # the gate of a log no hub holds (tests, tools)


@implementer(ITopicLog)
class TopicLog:
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
        options: dict | None = None,
    ):
        if not ranges or ranges[-1].last_seq is not None:
            raise ValueError("a topic log's ranges end with its open ledger")
        self.topic = topic
        # The topic's options as its record holds them (written with every change of its
        # ranges); "compaction": keyed messages only, the latest of each key kept.
        self.options = dict(options or {})
        self.compaction = bool(self.options.get("compaction"))
        self.partitions = self.options.get("partitions") or 1
        # "ttl_ms": the topic's default TTL (CREATE_TOPIC's), 0 for none: delivery takes it
        # for messages without one of their own, before the hub's [delivery] message_ttl_ms.
        self.ttl_ms = self.options.get("ttl_ms") or 0
        self._ledgers = ledgers
        self._append_now = getattr(ledgers, "append_now", ledgers.append)  # (ILedgerStore.append)
        self._region = region.encode("utf-8")
        self._local_headers = LocalEntryHeaders(self._region)  # (a client's publish: one pack)
        self._clock = clock
        self._locator = locator = locator if locator is not None else EntryLocator(ledgers, 16 << 20)
        self._on_close = on_close
        self._gate = gate  # held hub-wide while ownership is uncertain (ack_gate.py)
        # The ledger list: rolls and GC, their metadata writes one at a time in the hub's
        # per-topic queue (`topic_ops`).
        self._roller = LedgerRoller(
            topic,
            ledgers=ledgers,
            metadata=metadata,
            settings=settings,
            clock=clock,
            locator=locator,
            topic_ops=topic_ops if topic_ops is not None else OpQueue(),
            ranges=list(ranges),
            version=version,
            on_fenced=self._fail,
            options=self.options,
        )
        # Reads go straight to the reader (bound here: a read costs no call through the log).
        self._reader = reader = EntryReader(topic, ledgers, locator, self._roller, self)
        self.read = reader.read
        self.find_by_time = reader.find_by_time
        self._settings = settings
        self._compactor = Compactor(
            topic,
            ledgers=ledgers,
            roller=self._roller,
            reader=reader,
            settings=settings,
            clock=clock,
            topic_ops=self._roller._topic_ops,
        )
        self._compacting = None  # the compaction under way (a SharedResult), if any
        self._compacting_explicit = False  # ... whether a COMPACT asked for it
        # Roll limits, read once: "no limit" (0) becomes a bound never reached.
        self._max_entries = settings.max_ledger_entries if settings.max_ledger_entries > 0 else NO_LIMIT
        self._max_bytes = settings.max_ledger_bytes if settings.max_ledger_bytes > 0 else NO_LIMIT
        age_us = settings.max_ledger_age_s * 1_000_000
        self._max_age_us = int(age_us) if 0 < age_us < NO_LIMIT else NO_LIMIT  # (NaN: off too)
        opened = ranges[-1]
        self.open_ledger = OpenLedger(opened.ledger_id, opened.first_seq)  # (replaced by rolls)
        self.last_seq = opened.first_seq - 1
        self._next_seq = opened.first_seq
        self._last_time_us = last_time_us
        self._state = _OPEN
        self._inflight: deque[PendingAppend] = deque()  # handed to the store (or refused), in call order
        self._waiting: deque[PendingAppend] = deque()  # arrived during a roll, not yet handed over
        self._rolling = False
        self._acknowledging = False
        self._handing = None
        self._drained_waiters = Waiters()  # fired when no append is in flight
        self._idle_waiters = Waiters()  # ... and none waits and no roll runs
        self._roll_waiters = Waiters()  # told how the roll under way ended
        self._closed_result = None
        self._stopped_by = None  # why the log failed, for the appends that come after
        self._listener = None  # told of each entry acknowledged (acknowledge_to): the hub's cache

    # -- state ---------------------------------------------------------------------------

    @property
    def first_seq(self) -> int:
        """The earliest retained seq-id (last_seq + 1 when nothing is retained)."""
        return self._roller.ranges[0].first_seq

    @property
    def open_ledger_id(self) -> int:
        return self.open_ledger.ledger_id

    @property
    def ranges(self) -> list[LedgerRange]:
        """The ledger ranges as last written to the metadata store."""
        return list(self._roller.ranges)

    @property
    def rolls(self) -> int:
        """Rolls to a new ledger since the log was opened."""
        return self._roller.rolls

    @property
    def is_open(self) -> bool:
        return self._state == _OPEN

    @property
    def stopped_by(self) -> Exception | None:
        """Why the log failed (TopicFenced: another hub took the topic over), or None."""
        return self._stopped_by

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
        return as_deferred(self.append_now(message_set, count, origin_region, origin_seq, via, producer))

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
        if (  # the common case in one call (_append_local)
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
        self._acknowledge()
        return self._outcome(op)

    def _append_local(self, message_set, count: int):
        """append_now's common case in one call: a client's message set (no origin, no
        via, no producer) to an idle open log whose store acknowledges at once. It is
        _hand_over with what that case does not need left out (no PendingAppend, no trip
        through the in-flight queue, no re-check of a state already checked); the store is
        asked exactly as there (fencing and closed ledgers are the store's to refuse).
        tests/topiclog/test_one_append_path.py holds the two to the same answers, state
        and rolls over any sequence of appends.

        The LogEntry, acknowledged; the append's Deferred when the store did not
        acknowledge at once (a PendingAppend in the in-flight queue, like any other);
        None when the general path must take the append (a roll due, an argument to
        refuse: nothing was done then but moving the publish clock). The caller checked
        that the log is open, idle and not gated."""
        if (
            message_set.__class__ is not bytes
            or not message_set
            or count.__class__ is not int
            or not 1 <= count <= MAX_COUNT
        ):
            return None
        now = int(self._clock.seconds() * 1_000_000)  # (_now_us, inline)
        if now < self._last_time_us:
            now = self._last_time_us
        self._last_time_us = now
        ledger = self.open_ledger
        if ledger.closed:  # (a roll to retry: one failed after closing it, or no ledger yet)
            return None
        entries = ledger.entries
        if entries:
            if (
                entries >= self._max_entries
                or ledger.bytes + ENTRY_HEADER_FIXED_SIZE + len(self._region) + len(message_set)
                > self._max_bytes
                or now > ledger.roll_after_us
            ):
                return None  # a roll first
        else:
            ledger.roll_after_us = now + self._max_age_us
        first = self._next_seq
        last = first + count - 1
        if last >= SEQ_LIMIT:
            return None
        data = self._local_headers.header(first, count, now) + message_set
        entry = LogEntry(first, last, data, now)
        # State moves first, as in _hand_over.
        nbytes = len(data)
        self._next_seq = last + 1
        ledger.index.append(first)
        ledger.entries = entries + 1
        ledger.bytes += nbytes
        try:
            d = self._append_now(ledger.ledger_id, data, now)  # (an int: acknowledged at once)
        except Exception:
            d = fail()
        if d.__class__ is int or (d.called and not isinstance(d.result, Failure)):
            self.last_seq = last  # (_acknowledge's part: nothing was in flight, the gate is open)
            if ledger.entries >= self._max_entries or ledger.bytes >= self._max_bytes:  # (_is_full)
                self._start_roll()
            listener = self._listener
            if listener is not None:
                listener(entry)
            return entry
        op = PendingAppend(None, count, self._region, None, now)
        op.entry = entry
        self._inflight.append(op)
        self._handing = op
        d.addCallbacks(self._stored, self._store_failed, callbackArgs=(op,), errbackArgs=(op,))
        self._handing = None
        self._handed(op, ledger, first, nbytes)
        self._acknowledge()
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
        ledger = self.open_ledger
        return ledger.entries >= self._max_entries or ledger.bytes >= self._max_bytes

    def _hand_over(self, op: PendingAppend) -> None:
        """Assign op its seq-ids and give it to the store (or start a roll first)."""
        ledger = self.open_ledger
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
            self._acknowledge()

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
        self._acknowledge()

    def _refuse(self, op: PendingAppend, exc: Exception) -> None:
        """Fail op in its place in the call order."""
        op.failure = Failure(exc)
        op.done = True
        self._inflight.append(op)

    def _acknowledge(self) -> None:
        """Acknowledge finished appends from the head, in call order: the entry's seq-ids
        become the log's (last_seq) and its Deferred, if it has one, fires; a failed one's
        fails. Appends after one not finished wait for it; while the hub's AckGate is held
        nothing is acknowledged (failures go on), the log waits parked at the gate."""
        if self._acknowledging:
            return
        self._acknowledging = True
        try:
            inflight = self._inflight
            gate = self._gate
            listener = self._listener
            while inflight and inflight[0].done:
                if gate.held and inflight[0].failure is None:
                    gate.park(self)  # (acknowledged, in order, when the gate opens: ack_gate.py)
                    break
                op = inflight.popleft()
                op.out = True
                if op.failure is None:
                    self.last_seq = op.entry.last_seq
                    if listener is not None:
                        try:
                            listener(op.entry)
                        except Exception:  # (the listener's own: later appends go on all the same)
                            _logger.failure(
                                "topic {topic}: telling of seq {seq} failed",
                                topic=self.topic,
                                seq=op.entry.first_seq,
                            )
                    if op.deferred is not None:  # (None: the append_now on the stack answers it)
                        op.deferred.callback(op.entry)
                elif op.deferred is not None:
                    op.deferred.errback(op.failure)
        finally:
            self._acknowledging = False
        if not self._inflight and (self._drained_waiters or self._idle_waiters):
            self._drained_waiters.fire()
            self._check_idle()

    def acknowledge_to(self, listener) -> None:
        """Call listener(entry) for each entry as it is acknowledged, in order, before the
        append that stored it is answered; None: nobody (ITopicLog.acknowledge_to)."""
        self._listener = listener

    def acknowledge_held(self) -> None:
        """The hub's AckGate opened: acknowledge what it held, in order."""
        self._acknowledge()

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

    # -- reads (bound to the EntryReader's in __init__; these say what they are) ---------------

    def read(self, from_seq: int, max_entries: int, max_bytes: int) -> Deferred:
        """EntryReader.read (reading.py)."""
        return self._reader.read(from_seq, max_entries, max_bytes)

    def find_by_time(self, time_us: int) -> Deferred:
        """EntryReader.find_by_time (reading.py)."""
        return self._reader.find_by_time(time_us)

    # -- rolls: a barrier in the append order ------------------------------------------------

    def _start_roll(self) -> None:
        if self._rolling:
            return
        self._rolling = True
        self._roll().addBoth(self._rolled)

    @inlineCallbacks
    def _roll(self):
        yield self._until(self._drained_waiters, not self._inflight)
        if self._state == _FAILED:
            return
        yield self._roller.roll(self.open_ledger, self._next_seq, self._switch)

    def _switch(self, ledger: OpenLedger) -> None:
        """The roller wrote the ranges of a new open ledger: appends go to it from now on."""
        self.open_ledger = ledger

    def _rolled(self, result) -> None:
        self._rolling = False
        roll_waiters, self._roll_waiters = self._roll_waiters, Waiters()
        if isinstance(result, Failure):
            if result.check(TopicFenced):
                self._fail(result.value)
            else:
                (_logger.warn if result.check(LedgerStoreFull, MetadataUnavailable) else _logger.error)(
                    "topic {topic}: rolling to a new ledger failed: {error}",
                    topic=self.topic,
                    error=result.value,
                )
                # The waiting appends fail with the cause, its type kept (the metadata store
                # unreachable is SERVICE_DOWN to a publisher, not a storage error); the next
                # append tries the roll again.
                while self._waiting:
                    op = self._waiting.popleft()
                    op.failure = (
                        result
                        if result.check(LedgerError, MetadataError)
                        else Failure(LedgerError(str(result.value)))
                    )
                    op.done = True
                    self._inflight.append(op)
        while self._waiting and not self._rolling:
            self._hand_over(self._waiting.popleft())
        self._acknowledge()
        self._check_idle()
        if isinstance(result, Failure):
            roll_waiters.fail(result)
        else:
            roll_waiters.fire()

    def roll_if_aged(self) -> Deferred:
        """Roll the open ledger if its first entry is older than max_ledger_age_s; never
        an empty one. Appends roll a busy topic themselves; the periodic GC pass calls this
        so that a topic gone quiet closes its last ledger too, which GC and retention can
        then delete. Deferred[bool]: whether this call rolled; a roll already under way
        is waited for and stands in for one (False). It fails as the roll it started did."""
        if self._state != _OPEN:
            return fail(self._unavailable())
        return self._roll_aged()

    @inlineCallbacks
    def _roll_aged(self):
        if self._rolling:
            yield self._until_rolled().addErrback(lambda _failure: None)  # logged by _rolled
        ledger = self.open_ledger
        if (
            self._state != _OPEN
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

    # -- garbage collection and retention --------------------------------------------------

    def collect_garbage(self, min_consumed_seq: int) -> Deferred:
        """Delete whole closed ledgers whose last seq-id <= min_consumed_seq, then those that
        retention (age, then total size) drops, oldest first; never the open ledger.
        Deferred[int]: how many ledgers were deleted."""
        if type(min_consumed_seq) is not int or min_consumed_seq < 0:
            return fail(ValueError(f"a consumed seq-id is a non-negative integer, not {min_consumed_seq!r}"))
        if self._state != _OPEN:
            return fail(self._unavailable())
        if self.compaction:  # (a table: compaction is its cleanup, never consumption or age)
            return succeed(0)
        return self._roller.collect_garbage(min_consumed_seq)

    # -- compaction (a compacted topic's: compaction.py) -----------------------------------

    def make_compacted(self) -> Deferred:
        """Make this topic a compacted one from now on (a region's copy adopting its
        origin's compaction: hedwig.region.options): the flag written to its record (with
        its ranges, compare-and-set), then taken here. Deferred[bool]: whether it changed.
        Its messages stay as they are (those without a key included: compaction keeps
        them); consumption and retention delete nothing of it from then on."""
        if self.compaction:
            return succeed(False)
        if self._state != _OPEN:
            return fail(self._unavailable())

        def written(_):
            changed = not self.compaction
            self.compaction = True
            return changed

        return self._change_options({"compaction": True}).addCallback(written)

    def set_partitions(self, count: int) -> Deferred:
        """The topic's partition count written to its record (with its ranges,
        compare-and-set), then taken here. Deferred[int]: the count it had."""
        if self._state != _OPEN:
            return fail(self._unavailable())
        before = self.partitions

        def written(_):
            self.partitions = count
            return before

        return self._change_options({"partitions": count}).addCallback(written)

    def _change_options(self, options: dict) -> Deferred:
        """Write `options` to the topic's record (LedgerRoller.change_options); fenced
        meanwhile, the log stops."""

        def failed(failure):
            if failure.check(TopicFenced):
                self._fail(failure.value)
            return failure

        return self._roller.change_options(options).addErrback(failed)

    def compact(self, lag_s: float | None = None, explicit: bool = False) -> Deferred:
        """Rewrite the sealed ledgers whose newest entry is older than `lag_s` (None:
        min_compaction_lag_s) keeping the latest message of each key. `explicit` (a
        COMPACT): the open ledger is rolled first, when it holds anything, so that the
        compaction covers everything published before it (as Pulsar's manual compaction
        does). Deferred[dict]: what was done, or why nothing was; a compaction under way
        is joined. Only a compacted topic's."""
        if not self.compaction:
            return fail(ValueError(f"topic {self.topic} is not a compacted topic"))
        if self._state != _OPEN:
            return fail(self._unavailable())
        if self._compacting is not None and explicit and not self._compacting_explicit:
            # (a background pass under way covers less: this one runs after it)
            return self._compacting.wait().addBoth(lambda _: self.compact(lag_s, explicit))
        if self._compacting is None:
            lag = self._settings.min_compaction_lag_s if lag_s is None else lag_s

            def done(result):
                self._compacting = None
                if isinstance(result, Failure) and result.check(TopicFenced):
                    self._fail(result.value)
                return result

            compacting = SharedResult(self._compact(lag, explicit).addBoth(done))
            if compacting.done:  # (nothing to do: answered at once)
                return compacting.wait()
            self._compacting = compacting
            self._compacting_explicit = explicit
        return self._compacting.wait()

    @inlineCallbacks
    def _compact(self, lag_s: float, explicit: bool):
        if explicit and self._rolling:  # (appends before the COMPACT may wait for it)
            yield self._until_rolled().addErrback(lambda _failure: None)  # (logged by _rolled)
        if explicit and self._state == _OPEN and self.open_ledger.entries:
            rolled = self._until_rolled()  # (first: a roll over synchronous stores ends at once)
            self._start_roll()
            yield rolled
        if self._state != _OPEN:
            raise self._unavailable()
        report = yield self._compactor.compact(lag_s, explicit)
        return report

    # -- description and close -------------------------------------------------------------

    def describe(self) -> dict:
        return {
            "topic": self.topic,
            "state": self._state.value,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "pending_appends": len(self._inflight) + len(self._waiting),
            "metadata_version": self._roller.version,
            "compaction": self.compaction,
            "partitions": self.partitions,
            "ttl_ms": self.ttl_ms,
            "ledgers": self._roller.describe(self.last_seq),
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
        if self._compacting is not None:  # (stopped at its next step, its new ledger dropped)
            self._compactor.stop()
            yield self._compacting.wait().addErrback(lambda _failure: None)
        yield self._until(self._idle_waiters, not (self._inflight or self._waiting or self._rolling))
        try:
            yield self._roller.close(self.open_ledger)
        finally:
            if self._state != _FAILED:
                self._state = _CLOSED
            if self._on_close is not None:
                self._on_close(self)
