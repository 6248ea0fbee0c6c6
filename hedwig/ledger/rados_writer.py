"""Group commit to RADOS: the appends of every ledger a store writes, as few writes as
possible, a bounded number in flight, acknowledged in order.

An append waits in its ledger's queue until the end of the reactor's turn (callLater(0)),
so the entries of one read's publishes, or of several topics, leave together: each
ledger's waiting entries go in one write op to its current segment (up to
`max_batch_bytes`), which holds their frames, their index records and the segment's new
tail, guarded by the segment's guard (rados_layout.py: the ledger's epoch, and the count
of the writes before it).
At most `max_in_flight` writes (and `max_in_flight_bytes`) are in flight across the
store; entries arriving meanwhile gather into the next write of their ledger, which
leaves as soon as a write completes. Completions come back on the reactor (rados_client),
possibly out of order across objects; a ledger's entries are acknowledged in entry
order, each once the write holding it and every write before it succeeded.

A ledger whose next write does not fit in its segment rolls to a new one: once every
write in flight to the current segment has completed, the new segment is recorded in
the head (guarded by the epoch), then written, its first write creating it
(exclusively). So a segment named in the head implies every entry before its first is
durable in the segments before it, which is what a fencer's recovery relies on
(rados_fencing.py).

The first write that fails breaks the ledger: it and every later entry fail (fenced:
LedgerFenced; not acknowledged in time: LedgerUnavailable; no space: LedgerStoreFull), and
the ledger takes no more appends. Its entries may have landed or not; the next owner of
its topic fences it and learns where it ends.
"""

import errno
import zlib
from collections import deque

from twisted.internet.defer import Deferred

from hedwig.concurrency.deferreds import Waiters
from hedwig.ledger import rados_layout as layout
from hedwig.ledger.interface import LedgerError, LedgerFenced, LedgerStoreFull, LedgerUnavailable
from hedwig.ledger.rados_client import RadosOpError
from hedwig.ledger.rados_ledger import RadosLedger

_EQ = 1  # LIBRADOS_CMPXATTR_OP_EQ
_EXCLUSIVE = 1  # LIBRADOS_CREATE_EXCLUSIVE


class _Batch:
    """One write in flight: its entries' Deferreds, where the ledger stands after it."""

    __slots__ = (
        "deferreds",
        "done",
        "failure",
        "last_entry",
        "ledger_bytes",
        "last_time_us",
        "size",
        "started",
    )

    def __init__(self, deferreds, last_entry, ledger_bytes, last_time_us, size, started):
        self.deferreds = deferreds
        self.last_entry = last_entry
        self.ledger_bytes = ledger_bytes
        self.last_time_us = last_time_us
        self.size = size
        self.started = started
        self.done = False
        self.failure = None


class WriteStats:
    """What the store's writes did, for /metrics: counts, bytes, latencies (a histogram
    of the time from a write's submission to its acknowledgement)."""

    BUCKETS_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)

    def __init__(self):
        self.writes = 0
        self.entries = 0
        self.bytes = 0
        self.failed = 0
        self.latency_counts = [0] * (len(self.BUCKETS_S) + 1)
        self.latency_sum_s = 0.0

    def record(self, entries: int, size: int, seconds: float) -> None:
        self.writes += 1
        self.entries += entries
        self.bytes += size
        self.latency_sum_s += seconds
        buckets = self.BUCKETS_S
        i = 0
        while i < len(buckets) and seconds > buckets[i]:
            i += 1
        self.latency_counts[i] += 1


def translate(failure_value: BaseException, ledger: RadosLedger, op_timeout_s: float, pool: str) -> Exception:
    """The ledger error a failed write (or roll) means."""
    if not isinstance(failure_value, RadosOpError):
        return LedgerError(f"ledger {ledger.id}: a write failed: {failure_value}")
    code = failure_value.errno
    if code in (errno.ECANCELED, errno.EEXIST):
        return LedgerFenced(f"ledger {ledger.id} was fenced: another hub took its topic over")
    if code == errno.ESHUTDOWN:
        return LedgerFenced(f"ledger {ledger.id}: this hub's RADOS client was blocklisted")
    if code == errno.ETIMEDOUT:
        return LedgerUnavailable(
            f"ledger {ledger.id}: RADOS did not acknowledge a write within {op_timeout_s:g} s (op_timeout_s):"
            f" pool {pool} may have fewer replicas up than its min_size, or the cluster is unreachable"
        )
    if code in (errno.ENOSPC, errno.EDQUOT):
        return LedgerStoreFull(f"ledger {ledger.id}: the RADOS pool {pool} is full")
    return LedgerError(f"ledger {ledger.id}: {failure_value}")


class GroupWriter:
    """The write side of a RadosLedgerStore (see the module docstring)."""

    def __init__(
        self,
        reactor,
        client,
        *,
        segment_bytes: int,
        max_in_flight: int,
        max_batch_bytes: int,
        max_in_flight_bytes: int,
        op_timeout_s: float,
    ):
        self._reactor = reactor
        self._client = client
        self.segment_bytes = segment_bytes
        self.max_in_flight = max_in_flight
        self.max_batch_bytes = max_batch_bytes
        self.max_in_flight_bytes = max_in_flight_bytes
        self._op_timeout_s = op_timeout_s
        self._waiting: deque[RadosLedger] = deque()  # ledgers with entries for a write, in turn
        self._in_flight = 0
        self._in_flight_bytes = 0
        self._flush_call = None
        self._idle: dict[int, Waiters] = {}  # ledger id -> waiting for the ledger to be idle
        self.stats = WriteStats()
        self.high_water = 0  # the most writes in flight at once

    @property
    def in_flight(self) -> int:
        return self._in_flight

    # -- appends --------------------------------------------------------------------------

    def append(self, ledger: RadosLedger, data: bytes, time_us: int) -> Deferred:
        """Queue one entry (checked by the store): a Deferred firing with its entry id."""
        entry_id = ledger.next_entry
        ledger.next_entry = entry_id + 1
        d = Deferred()
        crc = zlib.crc32(data)
        ledger.pending.append(
            (entry_id, layout.FRAME.pack(entry_id, time_us, len(data), crc), data, time_us, crc, d)
        )
        ledger.pending_bytes += layout.FRAME_BYTES + len(data)
        if len(ledger.pending) == 1 and not ledger.rolling:
            self._waiting.append(ledger)
        if self._flush_call is None:
            self._flush_call = self._reactor.callLater(0, self._flush)
        return d

    def _flush(self) -> None:
        """Send a write for each waiting ledger, in turn, while the limits allow."""
        self._flush_call = None
        waiting = self._waiting
        while (
            waiting
            and self._in_flight < self.max_in_flight
            and self._in_flight_bytes < self.max_in_flight_bytes
        ):
            ledger = waiting.popleft()
            if not ledger.pending or ledger.rolling or ledger.broken is not None:
                continue
            self._send(ledger)
            if ledger.pending and not ledger.rolling:
                waiting.append(ledger)  # more than one write holds: its turn comes again

    def _send(self, ledger: RadosLedger) -> None:
        """One write of the ledger's waiting entries that fit in its segment (or a roll)."""
        pending = ledger.pending
        offset = ledger.segment_offset
        room = self.segment_bytes - offset
        limit = min(room, self.max_batch_bytes)
        parts, keys, values, deferreds = [], [], [], []
        size = 0
        position = offset
        ledger_bytes, last_time_us = ledger.next_bytes, ledger.next_time_us
        first_entry = pending[0][0]
        entry_id = first_entry - 1
        while pending:
            frame_size = layout.FRAME_BYTES + len(pending[0][2])
            if size + frame_size > limit and (deferreds or frame_size > room):
                break
            entry_id, frame, data, time_us, crc, d = pending.popleft()
            parts.append(frame)
            parts.append(data)
            keys.append(layout.entry_key(entry_id))
            values.append(layout.INDEX.pack(position, len(data), time_us, crc))
            deferreds.append(d)
            size += frame_size
            position += frame_size
            ledger_bytes += len(data)
            last_time_us = time_us
        if not deferreds:  # the next entry does not fit in what is left of the segment
            self._roll(ledger)
            return
        ledger.pending_bytes -= size
        keys.append(layout.TAIL)
        values.append(layout.tail_value(entry_id + 1, ledger_bytes, last_time_us).encode("ascii"))
        data = b"".join(parts)
        if ledger.segment_exists:  # the guard: this ledger's epoch, and every write before landed
            method, guard = "inc_conds", layout.guard_next(ledger.segment_writes, ledger.epoch)
        else:  # the segment's first write creates it, exclusively (a fencer may have)
            method, guard = "set", layout.guard_set(1, ledger.epoch)
        create = not ledger.segment_exists

        def build(op, ioctx):
            if create:
                op.new(_EXCLUSIVE)
            op.execute(layout.GUARD_CLASS, method, guard)
            op.write(data, offset)
            ioctx.set_omap(op, tuple(keys), tuple(values))

        batch = _Batch(deferreds, entry_id, ledger_bytes, last_time_us, size, self._reactor.seconds())
        ledger.inflight.append(batch)
        ledger.next_bytes, ledger.next_time_us = ledger_bytes, last_time_us
        ledger.segment_offset = position
        ledger.segment_writes = ledger.segment_writes + 1 if ledger.segment_exists else 1
        ledger.segment_exists = True
        self._in_flight += 1
        self._in_flight_bytes += size
        if self._in_flight > self.high_water:
            self.high_water = self._in_flight
        name = layout.segment_name(ledger.id, ledger.segment)
        try:
            d = self._client.write(name, build, f"writing entries {first_entry}..{entry_id} to {name}")
        except Exception as e:  # (refused by librados at submission)
            d = Deferred()
            d.errback(e)
        d.addBoth(self._written, ledger, batch)

    def _written(self, outcome, ledger: RadosLedger, batch: _Batch) -> None:
        self._in_flight -= 1
        self._in_flight_bytes -= batch.size
        batch.done = True
        if outcome is not None:  # a Failure
            batch.failure = outcome.value
            self.stats.failed += 1
        else:
            self.stats.record(len(batch.deferreds), batch.size, self._reactor.seconds() - batch.started)
        self._acknowledge(ledger)
        if self._waiting and self._flush_call is None:
            self._flush()

    def _acknowledge(self, ledger: RadosLedger) -> None:
        """Fire what completed at the head of the ledger's writes, in order."""
        inflight = ledger.inflight
        while inflight and inflight[0].done:
            batch = inflight.popleft()
            if batch.failure is not None and ledger.broken is None:
                self._break(ledger, translate(batch.failure, ledger, self._op_timeout_s, self._client.pool))
            if ledger.broken is not None:
                for d in batch.deferreds:
                    d.errback(ledger.broken)
                continue
            first = batch.last_entry - len(batch.deferreds) + 1
            ledger.count = batch.last_entry + 1
            ledger.bytes = batch.ledger_bytes
            ledger.last_time_us = batch.last_time_us
            for entry_id, d in enumerate(batch.deferreds, first):
                d.callback(entry_id)
        if ledger.rolling and not inflight and ledger.broken is None:
            self._record_segment(ledger)
        self._check_idle(ledger)

    # -- rolls ----------------------------------------------------------------------------

    def _roll(self, ledger: RadosLedger) -> None:
        """Once the current segment's writes completed, record a new segment in the head."""
        ledger.rolling = True
        if not ledger.inflight:
            self._record_segment(ledger)

    def _record_segment(self, ledger: RadosLedger) -> None:
        first_entry = ledger.pending[0][0] if ledger.pending else ledger.next_entry
        segments = [*ledger.segments, (first_entry, ledger.next_bytes)]
        epoch = layout.number(ledger.epoch)

        def build(op, ioctx):
            op.omap_cmp(layout.EPOCH, epoch, _EQ)
            ioctx.set_omap(op, (layout.SEGMENTS,), (layout.encode_segments(segments),))

        name = layout.head_name(ledger.id)
        d = self._client.write(name, build, f"recording segment {len(segments) - 1} in {name}")

        def recorded(_):
            ledger.segments = segments
            ledger.segment_offset = 0
            ledger.segment_exists = False
            ledger.segment_writes = 0
            ledger.rolling = False
            if ledger.pending and ledger.broken is None:
                self._waiting.append(ledger)
                self._flush()
            self._check_idle(ledger)

        def failed(failure):
            ledger.rolling = False
            self._break(ledger, translate(failure.value, ledger, self._op_timeout_s, self._client.pool))
            self._check_idle(ledger)

        d.addCallbacks(recorded, failed)

    # -- failures, draining ---------------------------------------------------------------

    def _break(self, ledger: RadosLedger, error: Exception) -> None:
        """The ledger takes no more appends; those waiting fail with `error`."""
        if ledger.broken is None:
            ledger.broken = error
        ledger.writable = False
        while ledger.pending:
            d = ledger.pending.popleft()[5]
            d.errback(ledger.broken)
        ledger.pending_bytes = 0

    def refuse_waiting(self, ledger: RadosLedger, error: Exception) -> None:
        """Fail the ledger's entries not yet sent (it is being closed or deleted)."""
        self._break(ledger, error)
        self._check_idle(ledger)

    def idle(self, ledger: RadosLedger) -> Deferred:
        """A Deferred firing once the ledger has nothing waiting, in flight or rolling."""
        waiters = self._idle.setdefault(ledger.id, Waiters())
        d = waiters.wait()
        self._check_idle(ledger)
        return d

    def _check_idle(self, ledger: RadosLedger) -> None:
        if ledger.idle:
            waiters = self._idle.pop(ledger.id, None)
            if waiters:
                waiters.fire()

    def flush_now(self) -> None:
        """Send what waits now (the store is closing)."""
        if self._flush_call is not None and self._flush_call.active():
            self._flush_call.cancel()
        self._flush()
