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
"""

from bisect import bisect_right
from collections import deque

from twisted.internet.defer import (
    Deferred,
    DeferredList,
    DeferredLock,
    fail,
    inlineCallbacks,
    maybeDeferred,
    succeed,
)
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from hedwig.concurrency import SharedResult
from hedwig.ledger.interface import LedgerClosed, LedgerError, NoSuchLedger
from hedwig.meta.interface import BadVersion, LedgerRange
from hedwig.protocol.entry import ENTRY_HEADER_FIXED_SIZE, ENTRY_VERSION, encode_entry_header
from hedwig.settings import LogSettings
from hedwig.topiclog.entry import LogEntry
from hedwig.topiclog.entry_head import ENTRY_HEAD, entry_head
from hedwig.topiclog.errors import LogClosed, LogCorrupt, LogFailed, SeqOutOfRange, TopicFenced
from hedwig.topiclog.interface import ITopicLog
from hedwig.topiclog.ledger_index import LedgerIndex
from hedwig.topiclog.locator import EntryLocator
from hedwig.topiclog.retention import ledgers_to_delete

_logger = Logger()

_OPEN, _CLOSING, _CLOSED, _FAILED = "open", "closing", "closed", "failed"
_MAX_COUNT = (1 << 32) - 1  # the entry header's u32 message count
_SEQ_LIMIT = 1 << 64
_NO_LIMIT = 1 << 62


class _Append:
    """One append call, from the call until its Deferred fires."""

    __slots__ = (
        "count",
        "deferred",
        "done",
        "entry",
        "failure",
        "message_set",
        "origin",
        "origin_seq",
        "time_us",
        "via",
    )

    def __init__(self, message_set, count, origin, origin_seq, time_us, via=b""):
        self.deferred = Deferred()
        self.message_set = message_set
        self.count = count
        self.origin = origin  # encoded region name
        self.origin_seq = origin_seq
        self.time_us = time_us
        self.via = via  # encoded neighbour region a relayed entry came from (b"" when published here)
        self.entry = None
        self.failure = None
        self.done = False


class _OpenLedger:
    """The ledger appends go to, with the index of every entry handed to the store."""

    __slots__ = ("bytes", "closed", "entries", "first_seq", "index", "ledger_id", "roll_after_us")

    def __init__(self, ledger_id: int, first_seq: int):
        self.ledger_id = ledger_id
        self.first_seq = first_seq
        self.index = LedgerIndex(first_seq)
        self.entries = 0  # len(index), kept as an int for the append path
        self.bytes = 0
        self.closed = False
        # Publish time past which the ledger is too old to take more (its first entry's
        # time + max_ledger_age_s); set when that first entry is handed to the store.
        self.roll_after_us = _NO_LIMIT


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
    ):
        if not ranges or ranges[-1].last_seq is not None:
            raise ValueError("a topic log's ranges end with its open ledger")
        self.topic = topic
        self._ledgers = ledgers
        self._metadata = metadata
        self._settings = settings
        self._region = region.encode("utf-8")
        self._clock = clock
        self._locator = locator if locator is not None else EntryLocator(ledgers, 16 << 20)
        self._on_close = on_close
        self._set_ranges(list(ranges), version)
        # Roll limits, read once: "no limit" (0) becomes a bound never reached.
        self._max_entries = settings.max_ledger_entries if settings.max_ledger_entries > 0 else _NO_LIMIT
        self._max_bytes = settings.max_ledger_bytes if settings.max_ledger_bytes > 0 else _NO_LIMIT
        age_us = settings.max_ledger_age_s * 1_000_000
        self._max_age_us = int(age_us) if 0 < age_us < _NO_LIMIT else _NO_LIMIT  # (NaN: off too)
        opened = ranges[-1]
        self._open = _OpenLedger(opened.ledger_id, opened.first_seq)
        self.last_seq = opened.first_seq - 1
        self._next_seq = opened.first_seq
        self._last_time_us = last_time_us
        self._state = _OPEN
        self._inflight: deque[_Append] = deque()  # handed to the store (or refused), in call order
        self._waiting: deque[_Append] = deque()  # arrived during a roll, not yet handed over
        self._rolling = False
        self._delivering = False
        self._handing = None
        self._drained_waiters: list[Deferred] = []
        self._idle_waiters: list[Deferred] = []
        self._meta_lock = DeferredLock()
        self._ledger_closes: set[Deferred] = set()  # closes started by rolls, not yet done
        self._roll_waiters: list[Deferred] = []  # told how the roll under way ended
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
    ):
        """Append one entry holding `count` messages; Deferred[LogEntry] firing in call
        order once durable. See the module docstring for failures. A region relay passes
        the origin it keeps and `via`, the neighbour region the entry came from."""
        try:
            origin = self._region if origin_region is None else origin_region.encode("utf-8")
            self._check_append(message_set, count, origin, origin_seq)
            via_name = via.encode("utf-8") if via else b""
            if len(via_name) > 255:
                raise ValueError("region names are at most 255 bytes")
        except (TypeError, ValueError, UnicodeError) as e:
            return fail(e)
        op = _Append(message_set, count, origin, origin_seq, self._now_us(), via_name)
        if self._state != _OPEN:
            self._refuse(op, self._unavailable())
        elif self._rolling or self._waiting:
            self._waiting.append(op)
        else:
            self._hand_over(op)
        self._deliver()
        return op.deferred

    @staticmethod
    def _check_append(message_set, count, origin, origin_seq) -> None:
        if type(count) is not int or not 1 <= count <= _MAX_COUNT:
            raise ValueError(f"an entry holds 1..{_MAX_COUNT} messages, not {count!r}")
        if not isinstance(message_set, (bytes, bytearray, memoryview)):
            raise TypeError(f"a message set is bytes-like, not {type(message_set).__name__}")
        if not len(message_set):
            raise ValueError("an empty message set")
        if len(origin) > 255:
            raise ValueError("region names are at most 255 bytes")
        if origin_seq is not None and (type(origin_seq) is not int or not 1 <= origin_seq < _SEQ_LIMIT):
            raise ValueError(f"origin seq-ids are positive 64-bit integers, not {origin_seq!r}")

    def _unavailable(self) -> Exception:
        if self._stopped_by is not None:
            return type(self._stopped_by)(str(self._stopped_by))
        return LogClosed(f"topic {self.topic}: the log is {self._state}")

    def _is_full(self) -> bool:
        ledger = self._open
        return ledger.entries >= self._max_entries or ledger.bytes >= self._max_bytes

    def _hand_over(self, op: _Append) -> None:
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
        if last >= _SEQ_LIMIT:
            self._refuse(op, ValueError(f"topic {self.topic}: seq-ids exhausted"))
            return
        origin_seq = first if op.origin_seq is None else op.origin_seq
        header = encode_entry_header(first, op.count, op.time_us, op.origin, origin_seq, op.via)
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
        if op.failure is not None:  # refused at once: nothing stored, so the seq-ids are free again
            self._next_seq = first
            ledger.index.pop()
            ledger.entries -= 1
            ledger.bytes -= nbytes
            if op.failure.check(LedgerClosed, NoSuchLedger):
                # The ledger was closed or removed under us: another owner recovered it.
                stopped = LogFailed(
                    f"topic {self.topic}: ledger {ledger.ledger_id} is no longer writable "
                    f"({op.failure.value})"
                )
                op.failure = Failure(stopped)
                self._fail(stopped)
        elif self._state == _OPEN and self._is_full():
            self._start_roll()  # now, so a full ledger is closed (and collectable) without waiting

    def _stored(self, _entry_id, op: _Append) -> None:
        if op.done:  # already failed by an earlier append's failure
            return
        op.done = True
        if self._handing is None:
            self._deliver()

    def _store_failed(self, failure: Failure, op: _Append) -> None:
        if op.done:
            return
        op.failure = failure
        op.done = True
        if self._handing is op:
            return  # refused at once; _hand_over takes the seq-ids back
        self._fail(
            LogFailed(
                f"topic {self.topic}: an earlier append failed in the store ({failure.value}); "
                "reopen the topic"
            )
        )
        self._deliver()

    def _refuse(self, op: _Append, exc: Exception) -> None:
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
            while inflight and inflight[0].done:
                op = inflight.popleft()
                if op.failure is None:
                    self.last_seq = op.entry.last_seq
                    op.deferred.callback(op.entry)
                else:
                    op.deferred.errback(op.failure)
        finally:
            self._delivering = False
        if not self._inflight and (self._drained_waiters or self._idle_waiters):
            self._wake(self._drained_waiters)
            self._check_idle()

    def _check_idle(self) -> None:
        if not self._inflight and not self._waiting and not self._rolling:
            self._wake(self._idle_waiters)

    @staticmethod
    def _wake(waiters: list[Deferred]) -> None:
        pending = list(waiters)
        waiters.clear()
        for d in pending:
            d.callback(None)

    def _until(self, waiters: list[Deferred], ready: bool) -> Deferred:
        if ready:
            return succeed(None)
        d = Deferred()
        waiters.append(d)
        return d

    def _fail(self, exc: Exception) -> None:
        """Stop the log: appends not yet stored fail in call order; then close."""
        if self._state in (_FAILED, _CLOSED):
            return
        _logger.error("{error}", error=exc)
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
        ledger = self._open
        if not ledger.closed:
            # The store refuses appends to it at once; its final sync (the whole ledger,
            # under fsync "never": up to max_ledger_bytes) goes on while appends continue
            # in the new ledger. Every acknowledged entry is already as durable as the
            # policy promises, so nothing waits for that sync but close().
            self._track_close(ledger.ledger_id, maybeDeferred(self._ledgers.close_ledger, ledger.ledger_id))
            ledger.closed = True
        new_id = self._ledgers.create()
        first = self._next_seq

        def replace_open(ranges):
            if ranges[-1].ledger_id != ledger.ledger_id:
                raise LogCorrupt(f"topic {self.topic}: the open range is not ledger {ledger.ledger_id}")
            return [
                *ranges[:-1],
                LedgerRange(ledger.ledger_id, ledger.first_seq, first - 1),
                LedgerRange(new_id, first, None),
            ]

        def switch():
            self._locator.keep_index(ledger.ledger_id, ledger.index)
            self._open = _OpenLedger(new_id, first)
            self.rolls += 1

        try:
            yield self._meta_lock.run(self._write_ranges, replace_open, switch)
        except BaseException:
            self._delete_quietly(new_id)
            raise

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
        ledger = self._open
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
        d = Deferred()
        self._roll_waiters.append(d)
        return d

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
        roll_waiters, self._roll_waiters = self._roll_waiters, []
        if isinstance(result, Failure):
            if result.check(TopicFenced):
                self._fail(result.value)
            else:
                _logger.error(
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
        for d in roll_waiters:
            if isinstance(result, Failure):
                d.errback(result)
            else:
                d.callback(None)

    @inlineCallbacks
    def _write_ranges(self, change, then=None):
        """Compare-and-set the topic's ranges to change(current), then call then(): at once,
        before the lock passes to the next writer. Call under the lock."""
        ranges = change(list(self._ranges))
        try:
            version = yield self._metadata.put_topic(self.topic, ranges, self._version)
        except BadVersion:
            raise TopicFenced(
                f"topic {self.topic}: its ledger ranges changed under this hub (another hub acquired it)"
            ) from None
        self._set_ranges(ranges, version)
        if then is not None:
            then()

    def _delete_quietly(self, ledger_id: int):
        d = maybeDeferred(self._ledgers.delete, ledger_id)
        d.addErrback(
            lambda f: _logger.warn(
                "could not delete ledger {ledger_id}: {error}", ledger_id=ledger_id, error=f.value
            )
        )
        return d

    # -- reads -----------------------------------------------------------------------------

    def read(self, from_seq: int, max_entries: int, max_bytes: int) -> Deferred:
        """The entry holding from_seq and those after it, at most max_entries; entries are
        added while their total stays within max_bytes, but the first always is. [] when
        from_seq > last_seq; SeqOutOfRange when from_seq < first_seq."""
        if type(from_seq) is not int or from_seq < 1:
            return fail(ValueError(f"seq-ids start at 1, not {from_seq!r}"))
        if type(max_entries) is not int or max_entries < 1 or type(max_bytes) is not int or max_bytes < 1:
            return fail(ValueError("max_entries and max_bytes must be positive integers"))
        last = self.last_seq
        if from_seq > last:
            return succeed([])
        if from_seq < self._ranges[0].first_seq:
            return fail(SeqOutOfRange(self.topic, from_seq, self._ranges[0].first_seq))
        try:
            return succeed(self._read(from_seq, last, max_entries, max_bytes))
        except Exception:
            return fail()

    def _read(self, from_seq: int, last: int, max_entries: int, max_bytes: int) -> list[LogEntry]:
        ranges = self._ranges
        store = self._ledgers
        locator = self._locator
        unpack = ENTRY_HEAD.unpack_from
        head_size = ENTRY_HEAD.size
        out: list[LogEntry] = []
        total = 0
        seq = from_seq
        i = bisect_right(self._starts, seq) - 1
        open_index = len(ranges) - 1
        while True:
            r = ranges[i]
            ledger_id = r.ledger_id
            if i == open_index:
                index = self._open.index
                entry_id = index.find(seq)
                last_entry = index.find(last)
            else:
                last_entry = store.last_entry_id(ledger_id)
                entry_id = locator.locate(ledger_id, seq, r.first_seq, last_entry)
            want = min(last_entry - entry_id + 1, max_entries - len(out))
            chunk = store.read(ledger_id, entry_id, entry_id + want - 1, max(1, max_bytes - total))
            if not chunk:
                raise LogCorrupt(f"topic {self.topic}: ledger {ledger_id} returned no entry {entry_id}")
            full = False
            for data in chunk:
                if len(data) < head_size:
                    entry_head(data, ledger_id, entry_id)  # raises LogCorrupt
                version, _flags, first, count, time_us = unpack(data)
                if (
                    (first != seq if out else not first <= seq < first + count)
                    or version != ENTRY_VERSION
                    or not count
                ):
                    raise LogCorrupt(
                        f"topic {self.topic}: ledger {ledger_id} entry {entry_id} holds seq-ids "
                        f"{first}..{first + count - 1}, expected {seq}"
                    )
                if out and total + len(data) > max_bytes:
                    full = True
                    break
                out.append(LogEntry(first, first + count - 1, data, time_us))
                total += len(data)
                seq = first + count
                entry_id += 1
            if i != open_index and seq <= r.last_seq:
                locator.note_next(ledger_id, seq, entry_id)
            if full or len(out) >= max_entries or seq > last or total >= max_bytes:
                return out
            if entry_id > last_entry:
                i += 1

    # -- find by time ----------------------------------------------------------------------

    def find_by_time(self, time_us: int) -> int:
        """The first seq-id published at or after time_us (last_seq + 1 when none), by
        binary search over the ledgers' last publish times, then within the ledger."""
        ranges = self._ranges
        store = self._ledgers
        last = self.last_seq
        open_index = len(ranges) - 1
        open_last_entry = self._open.index.find(last)  # -1: nothing acknowledged in it yet
        searchable = len(ranges) if open_last_entry >= 0 else open_index

        def last_entry(i):
            return open_last_entry if i == open_index else store.last_entry_id(ranges[i].ledger_id)

        lo, hi = 0, searchable
        while lo < hi:
            mid = (lo + hi) // 2
            if store.entry_time(ranges[mid].ledger_id, last_entry(mid)) >= time_us:
                hi = mid
            else:
                lo = mid + 1
        if lo == searchable:
            return last + 1
        ledger_id = ranges[lo].ledger_id
        entry_id = store.find_by_time(ledger_id, time_us)
        if entry_id is None or entry_id > last_entry(lo):
            return last + 1
        if lo == open_index:
            return self._open.index.first_seq(entry_id)
        return self._locator.first_seq_of(ledger_id, entry_id)

    # -- garbage collection and retention --------------------------------------------------

    def collect_garbage(self, min_consumed_seq: int) -> Deferred:
        """Delete whole closed ledgers whose last seq-id <= min_consumed_seq, then those that
        retention (age, then total size) drops, oldest first; never the open ledger.
        Deferred[int]: how many ledgers were deleted."""
        if type(min_consumed_seq) is not int or min_consumed_seq < 0:
            return fail(ValueError(f"a consumed seq-id is a non-negative integer, not {min_consumed_seq!r}"))
        if self._state != _OPEN:
            return fail(self._unavailable())
        return self._meta_lock.run(self._collect, min_consumed_seq)

    @inlineCallbacks
    def _collect(self, min_consumed_seq: int):
        ranges = self._ranges
        store = self._ledgers
        doomed = ledgers_to_delete(
            ranges,
            min_consumed_seq,
            self._settings,
            int(self._clock.seconds() * 1_000_000),
            lambda r: store.entry_time(r.ledger_id, store.last_entry_id(r.ledger_id)),
            lambda r: store.ledger_bytes(r.ledger_id),
        )
        if not doomed:
            return 0
        gone = ranges[:doomed]
        try:
            yield self._write_ranges(lambda current: current[doomed:])
        except TopicFenced as e:
            self._fail(e)
            raise
        for r in gone:
            self._locator.forget(r.ledger_id)
            yield self._delete_quietly(r.ledger_id)
        _logger.info(
            "topic {topic}: deleted {count} ledger(s) holding seq-ids {first}..{last}",
            topic=self.topic,
            count=doomed,
            first=gone[0].first_seq,
            last=gone[-1].last_seq,
        )
        return doomed

    # -- description and close -------------------------------------------------------------

    def describe(self) -> dict:
        store = self._ledgers
        ledgers = []
        for r in self._ranges:
            ledgers.append(
                {
                    "ledger_id": r.ledger_id,
                    "first_seq": r.first_seq,
                    "last_seq": self.last_seq if r.last_seq is None else r.last_seq,
                    "bytes": store.ledger_bytes(r.ledger_id),
                }
            )
        return {
            "topic": self.topic,
            "state": self._state,
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
