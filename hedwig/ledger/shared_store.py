"""The ledger store of a region of several hubs: every hub's ledgers under one storage
root (a local directory on one machine; a network filesystem mounted at the same path
on several), each ledger written by one hub at a time.

It is the embedded store (mmap_store.MmapLedgerStore: the same files, the same append
path) with what sharing needs:

- ledger ids are reserved in blocks under an exclusive lock of the root
  (`next-ledger-id.lock`), so no two hubs hand out the same id;
- nothing is loaded or recovered at start: a ledger is loaded when this hub first uses it
  (its topic was acquired here, or a reader asks), from its `closed` record when it has
  one, else as its header says; a ledger another hub is writing is never made writable
  here;
- `fence` takes a topic's open ledger over from its previous owner (fencing.py): fenced
  on the shared storage, recovered to its last whole entry, closed at that count for
  every hub;
- every append checks, after storing, that its ledger was not fenced (the header's state
  word through the writer's mapping: no system call); a fenced one fails the append
  (LedgerFenced) and takes no more. Under `fsync = always` each group commit round also
  checks the ledgers' fence files after its fsyncs (the guarantee across machines);
- `forget` drops a ledger from memory (the topic moved to another hub), leaving its files.

`list_ledgers` and the store's counts cover the ledgers loaded here, not the region's.
"""

import fcntl
import os

from twisted.internet.defer import fail
from twisted.logger import Logger
from twisted.python.failure import Failure

from hedwig.concurrency.deferreds import in_thread
from hedwig.ledger.fencing import ClosedLedger, fence_and_recover, is_fenced, read_closed
from hedwig.ledger.interface import LedgerError, LedgerFenced, NoSuchLedger
from hedwig.ledger.layout import (
    HEADER_BYTES,
    HEADER_FILE,
    NEXT_ID_FILE,
    NEXT_ID_LOCK_FILE,
    STATE,
    STATE_CLOSED,
    STATE_FENCED,
    STATE_OFFSET,
    HeaderError,
    HeaderFields,
    ledger_dir_name,
    parse_ledger_dir_name,
)
from hedwig.ledger.mmap_ledger import ID_RESERVATION, Ledger
from hedwig.ledger.mmap_store import MmapLedgerStore
from hedwig.ledger.pagefiles import replace_durably, storage_error

_STATE = STATE.unpack_from


class SharedLedgerStore(MmapLedgerStore):
    """MmapLedgerStore on storage shared by the hubs of a region. `writer`: this hub's
    name, recorded in the fence and closed records of the ledgers it takes over."""

    log = Logger()

    def __init__(self, data_dir, *, reactor, writer: str = "", **options):
        self.writer = writer
        self._fenced_here = set()  # ledgers this store wrote and found fenced
        super().__init__(data_dir, reactor=reactor, **options)

    @classmethod
    def from_settings(cls, data_dir, settings, reactor, writer: str = "") -> "SharedLedgerStore":
        store = super().from_settings(data_dir, settings, reactor)
        store.writer = writer
        return store

    # -- start: nothing loaded -------------------------------------------------------------

    def _open_existing(self) -> int:
        """Other hubs may be creating, writing or deleting ledgers here right now: load
        nothing and recover nothing (ids come from the shared reservation)."""
        return 0

    def _take_id(self) -> int:
        """The next ledger id: blocks are reserved under an exclusive lock of the root,
        the block's end written (and synced) to the shared id file."""
        if self._next_id >= self._reserved_until:
            try:
                start = self._reserve_block()
            except OSError as e:
                raise storage_error(e, "creating a ledger: reserving ids") from None
            self._next_id, self._reserved_until = start, start + ID_RESERVATION
        ledger_id = self._next_id
        self._next_id += 1
        return ledger_id

    def _reserve_block(self) -> int:
        lock = os.open(os.path.join(self._dir, NEXT_ID_LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                with open(os.path.join(self._dir, NEXT_ID_FILE)) as f:
                    start = int(f.read().strip() or 1)
            except FileNotFoundError:  # a root not reserved from before: after what is there
                ids = [parse_ledger_dir_name(n.partition(".")[0]) for n in os.listdir(self._dir)]
                start = max([i for i in ids if i is not None], default=0) + 1
            replace_durably(os.path.join(self._dir, NEXT_ID_FILE), f"{start + ID_RESERVATION}\n")
            return start
        finally:
            os.close(lock)  # (releases the lock)

    # -- ledgers loaded when first used ----------------------------------------------------

    def _ledger(self, ledger_id) -> Ledger:
        self._check_open()
        ledger = self._ledgers.get(ledger_id)
        if ledger is None:
            ledger = self._load_shared(ledger_id)
        return ledger

    def _load_shared(self, ledger_id) -> Ledger:
        """A ledger of the shared root, read-only here: closed at its `closed` record's
        count (or its header's, closed by its writer), else open elsewhere: its entries
        as the header counts them now."""
        if type(ledger_id) is not int or ledger_id < 0:
            raise NoSuchLedger(f"ledger {ledger_id!r} does not exist")
        path = os.path.join(self._dir, ledger_dir_name(ledger_id))
        try:
            with open(os.path.join(path, HEADER_FILE), "rb") as f:
                header = HeaderFields(f.read(HEADER_BYTES))
        except FileNotFoundError:
            raise NoSuchLedger(f"ledger {ledger_id} does not exist") from None
        except (OSError, HeaderError) as e:
            self.log.critical(
                "ledger {ledger_id} in {path} cannot be opened: {error}",
                ledger_id=ledger_id,
                path=path,
                error=e,
            )
            raise NoSuchLedger(f"ledger {ledger_id} cannot be opened: {e}") from None
        closed = read_closed(path)
        if closed is not None:
            ledger = self._closed_ledger(ledger_id, path, header, closed)
        else:
            count = header.committed_count
            ledger = Ledger(
                ledger_id,
                path,
                header.page_bytes,
                header.index_page_records,
                count,
                header.committed_bytes,
                min(header.durable_count, count),
                header.state == STATE_CLOSED,
            )
        self._ledgers[ledger_id] = ledger
        return ledger

    @staticmethod
    def _closed_ledger(ledger_id, path, header, closed: ClosedLedger) -> Ledger:
        return Ledger(
            ledger_id,
            path,
            header.page_bytes,
            header.index_page_records,
            closed.count,
            closed.data_bytes,
            closed.count,
            True,
        )

    def delete(self, ledger_id):
        """As MmapLedgerStore.delete; a ledger another hub deleted meanwhile is gone
        already (NoSuchLedger)."""
        if not os.path.isdir(os.path.join(self._dir, ledger_dir_name(ledger_id))):
            self._ledgers.pop(ledger_id, None)
            return fail(NoSuchLedger(f"ledger {ledger_id} does not exist"))
        return super().delete(ledger_id)

    def forget(self, ledger_id) -> None:
        """Drop a ledger this hub no longer uses from memory (its topic went to another
        hub): its mappings go, its files stay. A writable ledger is not forgotten."""
        ledger = self._ledgers.get(ledger_id)
        if ledger is None or ledger_id in self._writable:
            return
        del self._ledgers[ledger_id]
        self._dirty.discard(ledger)
        self._pages.release(ledger)
        self._headers.discard(ledger)
        self._fenced_here.discard(ledger_id)

    # -- appends: nothing acknowledged in a fenced ledger -----------------------------------

    def append(self, ledger_id, data, publish_time_us):
        appended = MmapLedgerStore.append(self, ledger_id, data, publish_time_us)
        ledger = self._writable.get(ledger_id)
        if (
            ledger is None
            or ledger.header_mm is None
            or (appended.called and isinstance(appended.result, Failure))
        ):
            return appended  # refused, nothing stored (its failure says why)
        # After the store: the fence word, through this writer's mapping (fencing.py).
        if _STATE(ledger.header_mm, STATE_OFFSET)[0] == STATE_FENCED:
            appended.addErrback(lambda _f: None)
            return fail(self._fenced(ledger))
        if self._always:
            appended.addCallback(self._unless_fenced, ledger_id)
        return appended

    def append_now(self, ledger_id, data, publish_time_us):
        # Through append: the fence word is read after every store.
        return self.append(ledger_id, data, publish_time_us)

    def _fenced(self, ledger: Ledger) -> LedgerFenced:
        """This writer's ledger was fenced by another hub: it takes no more appends."""
        if ledger.id not in self._fenced_here:
            self._fenced_here.add(ledger.id)
            self._writable.pop(ledger.id, None)
            self.log.warn(
                "ledger {ledger_id} was fenced by another hub taking its topic over: nothing more"
                " is acknowledged in it here",
                ledger_id=ledger.id,
            )
        return LedgerFenced(f"ledger {ledger.id} was fenced: another hub took its topic over")

    def _unless_fenced(self, entry_id, ledger_id):
        if ledger_id in self._fenced_here:
            raise LedgerFenced(f"ledger {ledger_id} was fenced: another hub took its topic over")
        return entry_id

    def _before_ack(self, marks) -> None:
        """Under fsync = always, after a round's fsyncs and before its acknowledgements:
        the fence file of every ledger it covered (the check that holds across machines)."""
        for ledger, _count in marks:
            if ledger.id not in self._fenced_here and ledger.id in self._writable and is_fenced(ledger.path):
                self._fenced(ledger)

    # -- fencing and closing ---------------------------------------------------------------

    def fence(self, ledger_id):
        """Take the ledger over (fencing.fence_and_recover) and hold it closed here at the
        count recovered; a ledger this store is writing is simply closed."""
        if ledger_id in self._writable:
            return self.close_ledger(ledger_id)
        try:
            self._check_open()
        except LedgerError as e:
            return fail(e)
        path = os.path.join(self._dir, ledger_dir_name(ledger_id))

        def work():
            if not os.path.isdir(path):
                raise NoSuchLedger(f"ledger {ledger_id} does not exist")
            closed = fence_and_recover(path, self.writer)
            with open(os.path.join(path, HEADER_FILE), "rb") as f:
                return closed, HeaderFields(f.read(HEADER_BYTES))

        def recovered(result):
            closed, header = result
            self.forget(ledger_id)
            self._fenced_here.discard(ledger_id)
            self._ledgers[ledger_id] = self._closed_ledger(ledger_id, path, header, closed)
            if closed.problem is not None:
                self.log.warn(
                    "ledger {ledger_id}: {problem}; recovered to {count} entries",
                    ledger_id=ledger_id,
                    problem=closed.problem,
                    count=closed.count,
                )
            return None

        def failed(failure):
            if failure.check(OSError):
                raise storage_error(failure.value, f"fencing ledger {ledger_id}")
            return failure

        return self._jobs.track(in_thread(self._reactor, work).addCallbacks(recovered, failed))

    def _finish_close(self, ledger: Ledger):
        """A ledger this store wrote and found fenced is not cut or marked closed (its end
        is the fencer's `closed` record, which may stop short of what was stored here):
        forgotten, so that a later use loads it as closed."""
        if ledger.id in self._fenced_here or (
            ledger.header_mm is not None and _STATE(ledger.header_mm, STATE_OFFSET)[0] == STATE_FENCED
        ):
            if ledger.data_stream is not None:
                ledger.data_stream.stop()
                ledger.index_stream.stop()
            self._fenced_here.discard(ledger.id)
            self.forget(ledger.id)
            return None
        return super()._finish_close(ledger)
