"""Mapping a ledger's pages: the writer's pages, pages mapped on demand for reads under the
store's bound, and the preparer that allocates space ahead of the writer (MmapLedgerStore's
part for address space)."""

import os

from hedwig.concurrency.deferreds import in_thread
from hedwig.ledger.interface import LedgerError
from hedwig.ledger.layout import (
    data_page_name,
    index_page_name,
)
from hedwig.ledger.mmap_ledger import (
    DATA,
    INDEX,
    Ledger,
)
from hedwig.ledger.pagefiles import PageStream, map_file


class MappingPages:
    """Part of MmapLedgerStore (mmap_store.py): pages mapped and prepared."""

    def _writer_maps(self, ledger: Ledger, page: int, index_page: int):
        """Map the writer's pages. The data page is looked up first and is then the most
        recently used, so mapping the index page (with at least two allowed) never unmaps it."""
        try:
            if page < 0:
                data_map = None
            else:
                data_map = self._pages.get(
                    (ledger.id, DATA, page),
                    lambda: map_file(
                        os.path.join(ledger.path, data_page_name(page)), ledger.page_bytes, True
                    ),
                )
            index_map = self._pages.get(
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
        """The page budget unmapped a page: forget the writer's reference to it."""
        ledger = self._ledgers.get(key[0])
        if ledger is None:
            return
        if key[1] == DATA:
            if ledger.data_map_page == key[2]:
                ledger.data_mm, ledger.data_map_page = None, -1
        elif ledger.index_map_page == key[2]:
            ledger.index_mm, ledger.index_map_page = None, -1

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

    def _map(self, ledger: Ledger, kind: str, page: int):
        """A page of the ledger, mapped through the page budget. Writable ledgers' pages are
        mapped for writing (readers and the writer share one mapping); closed ones
        read-only, as long as the file is (a closed ledger's last pages are cut short)."""
        writable = ledger.id in self._writable
        name = data_page_name(page) if kind == DATA else index_page_name(page)
        length = 0  # the whole file
        if writable:
            length = ledger.page_bytes if kind == DATA else ledger.index_page_bytes
        try:
            return self._pages.get(
                (ledger.id, kind, page), lambda: map_file(os.path.join(ledger.path, name), length, writable)
            )
        except (OSError, ValueError) as e:
            reason = getattr(e, "strerror", None) or e
            raise LedgerError(f"ledger {ledger.id}: cannot map {name}: {reason}") from None
