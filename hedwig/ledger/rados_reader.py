"""Reading ledgers from RADOS: entries by id, publish times, a search by time.

An entry is found without scanning: its segment by the head's segment list (the first
entry id of each), its offset by its index record (the segment's omap key e<entry id>),
one omap read; the entry of a segment's start is at offset 0, and a reader going on
from where its last read ended finds its offset in a hint (ledger, next entry) ->
(segment, offset) left by that read, so a sequential reader (a subscriber catching up)
pays one RADOS read per read: the frames are self-describing (id, time, length, CRC),
so a read of a byte range yields the entries in it. Each read asks for about as many
bytes as the entries wanted hold on average (the ledger's bytes per entry), more when
an entry turns out larger.

Every entry read is checked: its frame names the entry expected and its CRC matches,
else it is damaged (EntryDamaged when it is the first entry asked for; the entries
before it otherwise).
"""

import errno
import zlib

from cachetools import LRUCache
from twisted.internet.defer import succeed

from hedwig.concurrency.deferreds import run_now
from hedwig.ledger import rados_layout as layout
from hedwig.ledger.interface import EntryDamaged, LedgerError
from hedwig.ledger.rados_client import RadosOpError, ledger_error
from hedwig.ledger.rados_ledger import RadosLedger

MIN_READ_BYTES = 16 << 10
MAX_READ_BYTES = 8 << 20
_FRAME = layout.FRAME
_FRAME_BYTES = layout.FRAME_BYTES


class _Damaged(Exception):
    """An entry that cannot be read back: where it was looked for."""


class LedgerReader:
    """The read side of a RadosLedgerStore, over its RadosClient."""

    def __init__(self, client, hint_slots: int = 4096):
        self._client = client
        self._hints = LRUCache(maxsize=hint_slots)  # (ledger id, entry id) -> (segment, offset)
        self.reads = 0
        self.bytes_read = 0

    def forget(self, ledger_id: int) -> None:
        for key in [k for k in self._hints if k[0] == ledger_id]:
            self._hints.pop(key, None)

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
        try:
            segment, offset = yield self._locate(ledger, entry)
            while entry <= last and total < budget:
                end = segments[segment + 1][0] if segment + 1 < len(segments) else last + 1
                if entry >= end:
                    segment, offset = segment + 1, 0
                    continue
                stop = min(last + 1, end)
                length = self._length(ledger, stop - entry, budget - total)
                name = layout.segment_name(ledger.id, segment)
                data = yield self._segment_read(name, segment, length, offset)
                size = len(data)
                position = 0
                while entry < stop and total < budget and position + _FRAME_BYTES <= size:
                    entry_id, _time_us, n, crc = _FRAME.unpack_from(data, position)
                    if entry_id != entry:
                        raise _Damaged(
                            f"segment {segment} offset {offset + position} holds entry {entry_id}'s frame"
                        )
                    start = position + _FRAME_BYTES
                    if start + n > size:
                        break  # (the rest of this frame is beyond what was read)
                    payload = data[start : start + n]
                    if zlib.crc32(payload) != crc:
                        raise _Damaged(
                            f"segment {segment} offset {offset + position}: its CRC does not match"
                        )
                    out.append(payload)
                    total += n
                    entry += 1
                    position = start + n
                if position:
                    offset += position
                    continue
                # Not one whole entry in what was read: the segment ends, or the entry is
                # larger than the read; then it is read again, whole.
                if size < _FRAME_BYTES or size < length:
                    raise _Damaged(
                        f"segment {segment} ends at offset {offset + size}, before entry {entry} ends"
                    )
                n = _FRAME.unpack_from(data, 0)[2]
                data = yield self._segment_read(name, segment, _FRAME_BYTES + n, offset)
                crc = _FRAME.unpack_from(data, 0)[3] if len(data) >= _FRAME_BYTES else None
                if len(data) < _FRAME_BYTES + n or zlib.crc32(data[_FRAME_BYTES:]) != crc:
                    raise _Damaged(
                        f"segment {segment} offset {offset}: entry {entry} is cut short or its CRC fails"
                    )
                out.append(data[_FRAME_BYTES:])
                total += n
                entry += 1
                offset += _FRAME_BYTES + n
        except _Damaged as e:
            if out:
                return out  # what precedes the damage: the next read starts at it and fails
            raise EntryDamaged(ledger.id, entry, str(e)) from None
        self._hints[(ledger.id, entry)] = (segment, offset)  # where a sequential reader goes on
        return out

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
        """(segment, offset) of an entry: a hint, a segment's start, or its index record."""
        hint = self._hints.pop((ledger.id, entry), None)
        if hint is not None:
            return hint
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
