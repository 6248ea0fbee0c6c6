"""The embedded ledger store: ledgers in fixed-size page files, mapped on demand.

Each ledger is a directory of page files (see `layout`): data pages holding entries back
to back, index pages holding one record per entry, and a small header holding the
committed count. An append copies the entry into a mapped data page, writes its index
record, then advances the committed count: three stores into the page cache, no system
call, so an acknowledged entry survives a crash of the process (SIGKILL) whatever the
fsync policy. (Recovery does not rely on the count alone: a kernel may lose stores made
through a mapping, the header's among them; see `recovery`.) What survives a crash of
the machine depends on the policy:

- never: nothing is forced to disk (closing a ledger or the store still is);
- interval: a sync every `fsync_interval_ms`, off the reactor thread;
- always: group commit: an append is acknowledged after an fsync that covers it, one
  fsync serving every append made while the previous one ran.

At most `max_mapped_pages` data and index pages are mapped at any time, least recently
used unmapped first, so a log much larger than memory is read with bounded address space
and RSS. The 4 KiB headers of writable ledgers are mapped on top of that, at most
`max_open_ledgers` of them (open_headers.py): a mapping holds a descriptor, and idle
topics must not hold one each. Reads return copies, never views: a page may be unmapped
by the next lookup.

Space is allocated for real (posix_fallocate) before anything is stored into it, mostly
by a preparer thread running ahead of the writer, so a full disk fails an append with
LedgerStoreFull instead of killing the process with SIGBUS, and appends go on once space
returns.
"""

import os
import shutil
import struct
import zlib

from twisted.internet.defer import Deferred, fail, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from hedwig.concurrency.deferreds import in_thread
from hedwig.config.settings import MIB
from hedwig.ledger.interface import ILedgerStore, LedgerClosed, LedgerError, NoSuchLedger
from hedwig.ledger.layout import (
    BOOT,
    BOOT_OFFSET,
    COUNTS,
    COUNTS_OFFSET,
    HEADER_FILE,
    MAX_PAGE_BYTES,
    NEXT_ID_FILE,
    RECORD,
    RECORD_BYTES,
    RECORD_SALT,
    current_boot_id,
    encode_header,
    ledger_dir_name,
)
from hedwig.ledger.mmap_ledger import (
    FSYNC_POLICIES,
    GROWTH,
    ID_RESERVATION,
    MAX_DATA_LOOKAHEAD,
    MAX_INDEX_LOOKAHEAD,
    MIN_LOOKAHEAD,
    MIN_PAGE_BYTES,
    Ledger,
    cut_closed_ledger,
    now_us,
)
from hedwig.ledger.mmap_mapping import LedgerPages, ThreadJobs
from hedwig.ledger.mmap_opening import open_existing, writer_streams
from hedwig.ledger.mmap_reading import LedgerReader
from hedwig.ledger.mmap_syncing import LedgerSyncer
from hedwig.ledger.open_headers import OpenHeaders
from hedwig.ledger.pagefiles import RESERVED, replace_durably, storage_error, sync_paths


@implementer(ILedgerStore)
class MmapLedgerStore:
    """Ledgers in memory-mapped page files under `data_dir` (see the module docstring).

    `reactor` provides IReactorTime (the interval timer) and IReactorThreads (fsyncs, page
    preparation and deletion run in its thread pool; results come back on its thread).
    The store owns its collaborators: `LedgerPages` (the mapped-page budget and the
    preparer), `OpenHeaders` (writable ledgers' headers), `LedgerSyncer` (the fsync policy:
    interval timer, group commit) and `LedgerReader` (entries and times read back); the
    append path is its own, inline, since it runs per published entry.
    """

    log = Logger()

    def __init__(
        self,
        data_dir,
        *,
        reactor,
        page_bytes: int = 64 * MIB,
        index_page_records: int = 1 << 20,
        max_mapped_pages: int = 64,
        max_open_ledgers: int = 256,
        fsync: str = "never",
        fsync_interval_ms: int = 1000,
    ):
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync must be one of {', '.join(FSYNC_POLICIES)}, not {fsync!r}")
        if not MIN_PAGE_BYTES <= page_bytes <= MAX_PAGE_BYTES:
            raise ValueError(
                f"page_bytes must be within {MIN_PAGE_BYTES}..{MAX_PAGE_BYTES}, not {page_bytes}"
            )
        if index_page_records < 1 or index_page_records * RECORD_BYTES > MAX_PAGE_BYTES:
            raise ValueError(f"index_page_records out of range: {index_page_records}")
        if fsync_interval_ms <= 0:
            raise ValueError(f"fsync_interval_ms must be positive, not {fsync_interval_ms}")
        self.fsync_policy = fsync
        self.page_bytes = page_bytes
        self.index_page_records = index_page_records
        self._always = fsync == "always"
        self._reactor = reactor
        self._dir = os.path.abspath(os.fspath(data_dir))
        self._ledgers: dict[int, Ledger] = {}
        self._writable: dict[int, Ledger] = {}
        self._jobs = ThreadJobs()  # thread work still running (waited for by close)
        self._pages = LedgerPages(reactor, self._ledgers, self._writable, self._jobs, max_mapped_pages)
        self._headers = OpenHeaders(max_open_ledgers)
        self._reader = LedgerReader(self._ledger, self._pages)
        RESERVED.hold()  # a descriptor for syncs and closes once the process runs out
        self._closed = False
        try:
            os.makedirs(self._dir, exist_ok=True)
        except OSError as e:
            raise storage_error(e, f"creating the ledger directory {self._dir}") from None
        self._syncer = LedgerSyncer(
            reactor,
            self._dir,
            policy=fsync,
            interval_ms=fsync_interval_ms,
            before_ack=self._before_ack,
            on_failure=self._sync_failed,
        )
        self._dirty = self._syncer.dirty  # (the append path adds to it directly)
        self._next_id = self._open_existing()
        self._reserved_until = self._next_id

    @classmethod
    def from_settings(cls, data_dir, settings, reactor) -> "MmapLedgerStore":
        """A store configured by a `hedwig.config.settings.LedgerSettings`."""
        return cls(
            data_dir,
            reactor=reactor,
            page_bytes=settings.page_bytes,
            index_page_records=settings.index_page_records,
            max_mapped_pages=settings.max_mapped_pages,
            max_open_ledgers=settings.max_open_ledgers,
            fsync=settings.fsync,
            fsync_interval_ms=settings.fsync_interval_ms,
        )

    # -- observation (tests, metrics) ---------------------------------------------------

    @property
    def mapped_pages(self) -> int:
        """Data and index pages mapped right now (never above max_mapped_pages)."""
        return len(self._pages)

    @property
    def mapped_headers(self) -> int:
        """Headers of writable ledgers mapped right now (never above max_open_ledgers)."""
        return len(self._headers)

    @property
    def mapped_pages_high_water(self) -> int:
        return self._pages.high_water

    @property
    def syncs(self) -> int:
        """Syncs (group commits) completed."""
        return self._syncer.syncs

    def ledger_path(self, ledger_id: int) -> str:
        return self._ledger(ledger_id).path

    def location(self, ledger_id) -> str:
        return self._ledger(ledger_id).path

    # -- opening: recovery ----------------------------------------------------------------

    def _open_existing(self) -> int:
        """Load every ledger under the data directory (recovering open ones); the next
        ledger id."""
        found, next_id = open_existing(self._dir, self.log, self._make_writable)
        self._ledgers.update(found)
        return next_id

    def _make_writable(self, ledger: Ledger, end_page: int, end_offset: int) -> None:
        writer_streams(ledger, end_page, end_offset, self.fsync_policy != "never")
        header_map = self._headers.map(ledger)
        BOOT.pack_into(header_map, BOOT_OFFSET, current_boot_id())
        self._writable[ledger.id] = ledger

    # -- ILedgerStore: create ---------------------------------------------------------------

    def create(self):
        try:
            return succeed(self._create())
        except LedgerError as e:
            return fail(e)

    def _create(self) -> int:
        self._check_open()
        ledger_id = self._take_id()
        path = os.path.join(self._dir, ledger_dir_name(ledger_id))
        staging = path + ".new"
        try:
            os.mkdir(staging)
            fd = os.open(os.path.join(staging, HEADER_FILE), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                header = encode_header(ledger_id, self.page_bytes, self.index_page_records, now_us())
                if os.write(fd, header) != len(header):
                    raise OSError(28, os.strerror(28))  # a short write: ENOSPC
            finally:
                os.close(fd)
            os.rename(staging, path)
        except OSError as e:
            shutil.rmtree(staging, ignore_errors=True)
            raise storage_error(e, f"creating ledger {ledger_id}") from None
        ledger = Ledger(ledger_id, path, self.page_bytes, self.index_page_records, 0, 0, 0, False)
        ledger.new = True
        self._syncer.directory_changed = True
        self._make_writable(ledger, 0, 0)
        self._ledgers[ledger_id] = ledger
        self._dirty.add(ledger)
        return ledger_id

    def _take_id(self) -> int:
        """The next ledger id. Ids are reserved in blocks, the block's end written (and
        synced) to a file, so an id is never handed out twice, even after a crash."""
        if self._next_id >= self._reserved_until:
            until = self._next_id + ID_RESERVATION
            try:
                replace_durably(os.path.join(self._dir, NEXT_ID_FILE), f"{until}\n")
            except OSError as e:
                raise storage_error(e, "creating a ledger: reserving ids") from None
            self._reserved_until = until
        ledger_id = self._next_id
        self._next_id += 1
        return ledger_id

    # -- ILedgerStore: append ---------------------------------------------------------------

    def append(self, ledger_id, data, publish_time_us):
        ledger = self._writable.get(ledger_id)
        if ledger is None:
            return fail(self._not_writable(ledger_id))
        try:
            entry = self._store(ledger, data, publish_time_us)
        except Exception as e:
            return self._refused(ledger_id, e)
        if self._always:
            return self._syncer.wait(entry)
        return succeed(entry)

    def append_now(self, ledger_id, data, publish_time_us):
        """append, answered within the call when the entry is acknowledged at once (fsync
        `never` or `interval`): its entry id, an int; else append's Deferred (refusals
        too). The topic log's common append: no Deferred made."""
        ledger = self._writable.get(ledger_id)
        if ledger is None or self._always:
            return self.append(ledger_id, data, publish_time_us)
        try:
            return self._store(ledger, data, publish_time_us)
        except Exception as e:
            return self._refused(ledger_id, e)

    @staticmethod
    def _refused(ledger_id, error: Exception) -> Deferred:
        """The failed Deferred of an append _store refused (nothing was stored)."""
        if isinstance(error, LedgerError):
            return fail(error)
        if isinstance(error, (TypeError, ValueError, struct.error)):
            return fail(LedgerError(f"ledger {ledger_id}: bad entry or publish time: {error}"))
        raise error

    def _store(self, ledger: Ledger, data, time_us: int) -> int:
        """Store one entry: data, then index record, then committed count. Everything that
        can fail (size, allocation, mapping) happens before the first store."""
        if type(data) is list or type(data) is tuple:
            chunks = data
            n = 0
            for chunk in chunks:
                n += len(chunk)
        else:
            chunks = None
            n = len(data)
        page_bytes = ledger.page_bytes
        page = ledger.data_page
        off = ledger.data_off
        if off + n > page_bytes:
            if n > page_bytes:
                raise LedgerError(
                    f"ledger {ledger.id}: an entry of {n} bytes exceeds the page size {page_bytes}"
                )
            page += 1
            off = 0
        end = page * page_bytes + off + n
        stream = ledger.data_stream
        if end > stream.ready:
            stream.ensure(end - n, end, f"ledger {ledger.id}: data page {page}", ledger.bytes * GROWTH)
        entry = ledger.count
        index_end = (entry + 1) * RECORD_BYTES
        index_stream = ledger.index_stream
        if index_end > index_stream.ready:
            index_stream.ensure(
                index_end - RECORD_BYTES, index_end, f"ledger {ledger.id}: index", index_end * GROWTH
            )
        index_page, slot = divmod(entry, ledger.records_per_page)
        data_map = ledger.data_mm
        index_map = ledger.index_mm
        if (
            data_map is None
            or index_map is None
            or ledger.data_map_page != page
            or ledger.index_map_page != index_page
        ):
            if n:
                data_map, index_map = self._pages.writer_maps(ledger, page, index_page)
            else:  # an empty entry touches no data page (its page may not exist yet)
                index_map = self._pages.writer_maps(ledger, -1, index_page)[1]
        header_map = ledger.header_mm
        if header_map is None:
            header_map = self._headers.map(ledger)
        else:
            ledger.header_used = True
        if not n:
            crc = 0
        elif chunks is None:
            data_map[off : off + n] = data
            crc = zlib.crc32(data)
        else:
            pos = off
            crc = 0
            for chunk in chunks:
                k = len(chunk)
                data_map[pos : pos + k] = chunk
                crc = zlib.crc32(chunk, crc)
                pos += k
        # layout.record_check(crc, entry, time_us), inline (a call less per append):
        check = crc ^ ((((entry + 1) * RECORD_SALT) ^ time_us ^ (time_us >> 32)) & 0xFFFFFFFF | 1)
        RECORD.pack_into(index_map, slot * RECORD_BYTES, page, off, n, check, time_us)
        count = entry + 1
        total = ledger.bytes + n
        COUNTS.pack_into(header_map, COUNTS_OFFSET, count, total)
        ledger.count = count
        ledger.bytes = total
        ledger.data_page = page
        ledger.data_off = off + n
        self._dirty.add(ledger)
        # The preparer runs ahead by GROWTH times what the ledger holds (a chunk at most is
        # left before it starts again), so a one-message topic's pages stay a block each
        # and a busy ledger reaches whole chunks within a few steps.
        if end + stream.chunk_bytes > stream.ready and not stream.preparing and not stream.full:
            lookahead = min(MAX_DATA_LOOKAHEAD, 2 * page_bytes, max(stream.min_ahead, total * GROWTH))
            if end + min(stream.chunk_bytes, lookahead >> 1) > stream.ready:
                self._pages.prepare(stream, end + lookahead)
        if index_end + index_stream.chunk_bytes > index_stream.ready and not (
            index_stream.preparing or index_stream.full
        ):
            lookahead = min(
                MAX_INDEX_LOOKAHEAD, 2 * ledger.index_page_bytes, max(MIN_LOOKAHEAD, index_end * GROWTH)
            )
            if index_end + min(index_stream.chunk_bytes, lookahead >> 1) > index_stream.ready:
                self._pages.prepare(index_stream, index_end + lookahead)
        return entry

    def _not_writable(self, ledger_id) -> LedgerError:
        if self._closed:
            return LedgerError("the ledger store is closed")
        ledger = self._ledgers.get(ledger_id)
        if ledger is None:
            return NoSuchLedger(f"ledger {ledger_id} does not exist")
        if ledger.broken is not None:
            return LedgerError(f"ledger {ledger_id} takes no more appends: {ledger.broken}")
        return LedgerClosed(f"ledger {ledger_id} is closed")

    # -- ILedgerStore: reads (answered at once: fired Deferreds) ----------------------------

    def read(self, ledger_id, first_entry, last_entry, max_bytes=None):
        try:
            return succeed(self._reader.read(ledger_id, first_entry, last_entry, max_bytes))
        except LedgerError as e:
            return fail(e)

    def entry_time(self, ledger_id, entry_id):
        try:
            return succeed(self._reader.entry_time(ledger_id, entry_id))
        except LedgerError as e:
            return fail(e)

    def find_by_time(self, ledger_id, time_us):
        try:
            return succeed(self._reader.find_by_time(ledger_id, time_us))
        except LedgerError as e:
            return fail(e)

    def load(self, ledger_id):
        try:
            self._ledger(ledger_id)
        except LedgerError as e:
            return fail(e)
        return succeed(None)

    def last_entry_id(self, ledger_id) -> int:
        return self._ledger(ledger_id).count - 1

    def ledger_bytes(self, ledger_id) -> int:
        return self._ledger(ledger_id).bytes

    def is_closed(self, ledger_id) -> bool:
        return self._ledger(ledger_id).closed

    def list_ledgers(self) -> list:
        self._check_open()
        return sorted(self._ledgers)

    def _check_open(self) -> None:
        if self._closed:
            raise LedgerError("the ledger store is closed")

    def _ledger(self, ledger_id) -> Ledger:
        self._check_open()
        ledger = self._ledgers.get(ledger_id)
        if ledger is None:
            raise NoSuchLedger(f"ledger {ledger_id} does not exist")
        return ledger

    # -- ILedgerStore: close a ledger, delete -----------------------------------------------

    def close_ledger(self, ledger_id):
        """Refuse appends at once; fire once every entry and the closed state are on disk
        (a ledger closes durably under every fsync policy: it happens once per roll)."""
        try:
            ledger = self._ledger(ledger_id)
        except LedgerError as e:
            return fail(e)
        if ledger.closed:
            if ledger.closing is None:
                return succeed(None)
            later = Deferred()
            ledger.closing.append(later)
            return later
        ledger.closed = True
        ledger.closing = []
        self._writable.pop(ledger_id, None)
        self._dirty.add(ledger)
        d = self._syncer.wait(None)  # every entry stored so far is durable after it
        d.addCallback(lambda _: self._finish_close(ledger))

        def closed(result):
            waiting, ledger.closing = ledger.closing, None
            for later in waiting:
                if isinstance(result, Failure):
                    later.errback(result)
                else:
                    later.callback(None)
            return result

        d.addBoth(closed)
        return self._jobs.track(d)

    def fence(self, ledger_id):
        """This store's ledgers have no other writer (its data directory is locked):
        fencing one closes it (hedwig.ledger.shared_store fences on shared storage)."""
        return self.close_ledger(ledger_id)

    def _finish_close(self, ledger: Ledger):
        if ledger.deleted:
            return None
        if ledger.data_stream is not None:
            ledger.data_stream.stop()
            ledger.index_stream.stop()
        self._pages.release(ledger)
        ledger.durable = ledger.count
        self._headers.discard(ledger)
        data_end = (ledger.data_page, ledger.data_off) if ledger.count else None
        index_end = divmod(ledger.count - 1, ledger.records_per_page) if ledger.count else None
        return in_thread(
            self._reactor, cut_closed_ledger, ledger.path, ledger.count, ledger.bytes, data_end, index_end
        )

    def delete(self, ledger_id):
        """Forget the ledger at once; its files go in a thread (the Deferred fires once
        their space is free). A crash in between finishes the deletion on the next open."""
        try:
            ledger = self._ledger(ledger_id)
        except LedgerError as e:
            return fail(e)
        del self._ledgers[ledger_id]
        self._writable.pop(ledger_id, None)
        self._dirty.discard(ledger)
        ledger.deleted = True
        if ledger.data_stream is not None:
            ledger.data_stream.stop()
            ledger.index_stream.stop()
        self._pages.release(ledger)
        self._headers.discard(ledger)
        grave = ledger.path + ".deleted"
        try:
            os.rename(ledger.path, grave)
        except OSError as e:
            return fail(LedgerError(f"ledger {ledger_id}: cannot delete it: {e.strerror}"))
        return self._jobs.track(in_thread(self._reactor, shutil.rmtree, grave))

    # -- syncs ------------------------------------------------------------------------------

    def _before_ack(self, marks) -> None:
        """After a group commit round's fsyncs, before its acknowledgements (nothing here;
        a store on shared storage checks its fences)."""

    def _sync_failed(self, ledger: Ledger, reason: str) -> None:
        """A round covering the ledger failed: it takes no more appends."""
        ledger.broken = reason
        self._writable.pop(ledger.id, None)
        self._headers.discard(ledger)

    # -- close ------------------------------------------------------------------------------

    def close(self):
        """Sync what is stored (under every policy), then the headers, wait for thread
        work, unmap everything."""
        if self._closed:
            return succeed(None)
        self._syncer.stop_timer()
        self._closed = True
        for ledger in self._writable.values():
            self._dirty.add(ledger)
        d = self._syncer.wait(None)

        def sync_headers(_):
            # After the last round, the headers hold final durable counts: synced, they
            # spare the next open (even after a reboot) from checking anything again.
            headers = [os.path.join(ledger.path, HEADER_FILE) for ledger in self._writable.values()]
            return in_thread(self._reactor, sync_paths, headers)

        def drain(_):
            for ledger in self._writable.values():
                ledger.data_stream.stop()
                ledger.index_stream.stop()
            return self._jobs.drained()

        def release(result):
            self._pages.clear()
            for ledger in self._writable.values():
                ledger.data_mm = ledger.index_mm = None
            self._headers.clear()
            self._writable.clear()
            return result

        d.addCallback(sync_headers)
        d.addCallback(drain)
        d.addBoth(release)
        d.addCallback(lambda _: None)
        return d
