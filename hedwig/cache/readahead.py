"""The read-ahead cache: one byte budget across every topic of a hub."""

from hedwig.config import CacheSettings


class ReadAheadCache:
    def __init__(self, clock, settings: CacheSettings | None = None):
        self.clock = clock
        self.settings = settings or CacheSettings()

    def publish(self, log, message_set: bytes, count: int, origin_region=None, origin_seq=None):
        """log.append(...), then the entry enters the cache and fills the stubs waiting on it.
        Deferred[LogEntry]."""
        raise NotImplementedError

    def stats(self) -> dict:
        raise NotImplementedError
