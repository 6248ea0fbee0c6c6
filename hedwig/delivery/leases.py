"""Who holds what in a shared subscription: delivered, unacknowledged seq-ids by lease.

Each delivery to a member is one lease: a run of seq-ids (a slice of one entry; a
key_shared member's SUBSET_DELIVERY: the runs of its keys in one entry), the member,
the delivery count and the time by which it must be acknowledged. The seq-ids a
lease still holds are kept as segments (start, end, lease), sorted and disjoint, in
parallel lists searched with bisect: an acknowledgement or a NACK removes a range from
them (splitting at most the two segments at its ends), an expiry or a member leaving
removes a lease's or a member's segments. A worker that acknowledges in order trims
the front of one segment per batch, so the cost is per range acknowledged, never per
message.
"""

from bisect import bisect_left, bisect_right


class Lease:
    """One delivery: `held` seq-ids of it are still unacknowledged and not taken back."""

    __slots__ = ("count", "deadline", "first", "held", "last", "member", "serial")

    def __init__(self, member, first: int, last: int, count: int, deadline: float, serial: int = 0):
        self.member = member
        self.serial = serial  # its place among the subscription's leases, in the order made
        self.first = first
        self.last = last
        self.count = count  # the how-manieth delivery of these seq-ids this is
        self.deadline = deadline
        self.held = last - first + 1


class Holdings:
    """The segments of every live lease of one subscription."""

    __slots__ = ("ends", "leases", "starts")

    def __init__(self):
        self.starts = []
        self.ends = []
        self.leases = []

    def __len__(self) -> int:
        return len(self.starts)

    def add(self, lease: Lease) -> None:
        """Hold lease.first..lease.last (seq-ids no segment holds)."""
        i = bisect_left(self.starts, lease.first)
        self.starts.insert(i, lease.first)
        self.ends.insert(i, lease.last)
        self.leases.insert(i, lease)

    def add_segments(self, segments) -> None:
        """Hold segments [(start, end, lease)], sorted and disjoint, of seq-ids no segment
        holds (a key_shared entry's subset leases, several segments each): one splice
        when they fall between two held segments (new seq-ids do), else one at a time."""
        starts, ends, leases = self.starts, self.ends, self.leases
        i = bisect_left(starts, segments[0][0])
        if i == len(starts) or starts[i] > segments[-1][1]:
            starts[i:i] = [start for start, _end, _lease in segments]
            ends[i:i] = [end for _start, end, _lease in segments]
            leases[i:i] = [lease for _start, _end, lease in segments]
            return
        for start, end, lease in segments:
            k = bisect_left(starts, start)
            starts.insert(k, start)
            ends.insert(k, end)
            leases.insert(k, lease)

    def release(self, first: int, last: int, member=None) -> list:
        """Stop holding first..last (only what `member` holds, when given); the pieces
        [(start, end, lease)] that were held. Each piece's lease (and its member) is
        charged here."""
        starts, ends, leases = self.starts, self.ends, self.leases
        i = bisect_right(starts, first) - 1
        if i < 0 or ends[i] < first:
            i += 1
        j = i
        removed = []
        kept_starts, kept_ends, kept_leases = [], [], []
        while j < len(starts) and starts[j] <= last:
            start, end, lease = starts[j], ends[j], leases[j]
            j += 1
            if member is not None and lease.member is not member:
                kept_starts.append(start)
                kept_ends.append(end)
                kept_leases.append(lease)
                continue
            if start < first:
                kept_starts.append(start)
                kept_ends.append(first - 1)
                kept_leases.append(lease)
            if end > last:
                kept_starts.append(last + 1)
                kept_ends.append(end)
                kept_leases.append(lease)
            piece = (max(start, first), min(end, last), lease)
            removed.append(piece)
            _charge(piece)
        if removed:
            starts[i:j] = kept_starts
            ends[i:j] = kept_ends
            leases[i:j] = kept_leases
        return removed

    def release_many(self, ranges) -> None:
        """Stop holding sorted, disjoint ranges [(first, last)] (what an ACK newly
        acknowledged: of a key_shared member, many scattered ones) in one pass over the
        segments they span, not a list splice each."""
        starts, ends, leases = self.starts, self.ends, self.leases
        i = bisect_right(starts, ranges[0][0]) - 1
        if i < 0 or ends[i] < ranges[0][0]:
            i += 1
        j = bisect_right(starts, ranges[-1][1])
        kept_starts, kept_ends, kept_leases = [], [], []
        pieces = iter(ranges)
        first, last = next(pieces)
        for k in range(i, j):
            start, end, lease = starts[k], ends[k], leases[k]
            while last < start:  # (pieces wholly before this segment: none held there)
                first, last = next(pieces, (None, end))
                if first is None:
                    break
            while first is not None and first <= end:
                if start < first:  # (its part before the piece stays held)
                    kept_starts.append(start)
                    kept_ends.append(first - 1)
                    kept_leases.append(lease)
                _charge((max(start, first), min(end, last), lease))
                if last >= end:
                    start = end + 1
                    break
                start = last + 1
                first, last = next(pieces, (None, end))
            if start <= end:
                kept_starts.append(start)
                kept_ends.append(end)
                kept_leases.append(lease)
        starts[i:j] = kept_starts
        ends[i:j] = kept_ends
        leases[i:j] = kept_leases

    def release_where(self, keep) -> list:
        """Stop holding every segment whose lease `keep(lease)` refuses; those pieces."""
        removed = []
        kept = ([], [], [])
        for segment in zip(self.starts, self.ends, self.leases, strict=True):
            if keep(segment[2]):
                for column, value in zip(kept, segment, strict=True):
                    column.append(value)
            else:
                removed.append(segment)
                _charge(segment)
        if removed:
            self.starts, self.ends, self.leases = kept
        return removed

    def release_lease(self, lease: Lease) -> list:
        """Stop holding what `lease` holds (all within its first..last); those pieces."""
        starts, leases = self.starts, self.leases
        i = bisect_left(starts, lease.first)
        j = bisect_right(starts, lease.last)
        mine = [k for k in range(i, j) if leases[k] is lease]
        removed = [(starts[k], self.ends[k], lease) for k in mine]
        for k in reversed(mine):
            del starts[k], self.ends[k], leases[k]
        for piece in removed:
            _charge(piece)
        return removed


def _charge(piece) -> None:
    """The lease and member of a piece no longer hold it."""
    start, end, lease = piece
    count = end - start + 1
    lease.held -= count
    lease.member.held -= count
