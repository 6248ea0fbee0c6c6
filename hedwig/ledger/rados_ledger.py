"""What a RADOS store keeps in memory about one ledger it knows, and how it reads that
from the ledger's head (and last segment's tail) in the pool."""

from collections import deque
from dataclasses import dataclass, field

from hedwig.ledger import rados_layout as layout


class HeadDamaged(ValueError):
    """A head object whose omap cannot be read as a ledger's."""


@dataclass(eq=False)
class RadosLedger:
    """A ledger known to the store. `count`, `bytes` and `last_time_us` are what is
    acknowledged (or, for a ledger written elsewhere, found in the pool when loaded)."""

    id: int
    epoch: int
    closed: bool
    segments: list  # [(first entry id, ledger bytes before it)], one per segment
    writer: str = ""
    count: int = 0
    bytes: int = 0
    last_time_us: int = 0
    closed_by: str = ""
    # The writer's side, for a ledger written here: what has been handed to RADOS (the
    # next entry id, bytes and time assigned, where the next frame goes in which
    # segment), entries waiting for a write, writes in flight (in order), a roll to a
    # new segment under way, and why the ledger takes no more appends.
    writable: bool = False
    next_entry: int = 0
    next_bytes: int = 0
    next_time_us: int = 0
    segment_offset: int = 0
    segment_exists: bool = True
    segment_writes: int = 0  # writes made to the current segment: its guard's version
    pending: deque = field(default_factory=deque)
    pending_bytes: int = 0
    inflight: deque = field(default_factory=deque)
    rolling: bool = False
    broken: Exception | None = None
    closing: object = None  # the SharedResult of a close under way
    deleted: bool = False

    @property
    def segment(self) -> int:
        """The segment the writer writes (the last one)."""
        return len(self.segments) - 1

    def segment_of(self, entry_id: int) -> int:
        """The segment holding an entry (by the segments' first entry ids)."""
        segments = self.segments
        lo, hi = 0, len(segments) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if segments[mid][0] <= entry_id:
                lo = mid
            else:
                hi = mid - 1
        return lo

    @property
    def idle(self) -> bool:
        """Nothing waits for a write, none is in flight, no roll runs."""
        return not (self.pending or self.inflight or self.rolling)


def ledger_from_head(ledger_id: int, values: dict) -> RadosLedger:
    """A ledger as its head's omap `values` describe it (an open one's count is its last
    segment's tail's, read next: see RadosLedgerStore._load)."""
    try:
        epoch = int(values[layout.EPOCH])
        state = values[layout.STATE].decode("ascii")
        segments = layout.decode_segments(values[layout.SEGMENTS])
        writer = (values.get(layout.WRITER) or b"").decode("utf-8", "replace")  # (empty: None)
        ledger = RadosLedger(ledger_id, epoch, state == layout.CLOSED_STATE, segments, writer)
        if ledger.closed:
            last_entry, ledger.bytes, ledger.last_time_us, ledger.closed_by = layout.decode_closed(
                values[layout.CLOSED]
            )
            ledger.count = last_entry + 1
        else:
            ledger.count, ledger.bytes = segments[-1]
    except (KeyError, ValueError, TypeError, UnicodeError) as e:
        raise HeadDamaged(f"ledger {ledger_id}: its head cannot be read ({type(e).__name__}: {e})") from None
    return ledger
