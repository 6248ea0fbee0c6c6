"""A topic log with the read-ahead cache in it: Hedwig's ReadAheadCache as a decorator.

The topic manager hands out these, never the bare TopicLog, so the hub, delivery, region
relays and GC see one `append` path and do not care that a cache sits in it: an append
goes to the decorated log and, once durable, its entry enters the cache and fills the
stubs waiting on its seq-ids (their cursors deliver before the publisher's reply, which
is the next callback). Delivery reads with `get(seq)`.

The decorator adds no Deferred and no per-message work: `append` adds one callback to the
log's own Deferred, and the bounds are read straight from the decorated log.
"""

from operator import attrgetter

from zope.interface import implementer

from hedwig.cache.interface import ICachedTopicLog
from hedwig.topiclog.entry import LogEntry


@implementer(ICachedTopicLog)
class CachedTopicLog:
    __slots__ = ("cache", "inner", "topic")

    def __init__(self, inner, cache):
        self.inner = inner
        self.cache = cache
        self.topic = inner.topic

    # -- the bounds, read from the decorated log (attrgetter: C-speed, read per delivery) ----

    first_seq = property(attrgetter("inner.first_seq"), doc="The decorated log's first seq-id.")
    last_seq = property(attrgetter("inner.last_seq"), doc="The decorated log's last seq-id.")
    is_open = property(attrgetter("inner.is_open"), doc="Whether the decorated log takes appends.")

    # -- through the cache ----------------------------------------------------------------

    def append(self, message_set, count, origin_region=None, origin_seq=None, via=None, producer=None):
        return self.cache.publish(self.inner, message_set, count, origin_region, origin_seq, via, producer)

    def append_now(self, message_set, count, origin_region=None, origin_seq=None, via=None, producer=None):
        """ReadAheadCache.publish_now: the decorated log's append_now, its entry cached."""
        inner = self.inner
        stored = inner.append_now(message_set, count, origin_region, origin_seq, via, producer)
        if stored.__class__ is LogEntry:
            return self.cache.on_stored(stored, inner)
        return stored.addCallback(self.cache.on_stored, inner)

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

    def describe(self) -> dict:
        return self.inner.describe()

    def close(self):
        return self.inner.close()

    def __repr__(self) -> str:
        return f"CachedTopicLog({self.inner!r})"
