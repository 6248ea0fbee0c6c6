"""A ledger's entry index: the first seq-id of every entry, in a compact array.

Entries hold message sets, so entry ids and seq-ids advance at different rates and the
seq-id -> entry mapping is a search. A Python list of ints costs about 36 bytes an entry;
this keeps each entry's first seq-id as an offset from the ledger's first seq-id in an
`array('I')` (4 bytes an entry), widened to `array('Q')` (8 bytes) only when a ledger spans
more than 2**32 seq-ids. A ledger of ten million entries costs 40 MB, not 360 MB.
"""

from array import array
from bisect import bisect_right

_NARROW_LIMIT = 1 << 32


class LedgerIndex:
    """First seq-ids of entries 0..n-1 of one ledger, appended in order."""

    __slots__ = ("base_seq", "_offsets")

    def __init__(self, base_seq: int):
        self.base_seq = base_seq
        self._offsets = array("I")

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def nbytes(self) -> int:
        return self._offsets.itemsize * len(self._offsets)

    def append(self, first_seq: int) -> None:
        offset = first_seq - self.base_seq
        if offset >= _NARROW_LIMIT and self._offsets.typecode == "I":
            self._offsets = array("Q", self._offsets)
        self._offsets.append(offset)

    def pop(self) -> None:
        """Forget the last entry (its append failed before anything was stored)."""
        self._offsets.pop()

    def first_seq(self, entry_id: int) -> int:
        return self.base_seq + self._offsets[entry_id]

    def find(self, seq: int) -> int:
        """The id of the entry holding `seq` (the last entry starting at or before it);
        -1 when `seq` precedes the ledger."""
        return bisect_right(self._offsets, seq - self.base_seq) - 1
