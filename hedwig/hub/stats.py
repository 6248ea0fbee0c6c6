"""Hub counters: per-op success and failure counts with a latency histogram (Hedwig's
per-operation stats), and what the hub moved (messages published, entries delivered).

Recording is a few integer additions per request, never per message, so it stays on
the hot path; percentiles come from fixed buckets when someone asks for STATS.
"""

from bisect import bisect_left

from hedwig.protocol.ops import Op

# Upper bounds of the latency buckets, microseconds; a last bucket catches the rest.
LATENCY_BUCKETS_US = (
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
)  # fmt: skip


def op_name(op: int) -> str:
    """How STATS names an op: "publish", "read_range", ... ("op_N" for an unnamed one)."""
    try:
        return Op(op).name.lower()
    except ValueError:
        return f"op_{op}"


class OpStats:
    """Counts and latencies of one operation: answered, failed, or redirected to the
    topic's owner (a region's routine, which the client follows: not a failure)."""

    __slots__ = ("ok", "failed", "redirected", "buckets", "total_us", "max_us")

    def __init__(self):
        self.ok = 0
        self.failed = 0
        self.redirected = 0
        self.buckets = [0] * (len(LATENCY_BUCKETS_US) + 1)
        self.total_us = 0
        self.max_us = 0

    def record(self, ok: bool, latency_s: float, redirected: bool = False) -> None:
        if ok:
            self.ok += 1
        elif redirected:
            self.redirected += 1
        else:
            self.failed += 1
        latency_us = int(latency_s * 1e6)
        self.buckets[bisect_left(LATENCY_BUCKETS_US, latency_us)] += 1
        self.total_us += latency_us
        if latency_us > self.max_us:
            self.max_us = latency_us

    def percentile_us(self, fraction: float) -> int:
        """The bucket bound under which `fraction` of the requests finished (max_us for
        the last bucket): an upper estimate, exact to the bucket."""
        count = self.ok + self.failed + self.redirected
        if not count:
            return 0
        wanted = fraction * count
        seen = 0
        for bound, n in zip(LATENCY_BUCKETS_US, self.buckets, strict=False):
            seen += n
            if seen >= wanted:
                return min(bound, self.max_us)
        return self.max_us

    def snapshot(self) -> dict:
        count = self.ok + self.failed + self.redirected
        return {
            "ok": self.ok,
            "failed": self.failed,
            "redirected": self.redirected,
            "latency_us": {
                "count": count,
                "mean": round(self.total_us / count, 1) if count else 0,
                "p50": self.percentile_us(0.5),
                "p99": self.percentile_us(0.99),
                "max": self.max_us,
            },
        }


class LatencyHistogram:
    """Latencies (seconds) counted in the fixed buckets of LATENCY_BUCKETS_US, for a path
    that observes one per entry: observing is a bisect and two additions (no count, no
    maximum: the count is the buckets' sum, read when someone asks)."""

    __slots__ = ("bounds_s", "buckets", "sum_s")

    def __init__(self):
        self.bounds_s = tuple(bound / 1e6 for bound in LATENCY_BUCKETS_US)
        self.buckets = [0] * (len(LATENCY_BUCKETS_US) + 1)
        self.sum_s = 0.0

    def observe(self, latency_s: float) -> None:
        self.buckets[bisect_left(self.bounds_s, latency_s)] += 1
        self.sum_s += latency_s


class TopicCounters:
    """Messages, message sets and bytes published, per topic, for /metrics.

    The first `max_topics` topics published to are counted under their own name, every
    later one together under OTHER: the memory held and the exposition stay bounded
    however many topics clients make, and each series only grows (a topic never moves
    between a label of its own and OTHER), as a Prometheus counter must. Updated once
    per stored entry, never per message."""

    OTHER = "_other"

    __slots__ = ("max_topics", "counts", "other")

    def __init__(self, max_topics: int = 100):
        self.max_topics = max_topics
        self.counts = {}  # topic -> [messages, message sets, bytes]
        self.other = [0, 0, 0]

    def add(self, topic: str, messages: int, size: int) -> None:
        row = self.counts.get(topic)
        if row is None:
            if len(self.counts) >= self.max_topics:
                row = self.other
            else:
                row = self.counts[topic] = [0, 0, 0]
        row[0] += messages
        row[1] += 1
        row[2] += size

    def rows(self):
        """(topic, messages, message sets, bytes), the labelled topics then OTHER."""
        for topic, (messages, sets, size) in self.counts.items():
            yield topic, messages, sets, size
        if self.other[1]:
            yield (self.OTHER, *self.other)


class HubStats:
    """Every counter of one hub, by op name (lower case, as STATS reports them)."""

    def __init__(self, op_names, max_topic_labels: int = 100):
        self.ops = {name: OpStats() for name in op_names}
        self.publish_ops = self.ops.setdefault("publish", OpStats())  # (the publish path's own)
        self.topics = TopicCounters(max_topic_labels)
        # Publish-to-delivery latency of every entry written to a subscriber.
        self.delivery_latency = LatencyHistogram()
        self.connections_opened = 0
        self.connections_closed = 0
        self.protocol_errors = 0  # framing errors and wrong versions: connections closed by the hub
        self.unknown_operations = 0
        self.frame_timeouts = 0  # connections closed for a frame that stopped arriving
        self.hello_timeouts = 0  # connections closed for saying no HELLO in time
        self.entries_delivered = 0
        self.messages_delivered = 0
        self.redirected = 0  # requests answered NOT_RESPONSIBLE_FOR_TOPIC (Hedwig's "redirected")

    @property
    def messages_published(self) -> int:
        """Messages of every client's set stored (the topics' counts, summed when read)."""
        return sum(row[0] for row in self.topics.counts.values()) + self.topics.other[0]

    @property
    def bytes_published(self) -> int:
        return sum(row[2] for row in self.topics.counts.values()) + self.topics.other[2]

    def entry_published(self, topic: str, entry) -> None:
        """A client's set stored as `entry` (a PUBLISH, or an idempotent publish that was
        not a repeat): counted once per entry, never per message."""
        self.topics.add(topic, entry.last_seq - entry.first_seq + 1, len(entry.data))

    def publish_stored(self, topic: str, entry, latency_s: float) -> None:
        """A PUBLISH answered: its request counted, its entry too (entry_published)."""
        self.publish_ops.record(True, latency_s)
        self.entry_published(topic, entry)

    def record(self, name: str, ok: bool, latency_s: float, redirected: bool = False) -> None:
        stats = self.ops.get(name)
        if stats is None:  # an op registered beyond the core protocol
            stats = self.ops[name] = OpStats()
        stats.record(ok, latency_s, redirected)

    def snapshot(self) -> dict:
        return {
            "connections": {
                "opened": self.connections_opened,
                "closed": self.connections_closed,
                "open": self.connections_opened - self.connections_closed,
                "protocol_errors": self.protocol_errors,
                "unknown_operations": self.unknown_operations,
                "frame_timeouts": self.frame_timeouts,
                "hello_timeouts": self.hello_timeouts,
            },
            "published": {"messages": self.messages_published, "bytes": self.bytes_published},
            "delivered": {"entries": self.entries_delivered, "messages": self.messages_delivered},
            "redirected": self.redirected,
            "ops": {name: stats.snapshot() for name, stats in self.ops.items()},
        }
