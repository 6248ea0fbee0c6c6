"""The cache seam: a topic log with the read-ahead cache in it, as delivery reads it."""

from zope.interface import Attribute

from hedwig.topiclog.interface import ITopicLog


class ICachedTopicLog(ITopicLog):
    """An ITopicLog whose appends, once acknowledged, enter the hub's read-ahead cache and
    wake the readers waiting on their seq-ids (push), and which serves readers by seq-id
    from that cache, reading ahead from the ledgers on a miss (pull). The cache learns of
    every entry from the decorated log itself (ITopicLog.acknowledge_to), so its appends
    are the decorated log's own, with no step of the cache's."""

    cache = Attribute("the hub's ReadAheadCache (one byte budget for every topic)")
    inner = Attribute("the ITopicLog it decorates")

    def get(seq):
        """The entry holding `seq`: a LogEntry when cached, else a Deferred[LogEntry]
        (cancel it to stop waiting). Beyond last_seq it fires when a publish assigns
        `seq`; published but not cached, when the read-ahead read lands. A failed ledger
        read fails it; the caller retries after the cache's retry_backoff_ms."""

    def prune(consumed_seq):
        """Every subscriber consumed up to `consumed_seq`: its entries leave the cache.
        How many entries left."""

    def release():
        """The hub gives the topic up: its entries leave the cache and every reader still
        waiting fails with TopicReleased."""
