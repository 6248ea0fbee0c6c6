"""The embedded ledger store: ledgers in fixed-size page files, mapped on demand.

Each ledger is a directory of page files (see `layout`): data pages holding entries back
to back, index pages holding one record per entry, and a small header holding the
committed count. An append copies the entry into a mapped data page, writes its index
record, then advances the committed count: three stores into the page cache, no system
call, so an acknowledged entry survives a crash of the process (SIGKILL) whatever the
fsync policy. What survives a crash of the machine depends on the policy:

- never: nothing is forced to disk (closing a ledger or the store still is);
- interval: a sync every `fsync_interval_ms`, off the reactor thread;
- always: group commit: an append is acknowledged after an fsync that covers it, one
  fsync serving every append made while the previous one ran.

At most `max_mapped_pages` data and index pages are mapped at any time, least recently
used unmapped first, so a log much larger than memory is read with bounded address space
and RSS. (The 4 KiB header of each writable ledger stays mapped on top of that.) Reads
return copies, never views: a page may be unmapped by the next lookup.

Space is allocated for real (posix_fallocate) before anything is stored into it, mostly
by a preparer thread running ahead of the writer, so a full disk fails an append with
StorageFull instead of killing the process with SIGBUS, and appends go on once space
returns.
"""

import os
import shutil
import struct
import time
import zlib

from twisted.internet.defer import Deferred, DeferredList, fail, succeed
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from hedwig.ledger.groupcommit import GroupCommit
from hedwig.ledger.interface import ILedgerStore, LedgerClosed, LedgerError, NoSuchLedger
from hedwig.ledger.layout import (
    BOOT,
    BOOT_OFFSET,
    COUNTS,
    COUNTS_OFFSET,
    DURABLE,
    DURABLE_OFFSET,
    HEADER_BYTES,
    HEADER_FILE,
    MAX_PAGE_BYTES,
    NEXT_ID_FILE,
    RECORD,
    RECORD_BYTES,
    STATE,
    STATE_CLOSED,
    STATE_OFFSET,
    HeaderError,
    HeaderFields,
    current_boot_id,
    data_page_name,
    encode_header,
    index_page_name,
    ledger_dir_name,
    parse_ledger_dir_name,
)
from hedwig.ledger.mapped import MappedPages
from hedwig.ledger.pagefiles import PageStream, map_file, storage_error, sync_path, sync_paths
from hedwig.ledger.recovery import clear_records_after, recover_tail
from hedwig.ledger.threads import in_thread
from hedwig.settings import KIB, MIB

DATA = "d"
INDEX = "i"
FSYNC_POLICIES = ("never", "interval", "always")

DATA_CHUNK_BYTES = 1 * MIB  # allocated (and pre-touched) per step
INDEX_CHUNK_BYTES = 64 * KIB
MAX_DATA_LOOKAHEAD = 16 * MIB  # how far the preparer runs ahead of a busy writer
MAX_INDEX_LOOKAHEAD = 1 * MIB
ID_RESERVATION = 1024  # ledger ids reserved (durably) per write of the id file
MIN_PAGE_BYTES = 4 * KIB


class _Ledger:
    """What the store keeps in memory about one ledger."""

    __slots__ = (
        "broken",
        "bytes",
        "closed",
        "closing",
        "count",
        "data_mm",
        "data_off",
        "data_page",
        "data_stream",
        "deleted",
        "dm_page",
        "durable",
        "header_mm",
        "id",
        "im_page",
        "index_mm",
        "index_stream",
        "new",
        "page_bytes",
        "path",
        "records_per_page",
        "synced_data_page",
        "synced_index_page",
        "synced_pages_created",
    )

    def __init__(self, ledger_id, path, page_bytes, records_per_page, count, data_bytes, durable, closed):
        self.id = ledger_id
        self.path = path
        self.page_bytes = page_bytes
        self.records_per_page = records_per_page
        self.count = count
        self.bytes = data_bytes
        self.durable = durable
        self.closed = closed
        self.closing = None  # while a close is on its way: Deferreds of later close calls
        self.deleted = False
        self.broken = None  # why the ledger takes no more appends (a failed fsync)
        self.new = False  # created since the last sync: its directory entry is not durable
        # The writer (open ledgers only): where the next entry goes, its page files, and
        # the pages it has mapped (None once the mapped-page budget unmapped them).
        self.data_page = 0
        self.data_off = 0
        self.data_stream = None
        self.index_stream = None
        self.header_mm = None
        self.data_mm = None
        self.dm_page = -1
        self.index_mm = None
        self.im_page = -1
        # What the next sync starts from.
        self.synced_data_page = 0
        self.synced_index_page = 0
        self.synced_pages_created = 0

    @property
    def index_page_bytes(self) -> int:
        return self.records_per_page * RECORD_BYTES


@implementer(ILedgerStore)
class MmapLedgerStore:
    """Ledgers in memory-mapped page files under `data_dir` (see the module docstring).

    `reactor` provides IReactorTime (the interval timer) and IReactorThreads (fsyncs, page
    preparation and deletion run in its thread pool; results come back on its thread).
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
        self._ledgers: dict[int, _Ledger] = {}
        self._writable: dict[int, _Ledger] = {}
        self._dirty: set[_Ledger] = set()
        self._pages = MappedPages(max_mapped_pages, self._unmapped)
        self._commit = GroupCommit(reactor, self._snapshot, self._sync_one, self._synced, self._sync_failed)
        self._jobs = set()  # Deferreds of thread work still running (waited for by close)
        self._closed = False
        self._dir_new = False  # a ledger directory appeared since the last sync
        try:
            os.makedirs(self._dir, exist_ok=True)
        except OSError as e:
            raise storage_error(e, f"creating the ledger directory {self._dir}") from None
        self._next_id = self._open_existing()
        self._reserved_until = self._next_id
        self._timer = None
        if fsync == "interval":
            self._timer = LoopingCall(self._interval_sync)
            self._timer.clock = reactor
            self._timer.start(fsync_interval_ms / 1000.0, now=False)

    @classmethod
    def from_settings(cls, data_dir, settings, reactor) -> "MmapLedgerStore":
        """A store configured by a `hedwig.config.LedgerSettings`."""
        return cls(
            data_dir,
            reactor=reactor,
            page_bytes=settings.page_bytes,
            index_page_records=settings.index_page_records,
            max_mapped_pages=settings.max_mapped_pages,
            fsync=settings.fsync,
            fsync_interval_ms=settings.fsync_interval_ms,
        )

    # -- observation (tests, metrics) ---------------------------------------------------

    @property
    def mapped_pages(self) -> int:
        """Data and index pages mapped right now (never above max_mapped_pages)."""
        return len(self._pages)

    @property
    def mapped_pages_high_water(self) -> int:
        return self._pages.high_water

    @property
    def syncs(self) -> int:
        """Syncs (group commits) completed."""
        return self._commit.syncs

    def ledger_path(self, ledger_id: int) -> str:
        return self._ledger(ledger_id).path

    # -- opening: recovery ----------------------------------------------------------------

    def _open_existing(self) -> int:
        """Load every ledger under the data directory (recovering open ones); return the
        next ledger id."""
        highest = 0
        for name in sorted(os.listdir(self._dir)):
            path = os.path.join(self._dir, name)
            stem, dot, suffix = name.partition(".")
            if dot and suffix in ("new", "deleted") and parse_ledger_dir_name(stem) is not None:
                shutil.rmtree(path, ignore_errors=True)  # a create or a delete cut short
                continue
            ledger_id = parse_ledger_dir_name(name)
            if ledger_id is None:
                continue
            highest = max(highest, ledger_id)
            try:
                led = self._load(ledger_id, path)
            except (HeaderError, OSError, LedgerError) as e:
                self.log.critical(
                    "ledger {ledger_id} in {path} cannot be opened and is not served: {error}",
                    ledger_id=ledger_id,
                    path=path,
                    error=e,
                )
                continue
            self._ledgers[ledger_id] = led
        reserved = 1
        try:
            with open(os.path.join(self._dir, NEXT_ID_FILE)) as f:
                reserved = int(f.read().strip() or 1)
        except (OSError, ValueError):
            pass
        return max(reserved, highest + 1)

    def _load(self, ledger_id: int, path: str) -> _Ledger:
        with open(os.path.join(path, HEADER_FILE), "rb") as f:
            header = HeaderFields(f.read(HEADER_BYTES))
        if header.ledger_id != ledger_id:
            raise HeaderError(f"the header names ledger {header.ledger_id}")
        closed = header.state == STATE_CLOSED
        same_boot = header.boot_id == current_boot_id()
        count, data_bytes = header.committed_count, header.committed_bytes
        end_page = end_offset = 0
        if not closed or (not same_boot and header.durable_count < count):
            recovered = recover_tail(
                path,
                count,
                data_bytes,
                header.durable_count,
                header.page_bytes,
                header.index_page_records,
                same_boot,
                check_tail=not closed,
                roll_forward=not same_boot and not closed,
            )
            if recovered.problem is not None:
                self.log.warn(
                    "ledger {ledger_id}: {problem}; cut back from {before} to {after} entries",
                    ledger_id=ledger_id,
                    problem=recovered.problem,
                    before=count,
                    after=recovered.count,
                )
                clear_records_after(path, recovered.count, header.index_page_records)
            elif recovered.rolled_forward:
                self.log.info(
                    "ledger {ledger_id}: {extra} whole entries found past the committed count "
                    "({before}); the ledger holds {after}",
                    ledger_id=ledger_id,
                    extra=recovered.rolled_forward,
                    before=count,
                    after=recovered.count,
                )
            if recovered.count != count:
                count, data_bytes = recovered.count, recovered.data_bytes
                _write_header_fields(path, count, data_bytes, min(header.durable_count, count))
            end_page, end_offset = recovered.end_page, recovered.end_offset
        led = _Ledger(
            ledger_id,
            path,
            header.page_bytes,
            header.index_page_records,
            count,
            data_bytes,
            min(header.durable_count, count),
            closed,
        )
        if not closed:
            try:
                self._make_writable(led, end_page, end_offset)
            except LedgerError as e:  # e.g. a read-only file system: still readable
                led.broken = str(e)
                self.log.error(
                    "ledger {ledger_id} is served read-only: {error}", ledger_id=ledger_id, error=e
                )
        return led

    def _make_writable(self, led: _Ledger, end_page: int, end_offset: int) -> None:
        led.data_page, led.data_off = end_page, end_offset
        led.synced_data_page = end_page
        led.synced_index_page = led.count // led.records_per_page
        syncing = self.fsync_policy != "never"
        led.data_stream = PageStream(
            led.path,
            data_page_name,
            led.page_bytes,
            DATA_CHUNK_BYTES,
            end_page * led.page_bytes + end_offset,
            sync_zeros=syncing,
        )
        led.index_stream = PageStream(
            led.path,
            index_page_name,
            led.index_page_bytes,
            INDEX_CHUNK_BYTES,
            led.count * RECORD_BYTES,
            sync_zeros=syncing,
        )
        try:
            led.header_mm = map_file(os.path.join(led.path, HEADER_FILE), HEADER_BYTES, True)
        except (OSError, ValueError) as e:
            raise LedgerError(f"ledger {led.id}: cannot map its header: {e}") from None
        BOOT.pack_into(led.header_mm, BOOT_OFFSET, current_boot_id())
        self._writable[led.id] = led

    # -- ILedgerStore: create ---------------------------------------------------------------

    def create(self) -> int:
        self._check_open()
        ledger_id = self._take_id()
        path = os.path.join(self._dir, ledger_dir_name(ledger_id))
        staging = path + ".new"
        try:
            os.mkdir(staging)
            fd = os.open(os.path.join(staging, HEADER_FILE), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                header = encode_header(ledger_id, self.page_bytes, self.index_page_records, _now_us())
                if os.write(fd, header) != len(header):
                    raise OSError(28, os.strerror(28))  # a short write: ENOSPC
            finally:
                os.close(fd)
            os.rename(staging, path)
        except OSError as e:
            shutil.rmtree(staging, ignore_errors=True)
            raise storage_error(e, f"creating ledger {ledger_id}") from None
        led = _Ledger(ledger_id, path, self.page_bytes, self.index_page_records, 0, 0, 0, False)
        led.new = True
        self._dir_new = True
        self._make_writable(led, 0, 0)
        self._ledgers[ledger_id] = led
        self._dirty.add(led)
        return ledger_id

    def _take_id(self) -> int:
        """The next ledger id. Ids are reserved in blocks, the block's end written (and
        synced) to a file, so an id is never handed out twice, even after a crash."""
        if self._next_id >= self._reserved_until:
            until = self._next_id + ID_RESERVATION
            target = os.path.join(self._dir, NEXT_ID_FILE)
            staging = target + ".tmp"
            try:
                with open(staging, "w") as f:
                    f.write(f"{until}\n")
                    f.flush()
                    os.fsync(f.fileno())
                os.rename(staging, target)
                sync_paths([self._dir])
            except OSError as e:
                raise storage_error(e, f"creating a ledger: reserving ids in {self._dir}") from None
            self._reserved_until = until
        ledger_id = self._next_id
        self._next_id += 1
        return ledger_id

    # -- ILedgerStore: append ---------------------------------------------------------------

    def append(self, ledger_id, data, publish_time_us):
        led = self._writable.get(ledger_id)
        if led is None:
            return fail(self._not_writable(ledger_id))
        try:
            entry = self._store(led, data, publish_time_us)
        except LedgerError as e:
            return fail(e)
        except (TypeError, ValueError, struct.error) as e:
            return fail(LedgerError(f"ledger {ledger_id}: bad entry or publish time: {e}"))
        if self._always:
            return self._commit.wait(entry)
        return succeed(entry)

    def _store(self, led: _Ledger, data, time_us: int) -> int:
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
        page_bytes = led.page_bytes
        page = led.data_page
        off = led.data_off
        if off + n > page_bytes:
            if n > page_bytes:
                raise LedgerError(
                    f"ledger {led.id}: an entry of {n} bytes exceeds the page size {page_bytes}"
                )
            page += 1
            off = 0
        end = page * page_bytes + off + n
        stream = led.data_stream
        if end > stream.ready:
            stream.ensure(end - n, end, f"ledger {led.id}: data page {page}")
        entry = led.count
        index_end = (entry + 1) * RECORD_BYTES
        index_stream = led.index_stream
        if index_end > index_stream.ready:
            index_stream.ensure(index_end - RECORD_BYTES, index_end, f"ledger {led.id}: index")
        index_page, slot = divmod(entry, led.records_per_page)
        dm = led.data_mm
        im = led.index_mm
        if dm is None or im is None or led.dm_page != page or led.im_page != index_page:
            if n:
                dm, im = self._writer_maps(led, page, index_page)
            else:  # an empty entry touches no data page (its page may not exist yet)
                im = self._writer_maps(led, -1, index_page)[1]
        if not n:
            crc = 0
        elif chunks is None:
            dm[off : off + n] = data
            crc = zlib.crc32(data)
        else:
            pos = off
            crc = 0
            for chunk in chunks:
                k = len(chunk)
                dm[pos : pos + k] = chunk
                crc = zlib.crc32(chunk, crc)
                pos += k
        # layout.record_check, inline: the CRC salted with the entry id and publish time.
        check = crc ^ ((((entry + 1) * 0x9E3779B1) ^ time_us ^ (time_us >> 32)) & 0xFFFFFFFF | 1)
        RECORD.pack_into(im, slot * RECORD_BYTES, page, off, n, check, time_us)
        count = entry + 1
        total = led.bytes + n
        COUNTS.pack_into(led.header_mm, COUNTS_OFFSET, count, total)
        led.count = count
        led.bytes = total
        led.data_page = page
        led.data_off = off + n
        self._dirty.add(led)
        if end + stream.chunk_bytes > stream.ready and not stream.preparing and not stream.full:
            lookahead = min(MAX_DATA_LOOKAHEAD, 2 * page_bytes, max(stream.chunk_bytes, total))
            self._prepare(stream, end + lookahead)
        if index_end + index_stream.chunk_bytes > index_stream.ready and not (
            index_stream.preparing or index_stream.full
        ):
            lookahead = min(
                MAX_INDEX_LOOKAHEAD, 2 * led.index_page_bytes, max(index_stream.chunk_bytes, index_end)
            )
            self._prepare(index_stream, index_end + lookahead)
        return entry

    def _writer_maps(self, led: _Ledger, page: int, index_page: int):
        """Map the writer's pages. The data page is looked up first and is then the most
        recently used, so mapping the index page (with at least two allowed) never unmaps it."""
        try:
            if page < 0:
                dm = None
            else:
                dm = self._pages.get(
                    (led.id, DATA, page),
                    lambda: map_file(os.path.join(led.path, data_page_name(page)), led.page_bytes, True),
                )
            im = self._pages.get(
                (led.id, INDEX, index_page),
                lambda: map_file(
                    os.path.join(led.path, index_page_name(index_page)), led.index_page_bytes, True
                ),
            )
        except (OSError, ValueError) as e:
            raise LedgerError(f"ledger {led.id}: cannot map its pages: {e}") from None
        if dm is not None:
            led.data_mm, led.dm_page = dm, page
        led.index_mm, led.im_page = im, index_page
        return dm, im

    def _unmapped(self, key) -> None:
        """The page budget unmapped a page: forget the writer's reference to it."""
        led = self._ledgers.get(key[0])
        if led is None:
            return
        if key[1] == DATA:
            if led.dm_page == key[2]:
                led.data_mm, led.dm_page = None, -1
        elif led.im_page == key[2]:
            led.index_mm, led.im_page = None, -1

    def _prepare(self, stream: PageStream, target: int) -> None:
        stream.preparing = True

        def done(result):
            stream.preparing = False
            return result

        self._job(in_thread(self._reactor, stream.prepare, target).addBoth(done))

    def _job(self, d):
        """Track thread work so close() can wait for it; errors are logged, not lost."""
        self._jobs.add(d)

        def finished(result):
            self._jobs.discard(d)
            return result

        d.addBoth(finished)
        return d

    def _not_writable(self, ledger_id) -> LedgerError:
        if self._closed:
            return LedgerError("the ledger store is closed")
        led = self._ledgers.get(ledger_id)
        if led is None:
            return NoSuchLedger(f"ledger {ledger_id} does not exist")
        if led.broken is not None:
            return LedgerError(f"ledger {ledger_id} takes no more appends: {led.broken}")
        return LedgerClosed(f"ledger {ledger_id} is closed")

    # -- ILedgerStore: reads ----------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise LedgerError("the ledger store is closed")

    def _ledger(self, ledger_id) -> _Ledger:
        self._check_open()
        led = self._ledgers.get(ledger_id)
        if led is None:
            raise NoSuchLedger(f"ledger {ledger_id} does not exist")
        return led

    def _map(self, led: _Ledger, kind: str, page: int):
        """A page of the ledger, mapped through the page budget. Writable ledgers' pages are
        mapped for writing (readers and the writer share one mapping); closed ones
        read-only, as long as the file is (a closed ledger's last pages are cut short)."""
        writable = led.id in self._writable
        name = data_page_name(page) if kind == DATA else index_page_name(page)
        length = 0  # the whole file
        if writable:
            length = led.page_bytes if kind == DATA else led.index_page_bytes
        try:
            return self._pages.get(
                (led.id, kind, page), lambda: map_file(os.path.join(led.path, name), length, writable)
            )
        except (OSError, ValueError) as e:
            raise LedgerError(f"ledger {led.id}: cannot map {name}: {e}") from None

    def read(self, ledger_id, first_entry, last_entry, max_bytes=None):
        led = self._ledger(ledger_id)
        if not 0 <= first_entry <= last_entry < led.count:
            raise LedgerError(
                f"ledger {ledger_id}: entries {first_entry}..{last_entry} outside 0..{led.count - 1}"
            )
        out = []
        total = 0
        per_page = led.records_per_page
        entry = first_entry
        while entry <= last_entry:
            index_page, slot = divmod(entry, per_page)
            stop = min(last_entry + 1, (index_page + 1) * per_page)
            # Copy the records out first: mapping data pages may unmap the index page.
            records = self._map(led, INDEX, index_page)[
                slot * RECORD_BYTES : (stop - index_page * per_page) * RECORD_BYTES
            ]
            mapped_page = -1
            dm = None
            for page, off, length, _crc, _time in RECORD.iter_unpack(records):
                if not length:
                    out.append(b"")  # nothing to map (a closed ledger's page may be empty)
                    if max_bytes is not None and total >= max_bytes:
                        return out
                    continue
                if page != mapped_page:
                    dm = self._map(led, DATA, page)
                    mapped_page = page
                out.append(dm[off : off + length])
                total += length
                if max_bytes is not None and total >= max_bytes:
                    return out
            entry = stop
        return out

    def _record(self, led: _Ledger, entry_id: int):
        index_page, slot = divmod(entry_id, led.records_per_page)
        return RECORD.unpack_from(self._map(led, INDEX, index_page), slot * RECORD_BYTES)

    def last_entry_id(self, ledger_id) -> int:
        return self._ledger(ledger_id).count - 1

    def entry_time(self, ledger_id, entry_id) -> int:
        led = self._ledger(ledger_id)
        if not 0 <= entry_id < led.count:
            raise LedgerError(f"ledger {ledger_id} has no entry {entry_id}")
        return self._record(led, entry_id)[4]

    def find_by_time(self, ledger_id, time_us):
        """Binary search over the index's publish times (non-decreasing, as a topic's are)."""
        led = self._ledger(ledger_id)
        lo, hi = 0, led.count
        while lo < hi:
            mid = (lo + hi) // 2
            if self._record(led, mid)[4] < time_us:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < led.count else None

    def ledger_bytes(self, ledger_id) -> int:
        return self._ledger(ledger_id).bytes

    def is_closed(self, ledger_id) -> bool:
        return self._ledger(ledger_id).closed

    def list_ledgers(self) -> list:
        self._check_open()
        return sorted(self._ledgers)

    # -- ILedgerStore: close a ledger, delete -----------------------------------------------

    def close_ledger(self, ledger_id):
        """Refuse appends at once; fire once every entry and the closed state are on disk
        (a ledger closes durably under every fsync policy: it happens once per roll)."""
        try:
            led = self._ledger(ledger_id)
        except LedgerError as e:
            return fail(e)
        if led.closed:
            if led.closing is None:
                return succeed(None)
            later = Deferred()
            led.closing.append(later)
            return later
        led.closed = True
        led.closing = []
        self._writable.pop(ledger_id, None)
        self._dirty.add(led)
        d = self._commit.wait(None)  # every entry stored so far is durable after it
        d.addCallback(lambda _: self._finish_close(led))

        def closed(result):
            waiting, led.closing = led.closing, None
            for later in waiting:
                if isinstance(result, Failure):
                    later.errback(result)
                else:
                    later.callback(None)
            return result

        d.addBoth(closed)
        return self._job(d)

    def _finish_close(self, led: _Ledger):
        if led.deleted:
            return None
        if led.data_stream is not None:
            led.data_stream.stop()
            led.index_stream.stop()
        self._pages.discard_ledger(led.id)
        led.data_mm = led.index_mm = None
        led.dm_page = led.im_page = -1
        led.durable = led.count
        if led.header_mm is not None:
            led.header_mm.close()
            led.header_mm = None
        data_end = (led.data_page, led.data_off) if led.count else None
        index_end = divmod(led.count - 1, led.records_per_page) if led.count else None
        return in_thread(self._reactor, _cut_closed_ledger, led.path, led.count, data_end, index_end)

    def delete(self, ledger_id):
        """Forget the ledger at once; its files go in a thread (the Deferred fires once
        their space is free). A crash in between finishes the deletion on the next open."""
        led = self._ledger(ledger_id)
        del self._ledgers[ledger_id]
        self._writable.pop(ledger_id, None)
        self._dirty.discard(led)
        led.deleted = True
        if led.data_stream is not None:
            led.data_stream.stop()
            led.index_stream.stop()
        self._pages.discard_ledger(ledger_id)
        led.data_mm = led.index_mm = None
        if led.header_mm is not None:
            led.header_mm.close()
            led.header_mm = None
        grave = led.path + ".deleted"
        try:
            os.rename(led.path, grave)
        except OSError as e:
            raise LedgerError(f"ledger {ledger_id}: cannot delete {led.path}: {e.strerror}") from None
        return self._job(in_thread(self._reactor, shutil.rmtree, grave))

    # -- syncs ------------------------------------------------------------------------------

    def _interval_sync(self) -> None:
        if self._dirty:
            self._commit.kick()

    def _snapshot(self):
        """On the reactor thread, as a round starts: the files it must sync (every data
        and index page stored into since the previous round, and the header and directory
        entries of new files) and the counts it will make durable. A header's counts are
        not synced: after a power cut, recovery finds the entries from their index
        records (see recovery)."""
        paths = []
        marks = []
        if self._dir_new:
            paths.append(self._dir)
            self._dir_new = False
        for led in self._dirty:
            if led.deleted:
                continue
            marks.append((led, led.count))
            if led.count:
                last_data_page = led.data_page
                last_index_page = (led.count - 1) // led.records_per_page
                paths.extend(
                    os.path.join(led.path, data_page_name(p))
                    for p in range(led.synced_data_page, last_data_page + 1)
                )
                paths.extend(
                    os.path.join(led.path, index_page_name(p))
                    for p in range(led.synced_index_page, last_index_page + 1)
                )
                led.synced_data_page, led.synced_index_page = last_data_page, last_index_page
            created = 0
            if led.data_stream is not None:
                created = led.data_stream.pages_created + led.index_stream.pages_created
            if led.new:  # its header (geometry) and directory entry must reach the disk
                paths.append(os.path.join(led.path, HEADER_FILE))
                paths.append(led.path)
                led.new = False
            elif created != led.synced_pages_created:
                paths.append(led.path)
            led.synced_pages_created = created
        self._dirty.clear()
        return paths, marks

    def _sync_one(self, path: str) -> None:
        sync_path(path)

    def _synced(self, marks) -> None:
        for led, count in marks:
            if count > led.durable:
                led.durable = count
                if led.header_mm is not None:
                    DURABLE.pack_into(led.header_mm, DURABLE_OFFSET, count)

    def _sync_failed(self, token, failure) -> None:
        """After a failed fsync the kernel may have dropped the dirty pages it could not
        write; nothing about those ledgers' tails can be trusted, so they take no more
        appends (reopening the store recovers them)."""
        self.log.failure("ledger sync failed", failure)
        for led, _count in token or ():
            led.broken = f"an fsync failed: {failure.getErrorMessage()}"
            self._writable.pop(led.id, None)

    # -- close ------------------------------------------------------------------------------

    def close(self):
        """Sync what is stored (under every policy), then the headers, wait for thread
        work, unmap everything."""
        if self._closed:
            return succeed(None)
        if self._timer is not None and self._timer.running:
            self._timer.stop()
        self._closed = True
        for led in self._writable.values():
            self._dirty.add(led)
        d = self._commit.wait(None)

        def sync_headers(_):
            # After the last round, the headers hold final durable counts: synced, they
            # spare the next open (even after a reboot) from checking anything again.
            headers = [os.path.join(led.path, HEADER_FILE) for led in self._writable.values()]
            return in_thread(self._reactor, sync_paths, headers)

        def drain(_):
            for led in self._writable.values():
                led.data_stream.stop()
                led.index_stream.stop()
            return DeferredList(list(self._jobs), consumeErrors=True)

        def release(result):
            self._pages.clear()
            for led in self._writable.values():
                led.data_mm = led.index_mm = None
                if led.header_mm is not None:
                    led.header_mm.close()
                    led.header_mm = None
            self._writable.clear()
            return result

        d.addCallback(sync_headers)
        d.addCallback(drain)
        d.addBoth(release)
        d.addCallback(lambda _: None)
        return d


def _now_us() -> int:
    return time.time_ns() // 1000


def _write_header_fields(path: str, count: int, data_bytes: int, durable: int) -> None:
    """Rewrite the counts of a ledger's header after recovery cut it."""
    fd = os.open(os.path.join(path, HEADER_FILE), os.O_WRONLY)
    try:
        os.pwrite(fd, COUNTS.pack(count, data_bytes), COUNTS_OFFSET)
        os.pwrite(fd, DURABLE.pack(durable), DURABLE_OFFSET)
    finally:
        os.close(fd)


def _page_files(path: str, prefix: str):
    for name in os.listdir(path):
        if name.startswith(prefix) and name[1:].isdigit():
            yield int(name[1:]), os.path.join(path, name)


def _cut_closed_ledger(path: str, count: int, data_end, index_end) -> None:
    """In a thread, once a ledger is closed: cut its last data and index pages to what they
    hold, remove pages prepared but never used, then mark the header closed, and sync it
    all. A crash before the mark leaves an open ledger with short pages, which the writer
    extends again if it ever appends."""
    last_data, data_bytes = data_end if data_end is not None else (-1, 0)
    last_index, last_slot = index_end if index_end is not None else (-1, -1)
    index_bytes = (last_slot + 1) * RECORD_BYTES
    synced = []
    try:
        for prefix, last, size in ((DATA, last_data, data_bytes), (INDEX, last_index, index_bytes)):
            for page, file in _page_files(path, prefix):
                if page > last:
                    os.unlink(file)
                elif page == last:
                    os.truncate(file, size)
                    synced.append(file)
        fd = os.open(os.path.join(path, HEADER_FILE), os.O_WRONLY)
        try:
            os.pwrite(fd, DURABLE.pack(count), DURABLE_OFFSET)
            os.pwrite(fd, STATE.pack(STATE_CLOSED), STATE_OFFSET)
        finally:
            os.close(fd)
    except FileNotFoundError:
        return  # deleted meanwhile
    synced.append(os.path.join(path, HEADER_FILE))
    synced.append(path)
    sync_paths(synced)
