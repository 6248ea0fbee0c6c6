"""A topic log with the read-ahead cache in it: Hedwig's ReadAheadCache as a decorator.

The topic manager hands out these, never the bare TopicLog, so the hub, delivery, region
relays and GC see one `append` path and do not care that a cache sits in it: an append
goes to the decorated log and, once acknowledged, its entry enters the cache and fills
the stubs waiting on its seq-ids (their cursors deliver before the publisher's reply).
Delivery reads with `get(seq)`.

The cache adds no step to an append: it listens to the decorated log's acknowledgements
(ITopicLog.acknowledge_to, set by ReadAheadCache.wrap), so `append` and `append_now`
here are the decorated log's own, bound to the decorator (no call through it), and the
bounds are read straight from the decorated log.
"""

from operator import attrgetter

from zope.interface import implementer

from hedwig.cache.interface import ICachedTopicLog


@implementer(ICachedTopicLog)
class CachedTopicLog:
    def __init__(self, inner, cache):
        self.inner = inner
        self.cache = cache
        self.topic = inner.topic
        # The appends are the decorated log's (the cache hears of their entries from it).
        self.append = inner.append
        self.append_now = inner.append_now

    # -- the bounds, read from the decorated log (attrgetter: C-speed, read per delivery) ----

    first_seq = property(attrgetter("inner.first_seq"), doc="The decorated log's first seq-id.")
    last_seq = property(attrgetter("inner.last_seq"), doc="The decorated log's last seq-id.")
    is_open = property(attrgetter("inner.is_open"), doc="Whether the decorated log takes appends.")
    compaction = property(attrgetter("inner.compaction"), doc="Whether the topic is compacted.")
    partitions = property(attrgetter("inner.partitions"), doc="The topic's partitions.")
    ttl_ms = property(attrgetter("inner.ttl_ms"), doc="The topic's default TTL in ms (0: none).")

    # -- appends: the decorated log's, bound in __init__ (these say what they are) ----------

    def append(self, message_set, count, origin_region=None, origin_seq=None, via=None, producer=None):
        """The decorated log's append; its entry enters the cache once acknowledged."""
        return self.inner.append(message_set, count, origin_region, origin_seq, via, producer)

    def append_now(self, message_set, count, origin_region=None, origin_seq=None, via=None, producer=None):
        """The decorated log's append_now; its entry enters the cache once acknowledged
        (before this returns, when it is acknowledged at once)."""
        return self.inner.append_now(message_set, count, origin_region, origin_seq, via, producer)

    def acknowledge_to(self, listener) -> None:
        """(The cache listens to the decorated log; nobody else does.)"""
        raise TypeError("a cached topic log's acknowledgements go to its cache")

    # -- through the cache ----------------------------------------------------------------

    def get(self, seq: int):
        return self.cache.get(self.inner, seq)

    def prune(self, consumed_seq: int) -> int:
        return self.cache.prune(self.topic, consumed_seq)

    def release(self) -> None:
        self.cache.forget(self)

    # -- straight to the decorated log ----------------------------------------------------

    def read(self, from_seq, max_entries, max_bytes):
        return self.inner.read(from_seq, max_entries, max_bytes)

    def find_by_time(self, time_us):
        return self.inner.find_by_time(time_us)

    def roll_if_aged(self):
        return self.inner.roll_if_aged()

    def collect_garbage(self, min_consumed_seq):
        return self.inner.collect_garbage(min_consumed_seq)

    def compact(self, lag_s=None, explicit=False):
        """The log's compaction; then the cached entries of the span it rewrote leave
        (their boundaries are not the new ledgers')."""

        def evict(report):
            span = report.get("span")
            if span:
                self.cache.evict_span(self.topic, span[0], span[1])
            return report

        return self.inner.compact(lag_s, explicit).addCallback(evict)

    def make_compacted(self):
        return self.inner.make_compacted()

    def set_partitions(self, count):
        return self.inner.set_partitions(count)

    def describe(self) -> dict:
        return self.inner.describe()

    def close(self):
        return self.inner.close()

    def __repr__(self) -> str:
        return f"CachedTopicLog({self.inner!r})"
