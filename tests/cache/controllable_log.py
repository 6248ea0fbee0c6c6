"""A topic log the test drives: reads complete or fail when the test says.

It implements the TopicLog methods the cache and the delivery manager use (topic,
first_seq, last_seq, append, append_now, acknowledge_to, read, find_by_time) with the
same semantics (an append is acknowledged at once, its listener told), so rule-level
tests can hold a ledger read in flight, fail it, or let it finish, deterministically.
The scenario tests and the benchmark use the real TopicLog instead.
"""

from bisect import bisect_right

from twisted.internet.defer import Deferred, fail, succeed

from hedwig.topiclog.entry import LogEntry
from hedwig.topiclog.errors import SeqNotRetained


class PendingRead:
    def __init__(self, from_seq, max_entries, max_bytes):
        self.from_seq = from_seq
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.deferred = Deferred()

    def __repr__(self):
        return f"PendingRead({self.from_seq}, {self.max_entries}, {self.max_bytes})"


class ControllableLog:
    def __init__(self, topic="t", *, auto_complete=False):
        self.topic = topic
        self.entries = []  # every entry in the log, ascending
        self._firsts = []
        self.first_seq = 1
        self.last_seq = 0
        self.auto_complete = auto_complete
        self.pending = []  # PendingRead not yet completed
        self.reads = []  # every read asked for: (from_seq, max_entries, max_bytes)
        self.time_us = 1_000_000
        self.listener = None  # acknowledge_to's
        self.ttl_ms = 0  # (ITopicLog's: no default TTL)

    # -- building the log -----------------------------------------------------------------

    def _make(self, count, size, data=None):
        first = self.last_seq + 1
        if data is None:  # (zeros: no messages, so no schedule to read either)
            entry = LogEntry(first, first + count - 1, bytes(size), self.time_us, None)
        else:
            entry = LogEntry(first, first + count - 1, data(first), self.time_us)
        self.time_us += 1000
        self.entries.append(entry)
        self._firsts.append(first)
        self.last_seq = entry.last_seq
        return entry

    def backlog(self, entries, count=1, size=100):
        """Append entries straight to the log (not through the cache): a ledger backlog."""
        return [self._make(count, size) for _ in range(entries)]

    def append(self, message_set, count, origin_region=None, origin_seq=None, via=None, producer=None):
        return succeed(self.append_now(message_set, count))

    def append_now(self, message_set, count, origin_region=None, origin_seq=None, via=None, producer=None):
        entry = self._make(count, len(message_set))  # (acknowledged at once, as under fsync "never")
        if self.listener is not None:
            self.listener(entry)
        return entry

    def append_entry(self, count, data):
        """Append an entry of real bytes: `data(first_seq)` gives them (entry header and
        message set), for tests that read its messages."""
        entry = self._make(count, 0, data)
        if self.listener is not None:
            self.listener(entry)
        return entry

    def acknowledge_to(self, listener):
        self.listener = listener

    def forget_upto(self, seq):
        """Garbage collection removed seq-ids up to seq."""
        self.first_seq = seq + 1

    # -- reading --------------------------------------------------------------------------

    def read(self, from_seq, max_entries, max_bytes):
        self.reads.append((from_seq, max_entries, max_bytes))
        if from_seq > self.last_seq:
            return succeed([])
        if from_seq < self.first_seq:
            return fail(SeqNotRetained(self.topic, from_seq, self.first_seq))
        pending = PendingRead(from_seq, max_entries, max_bytes)
        if self.auto_complete:
            return succeed(self._entries_for(pending))
        self.pending.append(pending)
        return pending.deferred

    def _entries_for(self, pending):
        i = bisect_right(self._firsts, pending.from_seq) - 1
        out = []
        total = 0
        for entry in self.entries[i : i + pending.max_entries]:
            if out and total + entry.size > pending.max_bytes:
                break
            out.append(entry)
            total += entry.size
        return out

    def complete(self, index=0, entries=None):
        """Finish the index-th pending read (with what the log holds, or `entries`)."""
        pending = self.pending.pop(index)
        pending.deferred.callback(self._entries_for(pending) if entries is None else entries)

    def complete_all(self):
        while self.pending:
            self.complete()

    def fail(self, exception, index=0):
        self.pending.pop(index).deferred.errback(exception)

    def find_by_time(self, time_us):
        for entry in self.entries:
            if entry.first_seq >= self.first_seq and entry.publish_time_us >= time_us:
                return succeed(entry.first_seq)
        return succeed(self.last_seq + 1)
