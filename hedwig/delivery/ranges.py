"""Sets of seq-ids as sorted, disjoint, non-adjacent closed ranges, and their compact bytes.

A shared subscription's acknowledgements above its consumed seq-id are such a set: a
worker acknowledging in order adds to the end of one range, so the set stays a handful
of ranges however many messages it covers, and every operation is a bisect and a few
list operations, never a loop over messages.

Persisted (the metadata's opaque `acked` field), a set is written relative to the
consumed seq-id: a format byte, then per range the gap from the end of the previous one
(the consumed seq-id for the first) and its length less one, as unsigned LEB128
varints; format 2 is the same bytes deflated (zlib), used when that is smaller (sparse
acknowledgements at a regular stride shrink to almost nothing). A set too large for
the record keeps its lowest ranges: what is left out is delivered again after a restart
(at least once, never lost).
"""

import zlib
from bisect import bisect_left, bisect_right

_PLAIN = 1
_DEFLATED = 2


class RangeSet:
    """Seq-ids as ranges: `starts[i]..ends[i]`, sorted, with gaps between them."""

    __slots__ = ("ends", "starts")

    def __init__(self, ranges=()):
        self.starts = []
        self.ends = []
        for first, last in ranges:
            self.add(first, last)

    def __bool__(self) -> bool:
        return bool(self.starts)

    def __len__(self) -> int:
        """The number of ranges (not of seq-ids: see count)."""
        return len(self.starts)

    def __iter__(self):
        return zip(self.starts, self.ends, strict=True)

    def count(self) -> int:
        """The number of seq-ids in the set."""
        return sum(self.ends) - sum(self.starts) + len(self.starts)

    def add(self, first: int, last: int) -> list:
        """Add first..last; the pieces [(first, last)] that were not in the set before."""
        starts, ends = self.starts, self.ends
        i = bisect_left(ends, first - 1)  # the first range ending at or after first - 1
        j = i
        new = []
        cursor = first
        while j < len(starts) and starts[j] <= last + 1:
            if starts[j] > cursor:
                new.append((cursor, starts[j] - 1))
            cursor = max(cursor, ends[j] + 1)
            j += 1
        if cursor <= last:
            new.append((cursor, last))
        if j == i:
            starts.insert(i, first)
            ends.insert(i, last)
        else:
            starts[i:j] = [min(first, starts[i])]
            ends[i:j] = [max(last, ends[j - 1])]
        return new

    def add_many(self, ranges) -> list:
        """Add sorted, disjoint ranges [(first, last)] (an ACK's, of a key_shared
        subscription's member: many scattered ones) in one merge over the ranges they
        span, not a list splice each; the pieces that were not in the set before."""
        starts, ends = self.starts, self.ends
        i = bisect_left(ends, ranges[0][0] - 1)  # the first range ending at or after first - 1
        j = bisect_right(starts, ranges[-1][1] + 1)  # past the last range starting by last + 1
        new = []
        merged_starts, merged_ends = [], []
        k = i
        for first, last in ranges:
            while k < j and ends[k] < first - 1:  # (ranges wholly before this one stay)
                merged_starts.append(starts[k])
                merged_ends.append(ends[k])
                k += 1
            if merged_ends and merged_ends[-1] >= first - 1:  # (joins the last one kept)
                cursor = merged_ends[-1] + 1
                start = merged_starts[-1]
                end = max(last, merged_ends[-1])
            else:
                cursor = first
                start, end = first, last
            while k < j and starts[k] <= last + 1:
                if starts[k] > cursor:
                    new.append((cursor, starts[k] - 1))
                cursor = max(cursor, ends[k] + 1)
                start = min(start, starts[k])
                end = max(end, ends[k])
                k += 1
            if cursor <= last:
                new.append((cursor, last))
            if merged_ends and merged_ends[-1] >= start - 1:
                merged_ends[-1] = max(end, merged_ends[-1])
            else:
                merged_starts.append(start)
                merged_ends.append(end)
        merged_starts += starts[k:j]
        merged_ends += ends[k:j]
        starts[i:j] = merged_starts
        ends[i:j] = merged_ends
        return new

    def next_gap(self, seq: int) -> int:
        """The least seq-id at or after `seq` that is not in the set."""
        i = bisect_right(self.starts, seq) - 1
        if i >= 0 and self.ends[i] >= seq:
            return self.ends[i] + 1
        return seq

    def next_start(self, seq: int):
        """The first seq-id of the set at or after `seq` that begins a range, or None."""
        i = bisect_left(self.starts, seq)
        return self.starts[i] if i < len(self.starts) else None

    def drop_through(self, seq: int) -> int:
        """Forget every seq-id up to `seq`; how many there were."""
        starts, ends = self.starts, self.ends
        i = bisect_right(ends, seq)
        dropped = sum(ends[:i]) - sum(starts[:i]) + i
        del starts[:i], ends[:i]
        if starts and starts[0] <= seq:
            dropped += seq - starts[0] + 1
            starts[0] = seq + 1
        return dropped

    def take_front(self, floor: int) -> int:
        """If the set's first range begins right after `floor`, remove it and return its
        end (the new floor); else return `floor`."""
        if self.starts and self.starts[0] == floor + 1:
            end = self.ends[0]
            del self.starts[0], self.ends[0]
            return end
        return floor


# -- compact bytes ----------------------------------------------------------------------------


def _varint(value: int, out: bytearray) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def encode_ranges(ranges: RangeSet, base: int, max_bytes: int) -> bytes:
    """The set (every seq-id above `base`) in at most `max_bytes` bytes: its lowest
    ranges when it does not fit whole. b"" for an empty set."""
    if not ranges:
        return b""
    plain = bytearray([_PLAIN])
    previous = base
    for start, end in ranges:
        _varint(start - previous, plain)
        _varint(end - start, plain)
        previous = end
    deflated = zlib.compress(bytes(plain[1:]), 6)
    if len(deflated) + 1 < len(plain):
        if len(deflated) + 1 <= max_bytes:
            return bytes([_DEFLATED]) + deflated
    elif len(plain) <= max_bytes:
        return bytes(plain)
    kept = RangeSet(list(ranges)[: max(1, len(ranges) // 2)])
    return encode_ranges(kept, base, max_bytes) if len(kept) < len(ranges) else b""


def decode_ranges(data: bytes, base: int) -> RangeSet:
    """The set encode_ranges wrote relative to `base`; ValueError for bytes it did not write."""
    ranges = RangeSet()
    if not data:
        return ranges
    kind, body = data[0], data[1:]
    if kind == _DEFLATED:
        try:
            body = zlib.decompress(body)
        except zlib.error as e:
            raise ValueError(f"acknowledged ranges are not deflated: {e}") from None
    elif kind != _PLAIN:
        raise ValueError(f"unknown format {kind} of acknowledged ranges")
    values = []
    value = shift = 0
    for byte in body:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            continue
        values.append(value)
        value = shift = 0
    if shift or len(values) % 2:
        raise ValueError("acknowledged ranges are truncated")
    previous = base
    for gap, length in zip(values[::2], values[1::2], strict=True):
        if gap < 1:
            raise ValueError("acknowledged ranges overlap")
        start = previous + gap
        previous = start + length
        ranges.add(start, previous)
    return ranges
