"""An in-memory ledger store: real ledger semantics, no durability.

It keeps every entry in process memory and forgets everything when the process ends.
It serves as the ledger store of tests that need ledgers without files, and as a store
that fails on command: a byte capacity (LedgerStoreFull once exceeded, space returns on
delete), scripted append failures (refused before storing, or after storing as a failed
sync would), held acknowledgements (appends stored but unacknowledged until released,
as under a slow fsync) and a held read (done when released, as a remote read in flight).
"""

from bisect import bisect_left
from collections import deque

from twisted.internet.defer import Deferred, fail, succeed
from zope.interface import implementer

from hedwig.ledger.interface import ILedgerStore, LedgerClosed, LedgerError, LedgerStoreFull, NoSuchLedger


def _chunks(data):
    return data if isinstance(data, (list, tuple)) else ()


class _Ledger:
    __slots__ = ("closed", "entries", "nbytes", "times")

    def __init__(self):
        self.entries: list[bytes] = []
        self.times: list[int] = []
        self.nbytes = 0
        self.closed = False


@implementer(ILedgerStore)
class MemoryLedgerStore:
    fsync_policy = "never"

    def __init__(self, *, capacity_bytes: int | None = None):
        self.capacity_bytes = capacity_bytes
        self.used_bytes = 0
        self._ledgers: dict[int, _Ledger] = {}
        self._next_id = 1
        self._failures: deque[tuple[Exception, bool]] = deque()
        self._holding = False
        self._held: deque[tuple[Deferred, int]] = deque()
        self._after_release: list[Deferred] = []
        self._holding_closes = False
        self._held_closes: list[Deferred] = []
        self._holding_read = False
        self._held_reads: list[tuple[Deferred, tuple]] = []
        self._closed = False
        self.appends = 0

    # -- failure injection ---------------------------------------------------------------

    def fail_appends(self, exception: Exception, count: int = 1, *, after_storing: bool = False) -> None:
        """The next `count` appends fail with `exception`: refused at once with nothing
        stored, or (after_storing) stored and then failed as a failed sync would be: their
        Deferreds wait with the held acknowledgements and fail at release_acks()."""
        self._failures.extend([(exception, after_storing)] * count)

    def hold_acks(self) -> None:
        """Appends are stored (and readable) but their Deferreds wait for release_acks()."""
        self._holding = True

    def hold_no_more(self) -> None:
        """Appends from now on are acknowledged at once; those held wait for release_acks()."""
        self._holding = False

    def release_acks(self, count: int | None = None, *, keep_holding: bool = False) -> int:
        """Acknowledge the oldest `count` held appends (all by default), in order."""
        released = 0
        while self._held and (count is None or released < count):
            d, outcome = self._held.popleft()
            released += 1
            if isinstance(outcome, Exception):
                d.errback(outcome)
            else:
                d.callback(outcome)
        if not keep_holding and count is None:
            self._holding = False
        if not self._held:
            waiting, self._after_release = self._after_release, []
            for d in waiting:
                d.callback(None)
        return released

    def hold_closes(self) -> None:
        """close_ledger refuses appends at once but its Deferred waits for release_closes()
        (as a store's final sync of a large ledger takes a while)."""
        self._holding_closes = True

    def release_closes(self) -> int:
        self._holding_closes = False
        waiting, self._held_closes = self._held_closes, []
        for d in waiting:
            d.callback(None)
        return len(waiting)

    def hold_next_read(self) -> None:
        """The next read waits for release_reads() and is done then (as a remote store's
        read is in flight meanwhile): what the ledger holds then, or NoSuchLedger."""
        self._holding_read = True

    def release_reads(self) -> int:
        self._holding_read = False
        waiting, self._held_reads = self._held_reads, []
        for d, arguments in waiting:
            self.read(*arguments).chainDeferred(d)
        return len(waiting)

    @property
    def held(self) -> int:
        return len(self._held)

    # -- ILedgerStore ----------------------------------------------------------------------

    def _check_open(self) -> None:
        """Every call of the store fails alike once it is closed."""
        if self._closed:
            raise LedgerError("the ledger store is closed")

    def _ledger(self, ledger_id) -> _Ledger:
        self._check_open()
        try:
            return self._ledgers[ledger_id]
        except KeyError:
            raise NoSuchLedger(f"ledger {ledger_id} does not exist") from None

    def create(self):
        try:
            self._check_open()
        except LedgerError as e:
            return fail(e)
        ledger_id = self._next_id
        self._next_id += 1
        self._ledgers[ledger_id] = _Ledger()
        return succeed(ledger_id)

    def load(self, ledger_id):
        try:
            self._ledger(ledger_id)
        except LedgerError as e:
            return fail(e)
        return succeed(None)

    def location(self, ledger_id) -> str:
        self._ledger(ledger_id)
        return f"memory (ledger {ledger_id})"

    def append(self, ledger_id, data, publish_time_us):
        try:
            ledger = self._ledger(ledger_id)
        except LedgerError as e:
            return fail(e)
        if ledger.closed:
            return fail(LedgerClosed(f"ledger {ledger_id} is closed"))
        try:
            if type(publish_time_us) is not int or not 0 <= publish_time_us < 1 << 64:
                raise ValueError(f"publish time {publish_time_us!r}")
            if isinstance(data, str) or any(isinstance(chunk, str) for chunk in _chunks(data)):
                raise TypeError("entries are bytes, not text")
            entry = b"".join(data) if isinstance(data, (list, tuple)) else bytes(data)
        except (TypeError, ValueError) as e:
            return fail(LedgerError(f"ledger {ledger_id}: bad entry or publish time: {e}"))
        failure, after_storing = self._failures.popleft() if self._failures else (None, False)
        if failure is not None and not after_storing:
            return fail(failure)
        if self.capacity_bytes is not None and self.used_bytes + len(entry) > self.capacity_bytes:
            return fail(
                LedgerStoreFull(
                    f"ledger {ledger_id}: {len(entry)} bytes do not fit "
                    f"({self.used_bytes} of {self.capacity_bytes} used)"
                )
            )
        entry_id = len(ledger.entries)
        ledger.entries.append(entry)
        ledger.times.append(publish_time_us)
        ledger.nbytes += len(entry)
        self.used_bytes += len(entry)
        self.appends += 1
        if failure is not None or self._holding:
            d = Deferred()
            self._held.append((d, failure if failure is not None else entry_id))
            return d
        return succeed(entry_id)

    def read(self, ledger_id, first_entry, last_entry, max_bytes=None):
        if self._holding_read:
            self._holding_read = False
            d = Deferred()
            self._held_reads.append((d, (ledger_id, first_entry, last_entry, max_bytes)))
            return d
        try:
            ledger = self._ledger(ledger_id)
        except LedgerError as e:
            return fail(e)
        if not 0 <= first_entry <= last_entry < len(ledger.entries):
            return fail(
                LedgerError(
                    f"ledger {ledger_id}: entries {first_entry}..{last_entry} "
                    f"outside 0..{len(ledger.entries) - 1}"
                )
            )
        out = []
        total = 0
        for entry in ledger.entries[first_entry : last_entry + 1]:
            out.append(entry)
            total += len(entry)
            if max_bytes is not None and total >= max_bytes:
                break
        return succeed(out)

    def last_entry_id(self, ledger_id) -> int:
        return len(self._ledger(ledger_id).entries) - 1

    def entry_time(self, ledger_id, entry_id):
        try:
            ledger = self._ledger(ledger_id)
        except LedgerError as e:
            return fail(e)
        if not 0 <= entry_id < len(ledger.times):
            return fail(LedgerError(f"ledger {ledger_id} has no entry {entry_id}"))
        return succeed(ledger.times[entry_id])

    def find_by_time(self, ledger_id, time_us):
        try:
            times = self._ledger(ledger_id).times
        except LedgerError as e:
            return fail(e)
        i = bisect_left(times, time_us)
        return succeed(i if i < len(times) else None)

    def ledger_bytes(self, ledger_id) -> int:
        return self._ledger(ledger_id).nbytes

    def is_closed(self, ledger_id) -> bool:
        return self._ledger(ledger_id).closed

    def close_ledger(self, ledger_id):
        try:
            self._ledger(ledger_id).closed = True
        except LedgerError as e:
            return fail(e)
        if self._held or self._holding_closes:  # durable once the appends before it are
            d = Deferred()
            (self._held_closes if self._holding_closes else self._after_release).append(d)
            return d
        return succeed(None)

    def fence(self, ledger_id):
        """This store is its ledgers' only writer: fencing one closes it."""
        return self.close_ledger(ledger_id)

    def delete(self, ledger_id):
        try:
            ledger = self._ledger(ledger_id)
        except LedgerError as e:
            return fail(e)
        del self._ledgers[ledger_id]
        self.used_bytes -= ledger.nbytes
        return succeed(None)

    def list_ledgers(self) -> list[int]:
        self._check_open()
        return sorted(self._ledgers)

    def close(self):
        self._closed = True
        return succeed(None)
