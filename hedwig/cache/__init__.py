"""The read-ahead cache between delivery and the topic logs."""

from hedwig.cache.readahead import ReadAheadCache, TopicReleased

__all__ = ["ReadAheadCache", "TopicReleased"]
