"""Page files allocated for real ahead of the writer, and the errors that allocation raises.

A store into a mapped page whose blocks were never allocated faults at the moment the
file system runs out of space, and the process dies of SIGBUS. So a writable ledger
never stores below a position that was not first allocated with `posix_fallocate`:
the shortage shows up there, as ENOSPC, and the append fails cleanly.

A `PageStream` is the sequence of page files of one kind (data or index) of one writable
ledger, seen as one run of bytes: position = page * page_bytes + offset. Everything below
`ready` is allocated. A preparer thread moves `ready` ahead of the writer a chunk at a
time, writing zeros as it goes so the page cache already holds those pages (first-touch
faults are slow here, and `pwrite` does that work without the GIL); when the writer
outruns it, the writer allocates what it needs itself. The two share a lock, so zeros are
never written below `ready`, where the writer may already have stored entries.

Allocation grows with the ledger: the writer allocates what an append needs, rounded up
to a block, plus at most what the ledger already holds (up to a chunk), and the preparer
runs ahead by about what the ledger holds. A topic with one small message costs a block
of data and a block of index, not a megabyte of each; a busy writer still allocates and
pre-touches a chunk at a time. Page files are sparse: only allocated blocks use disk.
"""

import contextlib
import errno
import mmap
import os
import threading
import time

from hedwig.ledger.interface import LedgerError, LedgerStoreFull

_BORROW_ATTEMPTS = 1000
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_ZEROS = bytes(1 << 20)
BLOCK_BYTES = 4096  # the smallest step of allocation: a file system block


def storage_error(exc: OSError, what: str) -> LedgerError:
    """The ledger error an OSError stands for: LedgerStoreFull when space ran out."""
    if exc.errno in _FULL_ERRNOS:
        return LedgerStoreFull(f"{what}: no space left ({os.strerror(exc.errno)})")
    return LedgerError(f"{what}: {exc.strerror or exc}")


def map_file(path: str, length: int, writable: bool) -> mmap.mmap:
    """Map the first `length` bytes of a file (shared, so stores reach the page cache).

    A writable page shorter than `length` (a crash between cutting a closing ledger's
    pages and marking it closed) is extended first, sparse, as the writer would: only
    bytes the writer allocated with `PageStream.ensure` are ever stored into."""
    fd = os.open(path, os.O_RDWR if writable else os.O_RDONLY)
    try:
        if writable and length and os.fstat(fd).st_size < length:
            os.ftruncate(fd, length)
        access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
        return mmap.mmap(fd, length, access=access)
    finally:
        os.close(fd)


class _ReservedDescriptor:
    """One descriptor held back for syncs and closes when the process has run out of
    them (a hub full of connections meets its descriptor limit): the work that makes
    acknowledged entries durable and closes ledgers must not fail then, so it borrows
    this one, one at a time, instead."""

    def __init__(self):
        self.lock = threading.Lock()
        self.fd = None

    def hold(self) -> None:
        if self.fd is None:
            try:
                self.fd = os.open(os.devnull, os.O_RDONLY)
            except OSError:
                pass  # (already out of descriptors: the next hold tries again)

    @contextlib.contextmanager
    def opened(self, path: str, flags: int):
        """A descriptor of `path`, from the reserve when none is left."""
        try:
            fd = os.open(path, flags)
        except OSError as e:
            if e.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            fd = None
        if fd is not None:
            try:
                yield fd
            finally:
                os.close(fd)
            return
        with self.lock:
            fd = self._borrow(os.open, path, flags)
            try:
                yield fd
            finally:
                os.close(fd)
                self.hold()

    def _borrow(self, f, *args):
        """f(*args) with the reserve given back first (call with the lock held). Another
        thread's open may take the freed slot first; it gives it back soon (a sync
        holds a descriptor for one fdatasync), so try again a while."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        for attempt in range(_BORROW_ATTEMPTS):
            try:
                return f(*args)
            except OSError as e:
                if e.errno not in (errno.EMFILE, errno.ENFILE) or attempt == _BORROW_ATTEMPTS - 1:
                    raise
                time.sleep(0.001)  # (syncs and closes run in worker threads)

    def call(self, f, *args):
        """f(*args), which needs a descriptor for a moment (os.listdir), with the reserve
        when none is left."""
        try:
            return f(*args)
        except OSError as e:
            if e.errno not in (errno.EMFILE, errno.ENFILE):
                raise
        with self.lock:
            try:
                return self._borrow(f, *args)
            finally:
                self.hold()


RESERVED = _ReservedDescriptor()


def sync_path(path: str) -> None:
    """fdatasync a file (fsync a directory); one deleted meanwhile is skipped (its ledger
    was deleted: nothing is left to make durable)."""
    try:
        with RESERVED.opened(path, os.O_RDONLY) as fd:
            if os.path.isdir(path):
                os.fsync(fd)
            else:
                os.fdatasync(fd)
    except FileNotFoundError:
        return


def replace_durably(target: str, text: str) -> None:
    """Write `text` as the file `target`, in place of what it held, crash-safely: a staging
    file synced, renamed over it, its directory synced."""
    staging = target + ".tmp"
    with open(staging, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.rename(staging, target)
    sync_paths([os.path.dirname(target)])


def sync_paths(paths) -> None:
    for path in paths:
        sync_path(path)


class PageStream:
    """The page files of one kind of one writable ledger, allocated ahead of the writer."""

    def __init__(
        self,
        directory: str,
        namer,
        page_bytes: int,
        chunk_bytes: int,
        ready: int = 0,
        sync_zeros: bool = False,
        min_ahead: int = BLOCK_BYTES,
    ):
        self.directory = directory
        # Sync the preparer's zeros too (for the fsync policies that sync appends): the
        # blocks are then written, not merely allocated, and an fsync after an append
        # has no extent conversion to journal.
        self.sync_zeros = sync_zeros
        self.min_ahead = min_ahead  # the least the preparer runs ahead of the writer
        self.namer = namer
        self.page_bytes = page_bytes
        self.chunk_bytes = max(1, min(chunk_bytes, page_bytes, len(_ZEROS)))
        self.ready = ready  # everything below is allocated
        self.lock = threading.Lock()
        self.stopped = False
        self.preparing = False  # a preparer job is queued or running (reactor thread's flag)
        self.full = False  # the last preparer hit a full disk; the writer retries itself
        self.pages_created = 0  # page files created so far (their directory entries need a sync)

    def page_path(self, page: int) -> str:
        return os.path.join(self.directory, self.namer(page))

    # -- called with the lock held --------------------------------------------------

    def _allocate_chunk(self, preparing: bool, target: int) -> None:
        """Allocate from `ready` towards `target`: at most a chunk, never past the page's
        end, rounded up to a block."""
        pos = self.ready
        page, offset = divmod(pos, self.page_bytes)
        want = -(-(target - pos) // BLOCK_BYTES) * BLOCK_BYTES
        length = min(self.chunk_bytes, self.page_bytes - offset, max(BLOCK_BYTES, want))
        # Opened per chunk, not kept: a hub with thousands of open ledgers would otherwise
        # hold thousands of descriptors for files it touches once a megabyte.
        fd = os.open(self.page_path(page), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size < self.page_bytes:
                os.ftruncate(fd, self.page_bytes)  # sparse: blocks come from fallocate
                self.pages_created += 1
            os.posix_fallocate(fd, offset, length)
            # Written, not only allocated: a store into a page that is not in the page
            # cache faults it in with read-ahead, and the kernel then fills (zeroes) a
            # large folio around it: about 27 ms of system time for a new topic's first
            # store. Pages pwrite put in the cache fault in as they are.
            os.pwrite(fd, memoryview(_ZEROS)[:length], offset)
            if preparing and self.sync_zeros:  # (the preparer's zeros, off the reactor)
                os.fdatasync(fd)
        finally:
            os.close(fd)
        self.ready = pos + length

    # -- reactor thread -------------------------------------------------------------

    def ensure(self, start: int, end: int, what: str, ahead: int = 0) -> None:
        """Allocate [start, end) if the preparer has not, and up to `ahead` bytes past it
        (within the page); raise LedgerStoreFull if [start, end) cannot be. Anything between
        `ready` and `start` (the unused tail of a page the writer left) is skipped, never
        allocated."""
        with self.lock:
            if self.stopped:
                raise LedgerError(f"{what}: the ledger is no longer writable")
            if start > self.ready:
                self.ready = start
            try:
                while self.ready < end:
                    self._allocate_chunk(False, end + ahead)
            except OSError as exc:
                raise storage_error(exc, what) from None
            self.full = False

    def stop(self) -> None:
        """No more allocation (waits for a chunk being allocated)."""
        with self.lock:
            self.stopped = True

    # -- preparer thread ------------------------------------------------------------

    def prepare(self, target: int) -> None:
        """Allocate and pre-touch up to `target`, one chunk per lock hold so the writer
        never waits for more than one chunk. A full disk stops it quietly: the writer
        meets the same shortage itself and reports it."""
        while True:
            with self.lock:
                if self.stopped or self.ready >= target:
                    return
                try:
                    self._allocate_chunk(True, target)
                except OSError:
                    self.full = True
                    return
