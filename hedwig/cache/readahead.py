"""The read-ahead cache: the entries delivery needs, kept in memory under one byte budget.

It sits between the delivery manager and the topic logs, as Hedwig's ReadAheadCache sits
over its persistence manager. A request for a seq-id has three cases:

1. an entry holding it is cached: it is returned at once (a hit);
2. it lies beyond the topic's last published seq-id: a stub is set there and the publish
   that assigns it fills the stub, waking the requester (push: nobody polls). A cursor
   caught up with the topic waits at its tail instead (`wait_tail`): the publish hands
   it the entry directly, with no stub and no Deferred;
3. it is published but not cached: a stub is set and one range read fetches the entry and
   the next `readahead_count - 1` ones (at most `readahead_bytes`) from the ledger (pull).

On a hit the cache looks `readahead_count // 2` entries ahead; if the entry there is
neither cached nor being read, it reads that many more, so a reader always finds entries
ahead of it. Every published entry and every entry read is cached. Entries leave when
every subscriber has consumed them (`prune`) or, past `cache_bytes`, oldest inserted first.
Stubs weigh nothing and are never evicted. A failed read fails the waiters of its stubs
(they retry after a back-off) and removes the stubs, so no stub is left that nothing fills.

Entries hold message sets: a request for a seq-id inside an entry is served by that entry.
Work is per entry and per request, never per message.
"""

from bisect import bisect_left, bisect_right, insort
from functools import partial

from twisted.internet.defer import Deferred, fail
from twisted.logger import Logger
from twisted.python.failure import Failure

from hedwig.cache.cached_entries import CachedEntries
from hedwig.cache.cached_log import CachedTopicLog
from hedwig.cache.fifo import ByteBudgetFifo
from hedwig.cache.waits import RangeRead, Stub, TailWaiter
from hedwig.config.settings import CacheSettings
from hedwig.ledger.interface import LedgerError

_logger = Logger()


class TopicReleased(Exception):
    """The topic left this cache (released by the hub) while a request waited on it."""


class _TopicCache:
    """One topic's part of the cache."""

    __slots__ = ("count_hint", "index", "topic_log", "reads", "stub_seqs", "stubs", "tail", "topic")

    def __init__(self, topic_log):
        self.topic = topic_log.topic
        self.topic_log = topic_log
        self.index = CachedEntries()
        self.stubs = {}  # seq-id -> Stub
        self.stub_seqs = []  # the same seq-ids, sorted, to find those an entry covers
        self.reads = []  # RangeRead in flight
        self.tail = []  # TailWaiter for the entry after topic_log.last_seq, in the order they came
        self.count_hint = 1  # messages per entry, last seen: estimates a read's reach


class ReadAheadCache:
    """One per hub: every topic's cached entries under one byte budget."""

    def __init__(self, clock, settings: CacheSettings | None = None):
        self.clock = clock
        self.settings = settings = settings or CacheSettings()
        if settings.readahead_count < 1:
            raise ValueError("readahead_count must be at least 1")
        if settings.cache_bytes < 1:
            raise ValueError("cache_bytes must be at least 1")
        self._count = settings.readahead_count
        self._half = max(1, settings.readahead_count // 2)
        self._topics = {}
        self._decorated = {}  # topic -> the CachedTopicLog handed out for its log
        self._fifo = ByteBudgetFifo(settings.cache_bytes, self._evicted)
        self.hits = 0
        self.misses = 0
        self.tail_waits = 0
        self.range_reads = 0
        self.lookahead_reads = 0
        self.entries_read = 0
        self.read_failures = 0
        self.read_seconds = 0.0
        self.published = 0
        self.evicted_fifo = 0
        self.evicted_pruned = 0
        self.uncacheable = 0

    def wrap(self, topic_log) -> CachedTopicLog:
        """`topic_log` with this cache in it: the cache listens to its acknowledgements
        from now on (on_stored). One decorator per topic log, handed out again for the
        same log, so comparing a topic's log by identity keeps its meaning."""
        decorated = self._decorated.get(topic_log.topic)
        if decorated is None or decorated.inner is not topic_log:
            decorated = self._decorated[topic_log.topic] = CachedTopicLog(topic_log, self)
            topic_log.acknowledge_to(partial(self.on_stored, topic_log))
        return decorated

    def forget(self, decorated: CachedTopicLog) -> None:
        """The topic was released: drop its entries, and its decorator if it is this one
        (whose log is listened to no more: nothing is kept of a topic that left)."""
        if self._decorated.get(decorated.topic) is decorated:
            del self._decorated[decorated.topic]
            decorated.inner.acknowledge_to(None)
        self.drop_topic(decorated.topic)

    # -- the publish path ------------------------------------------------------------

    def on_stored(self, topic_log, entry):
        """`topic_log` acknowledged `entry`: it enters the cache and goes to whoever waits
        for it, before the append is answered (the log calls this: wrap). Every append to
        a served topic is acknowledged so, so the cache learns of every new entry, and the
        push to caught-up subscribers happens here."""
        topic = self._topic(topic_log)
        self.published += 1
        first = entry.first_seq
        topic.count_hint = entry.last_seq - first + 1
        fifo = self._fifo
        if len(entry.data) > fifo.maxsize:  # (_cache, inline: once per publish)
            self.uncacheable += 1
        elif first not in topic.index.by_first:
            topic.index.add(entry)
            fifo.add(entry, topic.topic)
        if topic.tail:  # caught-up cursors: the entry straight to them (they register again)
            waiting, topic.tail = topic.tail, []
            for waiter in waiting:
                waiter.topic = None
                try:
                    waiter.arrived(entry)
                except Exception:  # (one reader's failure is neither the publisher's nor the others')
                    _logger.failure("handing seq {seq} of {topic} over failed", seq=first, topic=topic.topic)
        if topic.stub_seqs:
            self._fill(topic, (entry,))

    # -- the delivery path -----------------------------------------------------------

    def get(self, topic_log, seq: int):
        """The entry holding `seq`: a LogEntry when cached, else a Deferred[LogEntry]
        (cancel it to stop waiting). The Deferred fails with the read's error when the
        ledger read fails; the caller retries after `retry_backoff_ms`."""
        topic = self._topic(topic_log)
        beyond = seq > topic_log.last_seq  # nothing there is cached yet: skip the lookup
        if not beyond:
            entry = topic.index.find(seq)
            if entry is not None:
                self.hits += 1
                self._look_ahead(topic, entry)
                return entry
        stub = topic.stubs.get(seq)
        fresh = stub is None
        if fresh:
            stub = self._add_stub(topic, seq)
        d = Deferred(partial(self._cancel_wait, topic, stub))
        stub.waiters.append(d)
        if beyond:
            self.tail_waits += 1
            return d
        self.misses += 1
        if fresh or stub.read is None:  # (a tail stub the log passed without a publish here)
            self._route(topic, stub)
            if stub.done and stub.failure is None:
                return stub.entry  # the read completed synchronously
        return d

    def wait_tail(self, topic_log, seq: int, waiter: TailWaiter):
        """Wait for the entry holding `seq`, past the log's last seq-id (a caught-up
        cursor): `waiter.arrived(entry)` once it is published, `waiter.failed(failure)`
        if the topic leaves the cache first. Returns what to cancel() to stop waiting.
        When `seq` is the next seq-id to publish, the usual case, the waiter joins the
        topic's tail and the publish calls it; further ahead it waits on a stub, as
        `get` would make it."""
        if seq != topic_log.last_seq + 1:
            d = self.get(topic_log, seq)
            d.addCallbacks(waiter.arrived, waiter.failed)
            return d
        topic = self._topic(topic_log)
        self.tail_waits += 1
        waiter.topic = topic
        topic.tail.append(waiter)
        return waiter

    def _look_ahead(self, topic, entry) -> None:
        by_first = topic.index.by_first
        following = entry.last_seq + 1
        for _ in range(self._half):
            cached = by_first.get(following)
            if cached is None:
                break
            following = cached.last_seq + 1
        else:
            return
        if (
            following > topic.topic_log.last_seq
            or following in topic.stubs
            or self._covering_read(topic, following) is not None
        ):
            return
        self.lookahead_reads += 1
        self._start_read(topic, following, self._half, [])

    # -- stubs and range reads ---------------------------------------------------------

    def _add_stub(self, topic, seq: int):
        stub = Stub(seq)
        topic.stubs[seq] = stub
        insort(topic.stub_seqs, seq)
        return stub

    def _remove_stub(self, topic, stub) -> None:
        if topic.stubs.get(stub.seq) is stub:
            del topic.stubs[stub.seq]
            seqs = topic.stub_seqs
            del seqs[bisect_left(seqs, stub.seq)]

    def _cancel_wait(self, topic, stub, d) -> None:
        try:
            stub.waiters.remove(d)
        except ValueError:
            return
        if not stub.waiters and stub.read is None and not stub.done:
            self._remove_stub(topic, stub)  # a tail stub nobody waits on any more

    def _covering_read(self, topic, seq: int):
        for read in topic.reads:
            if read.from_seq <= seq <= read.reach:
                return read
        return None

    def _route(self, topic, stub) -> None:
        """Make sure a read in flight will bring the entry holding stub.seq."""
        read = self._covering_read(topic, stub.seq)
        if read is None:
            self._start_read(topic, stub.seq, self._count, [stub])
        else:
            stub.read = read
            read.stubs.append(stub)

    def _start_read(self, topic, from_seq: int, max_entries: int, stubs: list) -> None:
        read = RangeRead(from_seq, max_entries, from_seq + max_entries * topic.count_hint - 1, stubs)
        for stub in stubs:
            stub.read = read
        topic.reads.append(read)
        self.range_reads += 1
        started = self.clock.seconds()
        try:
            d = topic.topic_log.read(from_seq, max_entries, self.settings.readahead_bytes)
        except Exception:
            d = fail()
        d.addCallbacks(
            self._read_done,
            self._read_failed,
            callbackArgs=(topic, read, started),
            errbackArgs=(topic, read),
        )

    def _read_done(self, entries, topic, read, started) -> None:
        self.read_seconds += self.clock.seconds() - started
        if not entries or not entries[0].first_seq <= read.from_seq <= entries[0].last_seq:
            got = f"{entries[0]!r} first" if entries else "nothing"
            self._read_failed(
                Failure(LedgerError(f"read of {topic.topic} from seq {read.from_seq} returned {got}")),
                topic,
                read,
            )
            return
        topic.reads.remove(read)
        if self._topics.get(topic.topic) is not topic:
            return  # released meanwhile; its waiters were already failed
        self.entries_read += len(entries)
        topic.count_hint = entries[-1].count
        self._cache_run(topic, entries)
        if topic.stub_seqs:
            self._fill(topic, entries)
        for stub in read.stubs:
            if stub.done or stub.read is not read:
                continue
            stub.read = None
            if stub.waiters:
                self._route(topic, stub)  # the read stopped short of it (max_bytes)
            else:
                self._remove_stub(topic, stub)

    def _read_failed(self, failure, topic, read) -> None:
        if read in topic.reads:
            topic.reads.remove(read)
        self.read_failures += 1
        _logger.warn(
            "read of {topic} from seq {seq} failed: {error}",
            topic=topic.topic,
            seq=read.from_seq,
            error=failure.getErrorMessage(),
        )
        self._fail_stubs(topic, [s for s in read.stubs if not s.done and s.read is read], failure)

    def _fail_stubs(self, topic, stubs, failure) -> None:
        for stub in stubs:
            self._remove_stub(topic, stub)
            stub.done = True
            stub.failure = failure
            stub.read = None
        for stub in stubs:
            waiters, stub.waiters = stub.waiters, []
            for d in waiters:
                d.errback(failure)

    def _fill(self, topic, entries) -> None:
        """Fill the stubs whose seq-ids the (consecutive, ascending) entries hold."""
        seqs = topic.stub_seqs
        low = entries[0].first_seq
        high = entries[-1].last_seq
        if seqs[0] > high or seqs[-1] < low:
            return
        lo = bisect_left(seqs, low)
        hi = bisect_right(seqs, high, lo)
        if lo == hi:
            return
        filled = seqs[lo:hi]
        del seqs[lo:hi]
        firsts = [e.first_seq for e in entries] if len(entries) > 1 else None
        ready = []
        for seq in filled:
            stub = topic.stubs.pop(seq)
            entry = entries[0] if firsts is None else entries[bisect_right(firsts, seq) - 1]
            stub.done = True
            stub.entry = entry
            ready.append(stub)
        for stub in ready:  # bookkeeping first: waking cursors call back into the cache
            waiters, stub.waiters = stub.waiters, []
            for d in waiters:
                d.callback(stub.entry)

    # -- the byte budget ---------------------------------------------------------------

    def _cache_run(self, topic, entries) -> None:
        limit = self._fifo.maxsize
        fresh = [e for e in entries if e.first_seq not in topic.index and len(e.data) <= limit]
        self.uncacheable += sum(1 for e in entries if len(e.data) > limit)
        if not fresh:
            return
        topic.index.add_run(fresh)
        add = self._fifo.add
        name = topic.topic
        for entry in fresh:
            add(entry, name)

    def _evicted(self, entry, topic_name: str) -> None:
        topic = self._topics.get(topic_name)
        if topic is not None:
            topic.index.remove(entry.first_seq)
        self.evicted_fifo += 1

    def prune(self, topic_name: str, consumed_seq: int) -> int:
        """Every subscriber of the topic consumed up to `consumed_seq`: drop the entries
        wholly at or below it. Returns how many left."""
        topic = self._topics.get(topic_name)
        if topic is None:
            return 0
        removed = topic.index.remove_upto(consumed_seq)
        remove = self._fifo.remove
        for entry in removed:
            remove(entry)
        self.evicted_pruned += len(removed)
        return len(removed)

    def evict_span(self, topic_name: str, first_seq: int, last_seq: int) -> int:
        """The topic's seq-ids first_seq..last_seq were rewritten (compaction: other
        entry boundaries): the cached entries holding any of them leave, so that the
        entries cached stay a partition of the topic's seq-ids. How many left."""
        topic = self._topics.get(topic_name)
        if topic is None:
            return 0
        index = topic.index
        doomed = [e for e in index.by_first.values() if e.first_seq <= last_seq and e.last_seq >= first_seq]
        remove = self._fifo.remove
        for entry in doomed:
            index.remove(entry.first_seq)
            remove(entry)
        return len(doomed)

    # -- topics ----------------------------------------------------------------------

    def _topic(self, topic_log):
        topic = self._topics.get(topic_log.topic)
        if topic is None or topic.topic_log is not topic_log:
            if topic is not None:
                self.drop_topic(topic_log.topic)
            topic = self._topics[topic_log.topic] = _TopicCache(topic_log)
        return topic

    def drop_topic(self, topic_name: str) -> None:
        """Forget a topic (the hub released it): its entries leave, and anything still
        waiting on it fails with TopicReleased."""
        topic = self._topics.pop(topic_name, None)
        if topic is None:
            return
        remove = self._fifo.remove
        for entry in list(topic.index.by_first.values()):
            remove(entry)
        stubs = list(topic.stubs.values())
        released = Failure(TopicReleased(f"topic {topic_name} was released"))
        if stubs:
            self._fail_stubs(topic, stubs, released)
        waiting, topic.tail = topic.tail, []
        for waiter in waiting:
            waiter.topic = None
            try:
                waiter.failed(released)
            except Exception:
                _logger.failure("telling a reader of {topic} it was released failed", topic=topic_name)

    # -- observation -------------------------------------------------------------------

    def cached_ranges(self, topic_name: str) -> list:
        """[(first_seq, last_seq)] of the topic's cached entries, ascending."""
        topic = self._topics.get(topic_name)
        if topic is None:
            return []
        return [(e.first_seq, e.last_seq) for e in topic.index.entries()]

    def describe(self, topic_name: str) -> dict:
        topic = self._topics.get(topic_name)
        if topic is None:
            return {"entries": 0, "bytes": 0, "stubs": [], "reads_in_flight": []}
        entries = topic.index.entries()
        return {
            "entries": len(entries),
            "bytes": sum(len(e.data) for e in entries),
            "first_seq": entries[0].first_seq if entries else None,
            "last_seq": entries[-1].last_seq if entries else None,
            "stubs": self._stub_seqs(topic),
            "reads_in_flight": [(r.from_seq, r.max_entries) for r in topic.reads],
        }

    @staticmethod
    def _stub_seqs(topic) -> list:
        """The seq-ids waited for: the stubs', and the tail's (counted as the stub it
        stands for: its waiters are the ones a stub at last_seq + 1 would have)."""
        seqs = list(topic.stub_seqs)
        if topic.tail:
            after = topic.topic_log.last_seq + 1
            if after not in topic.stubs:
                insort(seqs, after)
        return seqs

    @property
    def bytes(self) -> int:
        return self._fifo.currsize

    def stats(self) -> dict:
        topics = self._topics.values()
        return {
            "hits": self.hits,
            "misses": self.misses,
            "tail_waits": self.tail_waits,
            "stubs": sum(len(self._stub_seqs(t)) for t in topics),
            "stub_waiters": sum(len(s.waiters) for t in topics for s in t.stubs.values())
            + sum(len(t.tail) for t in topics),
            "reads_in_flight": sum(len(t.reads) for t in topics),
            "entries_in_flight": sum(r.max_entries for t in topics for r in t.reads),
            "range_reads": self.range_reads,
            "lookahead_reads": self.lookahead_reads,
            "entries_read": self.entries_read,
            "read_failures": self.read_failures,
            "read_seconds": round(self.read_seconds, 6),
            "published": self.published,
            "entries": len(self._fifo),
            "bytes": self._fifo.currsize,
            "max_bytes": self._fifo.maxsize,
            "evicted_fifo": self.evicted_fifo,
            "evicted_pruned": self.evicted_pruned,
            "uncacheable": self.uncacheable,
            "topics": len(self._topics),
        }
