"""The hub-wide byte budget: cached entries in insertion order, weighed by their bytes.

A size-weighted first-in-first-out map of LogEntry -> topic name (an entry is its own
key: entries compare by identity), which says which entry it pushed out so that the
owning topic's index forgets it too. Only filled entries live here: stubs are kept by
the topics, weigh nothing and so can never be evicted. Its own rather than cachetools'
FIFOCache, which keeps three dicts and calls back for each value's size: an insert is
on every publish's path, and here it is one OrderedDict store and an addition.
"""

from collections import OrderedDict


class ByteBudgetFifo:
    """`on_evict(entry, topic_name)` is called for every entry pushed out to make room
    (not for explicit removals)."""

    __slots__ = ("_entries", "_on_evict", "currsize", "maxsize")

    def __init__(self, max_bytes: int, on_evict):
        if max_bytes < 0:
            raise ValueError("max_bytes must be non-negative")
        self.maxsize = max_bytes
        self.currsize = 0  # bytes of the entries held
        self._entries = OrderedDict()
        self._on_evict = on_evict

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, entry) -> bool:
        return entry in self._entries

    def add(self, entry, topic_name: str) -> None:
        """Hold `entry` (not held yet, at most maxsize bytes), the oldest leaving for it."""
        size = len(entry.data)
        if self.currsize + size > self.maxsize:
            self._make_room(size)
        self._entries[entry] = topic_name
        self.currsize += size

    def _make_room(self, size: int) -> None:
        if size > self.maxsize:
            raise ValueError(f"an entry of {size} bytes exceeds the budget of {self.maxsize}")
        entries = self._entries
        while self.currsize + size > self.maxsize:
            entry, topic_name = entries.popitem(last=False)
            self.currsize -= len(entry.data)
            self._on_evict(entry, topic_name)

    def remove(self, entry) -> None:
        """Let `entry` go (pruned, or its topic dropped)."""
        del self._entries[entry]
        self.currsize -= len(entry.data)
