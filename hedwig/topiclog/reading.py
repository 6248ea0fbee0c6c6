"""Reading a topic log: entries by seq-id across its ledgers (the open one by its index,
closed ones through the shared EntryLocator), and the first seq-id at or after a time
(TopicLog's read side: an EntryReader, which the log owns and binds its `read` and
`find_by_time` to).

The ledger store answers with Deferreds (a RADOS store's come later; the mmap store's
have fired): both reads run as generators under run_now, so over a local store a read
completes within the call, as it did when the store answered synchronously, and over a
remote one it waits without holding the reactor.
"""

from bisect import bisect_right

from twisted.internet.defer import (
    Deferred,
    fail,
    succeed,
)
from twisted.logger import Logger

from hedwig.concurrency.deferreds import run_now
from hedwig.ledger.interface import EntryDamaged, NoSuchLedger
from hedwig.protocol.entry import ENTRY_VERSION
from hedwig.topiclog.entry import LogEntry
from hedwig.topiclog.entry_head import ENTRY_HEAD
from hedwig.topiclog.errors import EntriesUnreadable, LogCorrupt, SeqNotRetained

_logger = Logger()


class EntryReader:
    """Reads of one topic log: the ranges are its LedgerRoller's (ledgers.py), the last
    seq-id and the open ledger's index its writer's (the TopicLog)."""

    def __init__(self, topic: str, ledgers, locator, roller, log):
        self.topic = topic
        self._ledgers = ledgers  # the ILedgerStore
        self._locator = locator  # the hub's EntryLocator: entries of sealed ledgers
        self._roller = roller  # .ranges, .starts: the ranges as last written
        self._log = log  # .last_seq, .open_ledger: what is acknowledged, and where

    def read(self, from_seq: int, max_entries: int, max_bytes: int) -> Deferred:
        """The entry holding from_seq and those after it, at most max_entries; entries are
        added while their total stays within max_bytes, but the first always is. [] when
        from_seq > last_seq; SeqNotRetained when from_seq < first_seq. A read stops before
        seq-ids it cannot read (a damaged entry, a missing ledger) and returns what precedes
        them; EntriesUnreadable when from_seq is one of them."""
        if type(from_seq) is not int or from_seq < 1:
            return fail(ValueError(f"seq-ids start at 1, not {from_seq!r}"))
        if type(max_entries) is not int or max_entries < 1 or type(max_bytes) is not int or max_bytes < 1:
            return fail(ValueError("max_entries and max_bytes must be positive integers"))
        last = self._log.last_seq
        if from_seq > last:
            return succeed([])
        if from_seq < self._roller.ranges[0].first_seq:
            return fail(SeqNotRetained(self.topic, from_seq, self._roller.ranges[0].first_seq))
        return run_now(self._read(from_seq, last, max_entries, max_bytes))

    def _read(self, from_seq: int, last: int, max_entries: int, max_bytes: int):
        """The read, as a generator of what it waits for (run_now runs it)."""
        ranges = self._roller.ranges
        store = self._ledgers
        locator = self._locator
        unpack = ENTRY_HEAD.unpack_from
        head_size = ENTRY_HEAD.size
        out: list[LogEntry] = []
        total = 0
        seq = from_seq
        i = bisect_right(self._roller.starts, seq) - 1
        open_index = len(ranges) - 1
        opened = self._log.open_ledger  # (the open ledger as the read began: a roll may come meanwhile)
        while True:
            r = ranges[i]
            ledger_id = r.ledger_id
            try:
                if i == open_index:
                    index = opened.index
                    entry_id = index.find(seq)
                    last_entry = index.find(last)
                else:
                    last_entry = store.last_entry_id(ledger_id)
                    entry_id = yield locator.locate(ledger_id, seq, r.first_seq, last_entry)
                want = min(last_entry - entry_id + 1, max_entries - len(out))
                chunk = yield store.read(ledger_id, entry_id, entry_id + want - 1, max(1, max_bytes - total))
            except (NoSuchLedger, EntryDamaged, LogCorrupt) as e:
                if self._dropped(ranges, ledger_id):
                    # Deleted while the read was in flight (a compaction's swap or garbage
                    # collection replaced it; a RADOS segment read then finds no object,
                    # which reads as damage): what was read stands, else read again
                    # through the ranges as they are now.
                    if out:
                        return out
                    ranges = self._roller.ranges
                    if seq < ranges[0].first_seq:
                        raise SeqNotRetained(self.topic, seq, ranges[0].first_seq) from None
                    i = bisect_right(self._roller.starts, seq) - 1
                    open_index = len(ranges) - 1
                    opened = self._log.open_ledger
                    continue
                if isinstance(e, NoSuchLedger):
                    return self._stop_at_damage(
                        out, seq, r.last_seq, "their ledger is missing", f"ledger {ledger_id} is missing"
                    )
                return self._stop_at_damage(out, seq, None, "a damaged entry", str(e))
            if not chunk:
                raise LogCorrupt(f"topic {self.topic}: ledger {ledger_id} returned no entry {entry_id}")
            full = ended = False
            for data in chunk:
                if len(data) < head_size:
                    return self._stop_at_damage(
                        out,
                        seq,
                        None,
                        "a damaged entry",
                        f"ledger {ledger_id} entry {entry_id}: "
                        f"{len(data)} bytes, shorter than an entry header",
                    )
                version, _flags, first, count, time_us = unpack(data)
                if i != open_index and first > r.last_seq:
                    ended = True  # never past a closed range's recorded end (a fenced writer's)
                    break
                if (
                    (first != seq if out else not first <= seq < first + count)
                    or version != ENTRY_VERSION
                    or not count
                ):
                    return self._stop_at_damage(
                        out,
                        seq,
                        None,
                        "a damaged entry",
                        f"ledger {ledger_id} entry {entry_id} holds "
                        f"seq-ids {first}..{first + count - 1} (version {version}), expected {seq}",
                    )
                if out and total + len(data) > max_bytes:
                    full = True
                    break
                out.append(LogEntry(first, first + count - 1, data, time_us))
                total += len(data)
                seq = first + count
                entry_id += 1
            if i != open_index and seq <= r.last_seq:
                locator.note_next(ledger_id, seq, entry_id)
            if full or len(out) >= max_entries or seq > last or total >= max_bytes:
                return out
            if ended or entry_id > last_entry:
                i += 1

    def _dropped(self, ranges, ledger_id: int) -> bool:
        """Whether the ranges changed since `ranges` and no longer name the ledger."""
        current = self._roller.ranges
        return current is not ranges and all(r.ledger_id != ledger_id for r in current)

    def _stop_at_damage(self, out: list, seq: int, last_lost: int | None, why: str, detail: str) -> list:
        """A read met seq-ids it cannot read: it returns what precedes them (the next read
        starts there and fails), or fails with EntriesUnreadable when nothing does. The
        operator's log line names the ledger and where; the error names seq-ids only."""
        if out:
            return out
        error = EntriesUnreadable(self.topic, seq, last_lost, why, detail)
        _logger.error("{error}: {detail}", error=error, detail=detail)
        raise error

    def find_by_time(self, time_us: int) -> Deferred:
        """Deferred[int]: the first seq-id published at or after time_us (last_seq + 1 when
        none), by binary search over the ledgers' last publish times, then within the
        ledger."""
        return run_now(self._find_by_time(time_us))

    def _find_by_time(self, time_us: int):
        ranges = self._roller.ranges
        store = self._ledgers
        last = self._log.last_seq
        open_index = len(ranges) - 1
        opened = self._log.open_ledger
        open_last_entry = opened.index.find(last)  # -1: nothing acknowledged in it yet
        searchable = len(ranges) if open_last_entry >= 0 else open_index

        def last_entry(i):
            return open_last_entry if i == open_index else store.last_entry_id(ranges[i].ledger_id)

        lo, hi = 0, searchable
        while lo < hi:
            mid = (lo + hi) // 2
            if (yield store.entry_time(ranges[mid].ledger_id, last_entry(mid))) >= time_us:
                hi = mid
            else:
                lo = mid + 1
        if lo == searchable:
            return last + 1
        ledger_id = ranges[lo].ledger_id
        entry_id = yield store.find_by_time(ledger_id, time_us)
        if entry_id is None or entry_id > last_entry(lo):
            return last + 1
        if lo == open_index:
            return opened.index.first_seq(entry_id)
        return (yield self._locator.first_seq_of(ledger_id, entry_id))
