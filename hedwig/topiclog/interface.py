"""The topic-log seam: a topic's single writer over its ledgers, as the hub sees it.

TopicLog (topic_log.py) implements it over an ILedgerStore and an IMetadataStore; the
read-ahead cache (hedwig.cache.CachedTopicLog) implements it again by decorating one, as
Hedwig's ReadAheadCache decorates its persistence manager. The hub, delivery, region
relays and GC hold an ITopicLog and never care whether a cache sits in it.
"""

from zope.interface import Attribute, Interface


class ITopicLog(Interface):
    """A named, totally ordered log of message sets with dense seq-ids from 1.

    One writer: appends are made on the reactor thread, seq-ids are assigned in call
    order, and each append's Deferred fires in call order once the entry is durable under
    the ledger's fsync policy. An append refused at once consumes no seq-ids (no gap).
    Reads never block: they return Deferreds. Failures are the exceptions of
    hedwig.topiclog.errors (LogClosed, LogFailed, TopicFenced, SeqNotRetained, LogCorrupt)
    and the ledger's (LedgerStoreFull)."""

    topic = Attribute("the topic's name (str)")
    first_seq = Attribute("the first seq-id still kept (older ones were collected)")
    last_seq = Attribute("the last seq-id assigned (0: nothing yet)")
    is_open = Attribute("True while the log takes appends")
    partitions = Attribute("the partitions of the topic it is partition 0 of (1: a plain topic)")
    ttl_ms = Attribute("the topic's default TTL in ms, for messages without their own (0: none)")

    def append(message_set, count, origin_region=None, origin_seq=None, via=None, producer=None):
        """Append one entry of `count` messages (an encoded message set, stored as it
        is). Deferred[LogEntry] once durable. `origin_region`/`origin_seq`: where a
        relayed set was first published; `via`: the neighbour region it came from;
        `producer`: (producer id, sequence) of an idempotent publish, kept in the entry
        header."""

    def append_now(message_set, count, origin_region=None, origin_seq=None, via=None, producer=None):
        """append, answered within the call when the entry is acknowledged at once (the
        ledger store acknowledges at once and no earlier append is still in flight): the
        LogEntry itself; otherwise append's Deferred[LogEntry], failures included. The
        publish path's: an acknowledgement costs no Deferred."""

    def acknowledge_to(listener):
        """Call listener(entry) with each entry as it is acknowledged, in seq-id order,
        before the append that stored it is answered (append_now's return, or its
        Deferred's callbacks), however it was appended; None: nobody. One listener: the
        hub's read-ahead cache (hedwig.cache), which so learns of every entry, answered
        at once or later, without a step of its own in the append path."""

    def read(from_seq, max_entries, max_bytes):
        """Deferred[list of LogEntry]: the entry holding `from_seq` and those after it,
        at most `max_entries`, within `max_bytes` (the first always); [] past the end;
        SeqNotRetained before first_seq."""

    def find_by_time(time_us):
        """Deferred[int]: the first seq-id published at or after `time_us` (last_seq + 1
        when none). A search of the ledgers' publish times, which a remote store reads."""

    def roll_if_aged():
        """Deferred[bool]: close the open ledger and start another if its first entry is
        older than max_ledger_age_s (so GC and retention reach a quiet topic)."""

    def collect_garbage(min_consumed_seq):
        """Deferred[int]: delete whole closed ledgers every subscriber has consumed, and
        those retention drops; never the open ledger. How many were deleted."""

    def make_compacted():
        """Deferred[bool]: make the topic a compacted one from now on (its record says so
        once this fires); whether it was not before."""

    def set_partitions(count):
        """Deferred[int]: the topic has `count` partitions from now on (its record says so
        once this fires: hedwig.protocol.partitions); the count it had."""

    def describe():
        """A dict for DESCRIBE_TOPIC: bounds, ledgers, sizes."""

    def close():
        """Deferred: stop taking appends, let those accepted finish, close the ledger."""
