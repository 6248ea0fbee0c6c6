"""Finding the entry that holds a seq-id in a closed ledger, with bounded memory.

A topic's open ledger keeps its LedgerIndex as it is written. A closed ledger's index is
kept only while it fits in a byte budget shared by every topic of the hub (least recently
used dropped first). Without an index, the entry is found by binary search over entry ids,
reading one entry header per probe (log2(entries) reads), rather than rebuilding the index
from every header: rebuilding a ten-million-entry ledger costs seconds of the reactor's
time and tens of megabytes, a probe search a few dozen reads. Sequential readers, the
common case, never search: each read leaves a hint (ledger, next seq-id) -> entry id that
the reader's next read finds.

What the locator knows (an index, a hint, a ledger's start) is answered at once, an int;
a search reads entry headers from the ledger store, whose answers are Deferreds, so a
search is a Deferred.
"""

from cachetools import LRUCache

from hedwig.concurrency.deferreds import run_now
from hedwig.ledger.interface import EntryDamaged
from hedwig.topiclog.entry_head import entry_head
from hedwig.topiclog.errors import LogCorrupt
from hedwig.topiclog.ledger_index import LedgerIndex

_INDEX_OVERHEAD = 128  # the LedgerIndex and array objects themselves


def _index_size(index: LedgerIndex) -> int:
    return index.nbytes + _INDEX_OVERHEAD


class EntryLocator:
    """Seq-id -> entry id for closed ledgers of one ledger store."""

    def __init__(self, ledgers, index_cache_bytes: int, hint_slots: int = 4096):
        self._ledgers = ledgers
        self._indexes = LRUCache(maxsize=max(1, index_cache_bytes), getsizeof=_index_size)
        self._hints = LRUCache(maxsize=max(1, hint_slots))
        self.probes = 0  # entry reads spent on binary searches (observable in stats and tests)

    @property
    def index_bytes(self) -> int:
        return self._indexes.currsize

    def keep_index(self, ledger_id: int, index: LedgerIndex) -> None:
        """Keep a just-closed ledger's index while the budget allows."""
        try:
            self._indexes[ledger_id] = index
        except ValueError:  # larger than the whole budget: search by probes instead
            pass

    def has_index(self, ledger_id: int) -> bool:
        return ledger_id in self._indexes

    def forget(self, ledger_id: int) -> None:
        self._indexes.pop(ledger_id, None)

    def note_next(self, ledger_id: int, next_seq: int, entry_id: int) -> None:
        """A read of `ledger_id` ended just before `next_seq`, which entry `entry_id` holds."""
        self._hints[(ledger_id, next_seq)] = entry_id

    def locate(self, ledger_id: int, seq: int, first_seq: int, last_entry_id: int):
        """The id of the entry holding `seq` in a closed ledger whose entries 0..last_entry_id
        hold seq-ids from `first_seq` on: an int when known at once, else a Deferred (a
        binary search reading entry headers)."""
        index = self._indexes.get(ledger_id)
        if index is not None:
            return index.find(seq)
        hint = self._hints.get((ledger_id, seq))
        if hint is not None:
            return hint
        if seq == first_seq:
            return 0
        return run_now(self._search(ledger_id, seq, last_entry_id))

    def _search(self, ledger_id: int, seq: int, last_entry_id: int):
        lo, hi = 0, last_entry_id
        while lo < hi:
            mid = (lo + hi + 1) // 2
            probe, first = yield from self._readable_probe(ledger_id, mid, hi)
            if probe is not None and first <= seq:
                lo = probe
            else:
                hi = mid - 1
        return lo

    def _readable_probe(self, ledger_id: int, entry_id: int, hi: int):
        """(entry id, first seq-id) of the first entry from entry_id to hi whose header
        reads, (None, None) when none does: a damaged entry on the search's path must not
        hide the readable entries around it (a seq-id inside the damage is found at an
        entry before it, and the read from there stops at the damage)."""
        for probe in range(entry_id, hi + 1):
            try:
                return probe, (yield from self._first_seq_of(ledger_id, probe))
            except (EntryDamaged, LogCorrupt):
                continue
        return None, None

    def first_seq_of(self, ledger_id: int, entry_id: int):
        """The first seq-id an entry of a closed ledger holds: an int from its index, else
        a Deferred (its header read)."""
        index = self._indexes.get(ledger_id)
        if index is not None:
            return index.first_seq(entry_id)
        return run_now(self._first_seq_of(ledger_id, entry_id))

    def _first_seq_of(self, ledger_id: int, entry_id: int):
        self.probes += 1
        (data,) = yield self._ledgers.read(ledger_id, entry_id, entry_id, 1)
        return entry_head(data, ledger_id, entry_id)[0]
