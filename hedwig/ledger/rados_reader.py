"""Reading ledgers from RADOS: entries by id, publish times, a search by time.

An entry is found without scanning: its segment by the head's segment list (the first
entry id of each), its offset by its index record (the segment's omap key e<entry id>),
one omap read; the entry of a segment's start is at offset 0. The frames are
self-describing (id, time, length, CRC), so a read of a byte range yields the entries in
it: each read asks for about as many bytes as the entries wanted hold on average (the
ledger's bytes per entry), more when an entry turns out larger.

A reader that goes on where its last read ended (a subscriber catching up, the drain)
finds what that read left: the segment and offset of its next entry, the bytes already
read past it, and a read of the next AHEAD_BYTES under way, started as soon as fewer
than that many are left ahead (two buffers, one read while the other is consumed). So
a sequential reader seldom waits for the pool, and at most AHEAD_BUDGET bytes are held
ahead for all readers (least recently used dropped first). Bytes once written never change (a write op lands
whole, and a ledger only grows), so what was read ahead stays right.

Every entry read is checked: its frame names the entry expected and its CRC matches,
else it is damaged (EntryDamaged when it is the first entry asked for; the entries
before it otherwise). A read the cluster does not answer within op_timeout_s is not
damage: LedgerUnavailable.
"""

import errno
import zlib

from cachetools import LRUCache
from twisted.internet.defer import succeed

from hedwig.concurrency.deferreds import SharedResult, run_now
from hedwig.ledger import rados_layout as layout
from hedwig.ledger.interface import EntryDamaged, LedgerError
from hedwig.ledger.rados_client import RadosOpError, ledger_error
from hedwig.ledger.rados_ledger import RadosLedger

MIN_READ_BYTES = 16 << 10
MAX_READ_BYTES = 8 << 20
AHEAD_BYTES = 4 << 20  # read ahead of a sequential reader at a time
AHEAD_BUDGET = 64 << 20  # bytes read ahead and kept, for all readers
_FRAME = layout.FRAME
_FRAME_BYTES = layout.FRAME_BYTES
_EMPTY = memoryview(b"")


class _Damaged(Exception):
    """An entry that cannot be read back: where it was looked for."""


class _Ahead:
    """Where a read ended, for the reader that goes on from there: the next entry's
    segment and offset, the bytes read past it, and a read of what follows under way."""

    __slots__ = ("segment", "offset", "data", "fetch", "fetch_offset")

    def __init__(self, segment: int, offset: int, data: memoryview):
        self.segment = segment
        self.offset = offset
        self.data = data
        self.fetch = None  # SharedResult of the read of AHEAD_BYTES at fetch_offset
        self.fetch_offset = -1

    def size(self) -> int:
        return len(self.data) + (AHEAD_BYTES if self.fetch is not None else 0)


class LedgerReader:
    """The read side of a RadosLedgerStore, over its RadosClient."""

    def __init__(self, client):
        self._client = client
        # (ledger id, next entry id) -> _Ahead, within the byte budget
        self._ahead = LRUCache(maxsize=AHEAD_BUDGET, getsizeof=_Ahead.size)
        self.reads = 0
        self.bytes_read = 0

    def forget(self, ledger_id: int) -> None:
        for key in [k for k in self._ahead if k[0] == ledger_id]:
            self._ahead.pop(key, None)

    def read(self, ledger: RadosLedger, first: int, last: int, max_bytes):
        """Deferred[list of bytes]: entries first..last (acknowledged, checked by the
        store), stopping once max_bytes is reached (at least one)."""
        return run_now(self._read(ledger, first, last, max_bytes))

    def _read(self, ledger: RadosLedger, first: int, last: int, max_bytes):
        out = []
        total = 0
        entry = first
        budget = max_bytes if max_bytes is not None else 1 << 62
        segments = ledger.segments
        ahead = self._ahead.pop((ledger.id, entry), None)
        try:
            if ahead is None:
                segment, offset = yield self._locate(ledger, entry)
                data = _EMPTY
            else:
                segment, offset, data = ahead.segment, ahead.offset, ahead.data
            position = 0  # data[0] is at `offset` in the segment
            while entry <= last and total < budget:
                end = segments[segment + 1][0] if segment + 1 < len(segments) else last + 1
                if entry >= end:
                    segment, offset, data, position = segment + 1, 0, _EMPTY, 0
                    ahead = None
                    continue
                name = layout.segment_name(ledger.id, segment)
                need = _FRAME_BYTES
                if len(data) - position >= _FRAME_BYTES:
                    need += _FRAME.unpack_from(data, position)[2]
                if len(data) - position < need:
                    # Read on from this entry's frame: what was read ahead, else the pool.
                    offset += position
                    wanted = self._length(ledger, min(last + 1, end) - entry, budget - total)
                    if ahead is not None:
                        wanted = max(wanted, AHEAD_BYTES)
                    data = yield self._more(
                        ledger, ahead, name, segment, data[position:], offset, max(need, wanted)
                    )
                    position = 0
                    if len(data) < need:
                        raise _Damaged(
                            f"segment {segment} ends at offset {offset + len(data)}, within entry {entry}"
                        )
                    need = _FRAME_BYTES + _FRAME.unpack_from(data, 0)[2]
                    if len(data) < need:  # (an entry larger than the read)
                        data = yield self._more(ledger, None, name, segment, data, offset, need)
                        if len(data) < need:
                            raise _Damaged(
                                f"segment {segment} ends at offset {offset + len(data)}, within entry {entry}"
                            )
                entry_id, _time_us, n, crc = _FRAME.unpack_from(data, position)
                if entry_id != entry:
                    raise _Damaged(
                        f"segment {segment} offset {offset + position} holds entry {entry_id}'s frame"
                    )
                start = position + _FRAME_BYTES
                payload = bytes(data[start : start + n])
                if zlib.crc32(payload) != crc:
                    raise _Damaged(f"segment {segment} offset {offset + position}: its CRC does not match")
                out.append(payload)
                total += n
                entry += 1
                position = start + n
        except _Damaged as e:
            if out:
                return out  # what precedes the damage: the next read starts at it and fails
            raise EntryDamaged(ledger.id, entry, str(e)) from None
        left = _Ahead(segment, offset + position, data[position:])
        if ahead is not None and ahead.fetch is not None and ahead.fetch_offset == offset + len(data):
            left.fetch, left.fetch_offset = ahead.fetch, ahead.fetch_offset
        if left.fetch is None and len(left.data) < AHEAD_BYTES and entry < ledger.count:
            left.fetch_offset = left.offset + len(left.data)
            name = layout.segment_name(ledger.id, segment)
            left.fetch = SharedResult(self._segment_read(name, segment, AHEAD_BYTES, left.fetch_offset))
        self._ahead[(ledger.id, entry)] = left  # where a sequential reader goes on
        return out

    def _more(self, ledger, ahead, name, segment, kept, offset, length):
        """Deferred[memoryview]: `kept` (the bytes at `offset` read already) and what
        follows, `length` bytes in all if the segment holds them: the read ahead under way
        when it starts there (unless it came back short: made before those bytes were
        written), else a read."""
        return run_now(self._read_more(ahead, name, segment, kept, offset, length))

    def _read_more(self, ahead, name, segment, kept, offset, length):
        at = offset + len(kept)
        data = None
        if ahead is not None and ahead.fetch is not None and ahead.fetch_offset == at:
            fetch, ahead.fetch = ahead.fetch, None
            data = yield fetch.wait()
            if len(kept) + len(data) < length:
                data = None
        if data is None:
            data = yield self._segment_read(name, segment, max(length - len(kept), MIN_READ_BYTES), at)
        return memoryview(bytes(kept) + data) if kept else memoryview(data)

    def _segment_read(self, name: str, segment: int, length: int, offset: int):
        self.reads += 1

        def read(data):
            self.bytes_read += len(data)
            return data

        def failed(failure):
            failure.trap(RadosOpError)
            if failure.value.errno == errno.ETIMEDOUT:  # (not damage: the cluster may recover)
                raise ledger_error(failure.value, f"reading {name}")
            raise _Damaged(f"segment {segment} cannot be read at offset {offset}: {failure.value}")

        return self._client.read(name, length, offset, f"reading {name}").addCallbacks(read, failed)

    @staticmethod
    def _length(ledger: RadosLedger, wanted: int, budget: int) -> int:
        """Bytes to read for `wanted` entries of about the ledger's average size, within
        the byte budget (the first entry always whole: read again if it is larger)."""
        average = ledger.bytes // ledger.count if ledger.count else 0
        estimate = wanted * (average + _FRAME_BYTES)
        estimate += estimate >> 2
        if budget < estimate:
            estimate = budget + _FRAME_BYTES * min(wanted, 1 + budget // max(1, average))
        return max(MIN_READ_BYTES, min(MAX_READ_BYTES, estimate))

    def _locate(self, ledger: RadosLedger, entry: int):
        """(segment, offset) of an entry: a segment's start, or its index record."""
        segment = ledger.segment_of(entry)
        if ledger.segments[segment][0] == entry:
            return segment, 0
        return run_now(self._index_offset(ledger, segment, entry))

    def _index_offset(self, ledger, segment, entry):
        record = yield self._record(ledger, segment, entry)
        return segment, record[0]

    def _record(self, ledger: RadosLedger, segment: int, entry: int):
        """Deferred[(offset, length, time, crc)]: the entry's index record."""
        name = layout.segment_name(ledger.id, segment)
        key = layout.entry_key(entry)

        def found(values):
            value = values.get(key)
            if value is None or len(value) != layout.INDEX.size:
                raise _Damaged(f"segment {segment} has no index record of entry {entry}")
            return layout.INDEX.unpack(value)

        def missing(failure):
            failure.trap(RadosOpError)
            if failure.value.errno == errno.ETIMEDOUT:
                raise ledger_error(failure.value, f"reading the index of {name}")
            raise _Damaged(f"segment {segment}'s index cannot be read: {failure.value}")

        return self._client.omap_get(name, (key,), f"reading the index of {name}").addCallbacks(
            found, missing
        )

    def entry_time(self, ledger: RadosLedger, entry: int):
        """Deferred[int]: the publish time of an entry (checked by the store)."""
        if entry == ledger.count - 1 and ledger.last_time_us:
            return succeed(ledger.last_time_us)  # (known: a closed ledger's, or written here)
        return run_now(self._entry_time(ledger, entry))

    def _entry_time(self, ledger, entry):
        try:
            record = yield self._record(ledger, ledger.segment_of(entry), entry)
        except _Damaged as e:
            raise EntryDamaged(ledger.id, entry, str(e)) from None
        return record[2]

    def find_by_time(self, ledger: RadosLedger, time_us: int):
        """Deferred[int or None]: the first entry published at or after time_us (a binary
        search over index records: a read each)."""
        return run_now(self._find_by_time(ledger, time_us))

    def _find_by_time(self, ledger, time_us):
        count = ledger.count
        if not count:
            return None
        if (yield self.entry_time(ledger, count - 1)) < time_us:
            return None
        lo, hi = 0, count - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if (yield self.entry_time(ledger, mid)) < time_us:
                lo = mid + 1
            else:
                hi = mid
        return lo


def check_range(ledger: RadosLedger, first: int, last: int) -> None:
    if not 0 <= first <= last < ledger.count:
        raise LedgerError(f"ledger {ledger.id}: entries {first}..{last} outside 0..{ledger.count - 1}")
