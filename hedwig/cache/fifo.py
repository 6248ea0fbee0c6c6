"""The hub-wide byte budget: cached entries in insertion order, weighed by their bytes.

cachetools' FIFOCache already is a size-weighted first-in-first-out map; it only needs to
say which entry it evicted so the owning topic's index forgets it too. Only filled entries
live here: stubs are kept by the topics, weigh nothing and so can never be evicted.
"""

from cachetools import FIFOCache


def _entry_bytes(entry) -> int:
    return len(entry.data)


class ByteBudgetFifo(FIFOCache):
    """Keys are (topic, first seq-id); values LogEntry. `on_evict(key, entry)` is called for
    every entry pushed out to make room (not for explicit deletions)."""

    def __init__(self, max_bytes: int, on_evict):
        super().__init__(max_bytes, getsizeof=_entry_bytes)
        self._on_evict = on_evict

    def popitem(self):
        key, entry = super().popitem()
        self._on_evict(key, entry)
        return key, entry
