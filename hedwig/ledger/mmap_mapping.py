"""A memory-mapped store's address space: the ledgers' data and index pages mapped under
one budget (least recently used unmapped first), the writer's own pages among them, and
the preparer that allocates space ahead of writers in the reactor's thread pool.

`LedgerPages` is MmapLedgerStore's collaborator for it (mmap_store.py); `ThreadJobs`
tracks the thread work a store started, so that closing the store waits for it.
"""

import os

from twisted.internet.defer import DeferredList

from hedwig.concurrency.deferreds import in_thread
from hedwig.ledger.interface import LedgerError
from hedwig.ledger.layout import data_page_name, index_page_name
from hedwig.ledger.mapped import MappedPages
from hedwig.ledger.mmap_ledger import DATA, INDEX, Ledger
from hedwig.ledger.pagefiles import PageStream, map_file


class ThreadJobs:
    """Deferreds of thread work still running (preparation, syncs of closed ledgers,
    deletions); errors are logged by their owners, never lost here."""

    def __init__(self):
        self._running = set()

    def track(self, d):
        self._running.add(d)

        def finished(result):
            self._running.discard(d)
            return result

        d.addBoth(finished)
        return d

    def drained(self):
        """A Deferred firing once every job tracked so far has finished."""
        return DeferredList(list(self._running), consumeErrors=True)


class LedgerPages:
    """Pages of a store's ledgers, mapped on demand, at most `max_mapped_pages` at once.

    `ledgers` and `writable` are the store's tables (ledger id -> Ledger), read here: a
    writable ledger's pages are mapped for writing, shared by its writer and its readers;
    a closed ledger's read-only, as long as the file is (its last pages are cut short).
    """

    def __init__(self, reactor, ledgers: dict, writable: dict, jobs: ThreadJobs, max_mapped_pages: int):
        self._reactor = reactor
        self._ledgers = ledgers
        self._writable = writable
        self._jobs = jobs
        self._maps = MappedPages(max_mapped_pages, self._unmapped)

    def __len__(self) -> int:
        return len(self._maps)

    @property
    def high_water(self) -> int:
        return self._maps.high_water

    def writer_maps(self, ledger: Ledger, page: int, index_page: int):
        """Map the writer's pages (page -1: no data page). The data page is looked up
        first and is then the most recently used, so mapping the index page (with at
        least two allowed) never unmaps it."""
        maps = self._maps
        try:
            if page < 0:
                data_map = None
            else:
                data_map = maps.get(
                    (ledger.id, DATA, page),
                    lambda: map_file(
                        os.path.join(ledger.path, data_page_name(page)), ledger.page_bytes, True
                    ),
                )
            index_map = maps.get(
                (ledger.id, INDEX, index_page),
                lambda: map_file(
                    os.path.join(ledger.path, index_page_name(index_page)), ledger.index_page_bytes, True
                ),
            )
        except (OSError, ValueError) as e:
            raise LedgerError(
                f"ledger {ledger.id}: cannot map data page {page} or index page {index_page}: "
                f"{getattr(e, 'strerror', None) or e}"
            ) from None
        if data_map is not None:
            ledger.data_mm, ledger.data_map_page = data_map, page
        ledger.index_mm, ledger.index_map_page = index_map, index_page
        return data_map, index_map

    def _unmapped(self, key) -> None:
        """The budget unmapped a page: forget the writer's reference to it."""
        ledger = self._ledgers.get(key[0])
        if ledger is None:
            return
        if key[1] == DATA:
            if ledger.data_map_page == key[2]:
                ledger.data_mm, ledger.data_map_page = None, -1
        elif ledger.index_map_page == key[2]:
            ledger.index_mm, ledger.index_map_page = None, -1

    def map(self, ledger: Ledger, kind: str, page: int):
        """A page of the ledger for reading, mapped through the budget."""
        writable = ledger.id in self._writable
        name = data_page_name(page) if kind == DATA else index_page_name(page)
        length = 0  # the whole file
        if writable:
            length = ledger.page_bytes if kind == DATA else ledger.index_page_bytes
        try:
            return self._maps.get(
                (ledger.id, kind, page), lambda: map_file(os.path.join(ledger.path, name), length, writable)
            )
        except (OSError, ValueError) as e:
            reason = getattr(e, "strerror", None) or e
            raise LedgerError(f"ledger {ledger.id}: cannot map {name}: {reason}") from None

    def prepare(self, stream: PageStream, target: int) -> None:
        """Allocate the stream's space up to `target` in a thread, ahead of its writer."""
        stream.preparing = True

        def done(result):
            stream.preparing = False
            return result

        self._jobs.track(in_thread(self._reactor, stream.prepare, target).addBoth(done))

    def release(self, ledger: Ledger) -> None:
        """Unmap every page of the ledger (it is closed, cut, deleted or forgotten)."""
        self._maps.discard_ledger(ledger.id)
        ledger.data_mm = ledger.index_mm = None
        ledger.data_map_page = ledger.index_map_page = -1

    def clear(self) -> None:
        self._maps.clear()
