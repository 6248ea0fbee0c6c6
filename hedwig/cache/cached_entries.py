"""One topic's cached entries, found by seq-id.

A cursor nearly always asks for the entry that follows the one it delivered, which starts
exactly at the seq-id it asks for: a dict keyed by first seq-id answers that in O(1). A
seq-id inside an entry (a cursor starting mid-set) is found with `bisect` over a sorted list
of first seq-ids. Entries partition a topic's seq-ids at fixed boundaries, so the entry
holding seq `s`, if cached, is the one starting at the largest first seq-id <= s.

Removals (FIFO eviction, pruning) only delete from the dict: the sorted list may keep
first seq-ids whose entry left ("stale"), and is compacted once stale ones dominate, so
each operation costs O(1) amortised plus one memmove per inserted run, never a scan.
"""

from bisect import bisect_left, bisect_right

_COMPACT_SLACK = 64


class CachedEntries:
    __slots__ = ("by_first", "head", "starts")

    def __init__(self):
        self.by_first = {}  # first seq-id -> LogEntry, the cached entries
        self.starts = []  # sorted first seq-ids, a superset of by_first's keys
        self.head = 0  # starts[:head] hold no cached entry

    def __len__(self) -> int:
        return len(self.by_first)

    def __contains__(self, first_seq: int) -> bool:
        return first_seq in self.by_first

    def find(self, seq: int):
        """The cached entry holding `seq`, or None."""
        entry = self.by_first.get(seq)
        if entry is not None:
            return entry
        starts = self.starts
        k = bisect_right(starts, seq, self.head) - 1
        if k < self.head:
            return None
        entry = self.by_first.get(starts[k])
        if entry is not None and entry.last_seq >= seq:
            return entry
        return None

    def add(self, entry) -> None:
        """Add one entry (a publish: normally beyond every cached one)."""
        first = entry.first_seq
        by_first = self.by_first
        by_first[first] = entry
        starts = self.starts
        if not starts or starts[-1] < first:
            starts.append(first)
        else:
            self._merge([first])
        # (No compaction check: an add never adds a stale first seq-id, so never calls for one.)

    def add_run(self, entries) -> None:
        """Add entries read in one range read, ascending; those already cached are skipped."""
        by_first = self.by_first
        firsts = []
        for entry in entries:
            if entry.first_seq not in by_first:
                by_first[entry.first_seq] = entry
                firsts.append(entry.first_seq)
        if firsts:
            starts = self.starts
            if not starts or starts[-1] < firsts[0]:
                starts.extend(firsts)
            else:
                self._merge(firsts)
            self._maybe_compact()

    def _merge(self, firsts) -> None:
        starts = self.starts
        lo = bisect_left(starts, firsts[0])
        hi = bisect_right(starts, firsts[-1], lo)
        if hi > lo:  # stale or live first seq-ids inside the run's span
            firsts = sorted(set(starts[lo:hi]).union(firsts))
        starts[lo:hi] = firsts
        if lo < self.head:
            self.head = lo

    def remove(self, first_seq: int):
        """Forget the entry starting at first_seq (FIFO eviction); returns it or None."""
        entry = self.by_first.pop(first_seq, None)
        if entry is not None:
            self._maybe_compact()
        return entry

    def remove_upto(self, seq: int) -> list:
        """Remove every entry whose last seq-id <= seq; return them."""
        starts = self.starts
        by_first = self.by_first
        end = bisect_right(starts, seq, self.head)
        removed = []
        i = self.head
        while i < end:
            entry = by_first.get(starts[i])
            if entry is not None:
                if entry.last_seq > seq:  # straddles seq: only the last candidate can
                    break
                del by_first[starts[i]]
                removed.append(entry)
            i += 1
        self.head = i
        self._maybe_compact()
        return removed

    def _maybe_compact(self) -> None:
        stale = len(self.starts) - len(self.by_first)
        if stale > len(self.by_first) + _COMPACT_SLACK:
            self.starts = sorted(self.by_first)
            self.head = 0

    def entries(self) -> list:
        """Every cached entry in seq-id order (for tests and describe)."""
        return [self.by_first[s] for s in sorted(self.by_first)]
