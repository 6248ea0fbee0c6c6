"""Reading a memory-mapped ledger: entries by id, their publish times, a search by time
(MmapLedgerStore's collaborator for its read side; reads return copies, never views, and
answer synchronously: the store hands them out as fired Deferreds)."""

from hedwig.ledger.interface import EntryDamaged, LedgerError
from hedwig.ledger.layout import (
    RECORD,
    RECORD_BYTES,
)
from hedwig.ledger.mmap_ledger import (
    DATA,
    INDEX,
    Ledger,
)


class LedgerReader:
    """Entries and index records read through `pages` (mmap_mapping.LedgerPages);
    `lookup(ledger_id)` is the store's Ledger, or raises NoSuchLedger."""

    def __init__(self, lookup, pages):
        self._ledger = lookup
        self._pages = pages

    def read(self, ledger_id, first_entry, last_entry, max_bytes=None) -> list:
        ledger = self._ledger(ledger_id)
        count = ledger.count
        if not 0 <= first_entry <= last_entry < count:
            raise LedgerError(
                f"ledger {ledger_id}: entries {first_entry}..{last_entry} outside 0..{count - 1}"
            )
        out = []
        total = 0
        per_page = ledger.records_per_page
        entry = first_entry
        # The entry a record belongs to is first_entry + len(out) (one item per entry), so
        # the per-entry path counts nothing more than it did before damage was checked.
        try:
            while entry <= last_entry:
                index_page, slot = divmod(entry, per_page)
                stop = min(last_entry + 1, (index_page + 1) * per_page)
                # Copy the records out first: mapping data pages may unmap the index page.
                records = self._map_page(ledger, INDEX, index_page, entry)[
                    slot * RECORD_BYTES : (stop - index_page * per_page) * RECORD_BYTES
                ]
                mapped_page = -1
                data_map = None
                for page, off, length, _crc, _time in RECORD.iter_unpack(records):
                    if not length:
                        out.append(b"")  # nothing to map (a closed ledger's page may be empty)
                        if max_bytes is not None and total >= max_bytes:
                            return out
                        continue
                    if page != mapped_page:
                        # Entries never span pages and each page holds one at least, so an
                        # entry's page is at most its id: a larger one is garbage, never a
                        # file name.
                        at = first_entry + len(out)
                        if page > at:
                            raise EntryDamaged(
                                ledger_id,
                                at,
                                f"its index record names data page {page} (index page "
                                f"{at // per_page} offset {(at % per_page) * RECORD_BYTES})",
                            )
                        data_map = self._map_page(ledger, DATA, page, at)
                        mapped_page = page
                    # (An offset or length past the page gives a short copy, never a fault:
                    # the topic log finds it no whole entry and reports the damage. Checking
                    # it here would cost every read a tenth of its time.)
                    out.append(data_map[off : off + length])
                    total += length
                    if max_bytes is not None and total >= max_bytes:
                        return out
                entry = stop
        except EntryDamaged:
            if out:
                return out  # what precedes the damage; the next read starts at it and raises
            raise
        return out

    def _map_page(self, ledger: Ledger, kind: str, page: int, entry: int):
        """A page an entry is read from; a page that cannot be mapped (missing, unreadable)
        damages the entry."""
        try:
            return self._pages.map(ledger, kind, page)
        except LedgerError as e:
            raise EntryDamaged(ledger.id, entry, str(e).partition(": ")[2]) from None

    def _record(self, ledger: Ledger, entry_id: int):
        index_page, slot = divmod(entry_id, ledger.records_per_page)
        return RECORD.unpack_from(self._pages.map(ledger, INDEX, index_page), slot * RECORD_BYTES)

    def entry_time(self, ledger_id, entry_id) -> int:
        ledger = self._ledger(ledger_id)
        if not 0 <= entry_id < ledger.count:
            raise LedgerError(f"ledger {ledger_id} has no entry {entry_id}")
        return self._record(ledger, entry_id)[4]

    def find_by_time(self, ledger_id, time_us):
        """Binary search over the index's publish times (non-decreasing, as a topic's are)."""
        ledger = self._ledger(ledger_id)
        lo, hi = 0, ledger.count
        while lo < hi:
            mid = (lo + hi) // 2
            if self._record(ledger, mid)[4] < time_us:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < ledger.count else None
