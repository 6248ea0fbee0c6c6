"""Reading a ledger: entries by id, their times and sizes, a search by time, and what the
store holds (MmapLedgerStore's read side; reads return copies, never views)."""

from hedwig.ledger.interface import LedgerError
from hedwig.ledger.layout import (
    RECORD,
    RECORD_BYTES,
)
from hedwig.ledger.mmap_ledger import (
    DATA,
    INDEX,
    Ledger,
)


class ReadingLedgers:
    """Part of MmapLedgerStore (mmap_store.py): entries, times and sizes read back."""

    def read(self, ledger_id, first_entry, last_entry, max_bytes=None):
        ledger = self._ledger(ledger_id)
        if not 0 <= first_entry <= last_entry < ledger.count:
            raise LedgerError(
                f"ledger {ledger_id}: entries {first_entry}..{last_entry} outside 0..{ledger.count - 1}"
            )
        out = []
        total = 0
        per_page = ledger.records_per_page
        entry = first_entry
        while entry <= last_entry:
            index_page, slot = divmod(entry, per_page)
            stop = min(last_entry + 1, (index_page + 1) * per_page)
            # Copy the records out first: mapping data pages may unmap the index page.
            records = self._map(ledger, INDEX, index_page)[
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
                    data_map = self._map(ledger, DATA, page)
                    mapped_page = page
                out.append(data_map[off : off + length])
                total += length
                if max_bytes is not None and total >= max_bytes:
                    return out
            entry = stop
        return out

    def _record(self, ledger: Ledger, entry_id: int):
        index_page, slot = divmod(entry_id, ledger.records_per_page)
        return RECORD.unpack_from(self._map(ledger, INDEX, index_page), slot * RECORD_BYTES)

    def last_entry_id(self, ledger_id) -> int:
        return self._ledger(ledger_id).count - 1

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

    def ledger_bytes(self, ledger_id) -> int:
        return self._ledger(ledger_id).bytes

    def is_closed(self, ledger_id) -> bool:
        return self._ledger(ledger_id).closed

    def list_ledgers(self) -> list:
        self._check_open()
        return sorted(self._ledgers)
