"""The read-ahead cache between delivery and the topic logs."""

from hedwig.cache.cached_log import CachedTopicLog
from hedwig.cache.interface import ICachedTopicLog
from hedwig.cache.readahead import ReadAheadCache, TopicReleased

__all__ = ["CachedTopicLog", "ICachedTopicLog", "ReadAheadCache", "TopicReleased"]
