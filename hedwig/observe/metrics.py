"""The hub's Prometheus metrics: a prometheus-client collector over its counters.

HubCollector reads the hub when Prometheus scrapes (through a HubView) and hands
prometheus-client metric families, which it renders in the text format; nothing is
recorded per message and nothing here runs on the publish or delivery path. Each hub has
a CollectorRegistry of its own (`hub_registry`), never the process-wide default one, so
two hubs in one process (tests, benchmarks) never mix their series.

Per-topic series are bounded: the counters carry a `topic` label for the first
`[http] max_topic_labels` topics published to (hedwig.hub.stats.TopicCounters) and sum the
others under topic="_other"; the backlog gauge labels the same topics (and more, by name,
up to the cap) and sums the rest likewise. METRICS lists every family with its help:
docs/operations.md documents each, and a test holds the two together.
"""

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from hedwig.hub.stats import LATENCY_BUCKETS_US, TopicCounters

# name -> (type, help). Counter names are given without prometheus-client's "_total".
METRICS = {
    "hedwig_info": ("gauge", "Always 1: the hub's name, region and version as labels."),
    "hedwig_uptime_seconds": ("gauge", "Seconds since the hub started."),
    "hedwig_messages_published": ("counter", "Messages published by clients, by topic."),
    "hedwig_message_sets_published": (
        "counter",
        "Message sets (publish requests, one entry each) stored, by topic.",
    ),
    "hedwig_published_bytes": ("counter", "Bytes of message sets stored from clients' publishes, by topic."),
    "hedwig_publish_latency_seconds": ("histogram", "From a PUBLISH read to its entry durable and answered."),
    "hedwig_delivery_latency_seconds": (
        "histogram",
        "From an entry's publish to its delivery to a subscriber.",
    ),
    "hedwig_requests": (
        "counter",
        "Requests answered, by op and outcome (ok, redirected to the topic's owner, or failed).",
    ),
    "hedwig_messages_delivered": ("counter", "Messages delivered to subscribers (each subscriber counts)."),
    "hedwig_entries_delivered": ("counter", "Entries (message sets) delivered to subscribers."),
    "hedwig_subscription_backlog_messages": (
        "gauge",
        "Messages published and not yet consumed, by topic and subscriber.",
    ),
    "hedwig_messages_acknowledged": (
        "counter",
        "Messages of shared and pull subscriptions acknowledged one by one (ACK).",
    ),
    "hedwig_messages_redelivered": (
        "counter",
        "Messages of shared and pull subscriptions delivered again (ack timeout, NACK, member gone).",
    ),
    "hedwig_messages_dead_lettered": (
        "counter",
        "Messages published to a dead-letter topic after max_deliveries, and acknowledged.",
    ),
    "hedwig_messages_skipped_by_bound": (
        "counter",
        "Messages a subscription's message bound skipped before they were consumed.",
    ),
    "hedwig_messages_ttl_expired": (
        "counter",
        "Messages whose TTL passed before they were delivered: not delivered (dead-lettered where named).",
    ),
    "hedwig_subscriptions": ("gauge", "Durable subscriptions of the open topics."),
    "hedwig_subscriptions_attached": ("gauge", "Subscriptions attached to a connection now."),
    "hedwig_topics_owned": ("gauge", "Topics this hub owns and has open."),
    "hedwig_connections_open": ("gauge", "Client and region connections open now."),
    "hedwig_connections_opened": ("counter", "Connections accepted since the hub started."),
    "hedwig_protocol_errors": (
        "counter",
        "Connections closed for a framing error or a wrong protocol version.",
    ),
    "hedwig_partial_request_bytes": (
        "gauge",
        "Bytes of incomplete request frames buffered, over all connections.",
    ),
    "hedwig_cache_bytes": ("gauge", "Bytes of entries held by the read-ahead cache."),
    "hedwig_cache_max_bytes": ("gauge", "The read-ahead cache's byte budget ([cache] cache_bytes)."),
    "hedwig_cache_entries": ("gauge", "Entries held by the read-ahead cache."),
    "hedwig_cache_hits": ("counter", "Cache lookups answered from memory."),
    "hedwig_cache_misses": ("counter", "Cache lookups that read from the ledgers."),
    "hedwig_cache_evictions": ("counter", "Entries dropped from the cache, by reason (consumed or fifo)."),
    "hedwig_ledgers": ("gauge", "Ledgers in the ledger store."),
    "hedwig_ledger_bytes": (
        "gauge",
        "Bytes of entry data in the ledger store (of the ledgers whose size it knows).",
    ),
    "hedwig_ledgers_unsized": (
        "gauge",
        "Ledgers listed in the store whose size is not known yet (on RADOS: not loaded since the start).",
    ),
    "hedwig_ledger_append_latency_seconds": (
        "histogram",
        "From a write of entries to the ledger store until every replica acknowledged it (RADOS store only).",
    ),
    "hedwig_ledger_append_bytes": ("counter", "Bytes the ledger store wrote, framed (RADOS store only)."),
    "hedwig_ledger_append_entries": ("counter", "Entries the ledger store wrote (RADOS store only)."),
    "hedwig_ledger_append_failures": ("counter", "Writes the ledger store saw fail (RADOS store only)."),
    "hedwig_gc_runs": ("counter", "Garbage collection passes completed."),
    "hedwig_gc_ledgers_deleted": ("counter", "Ledgers deleted by garbage collection and retention."),
    "hedwig_relay_lag_messages": (
        "gauge",
        "Messages stored here not yet relayed to a neighbour region, by region.",
    ),
    "hedwig_relayed_messages": ("counter", "Messages relayed into this region and stored."),
    "hedwig_region_parent_link_up": (
        "gauge",
        "1 while the link to the parent region is up, else 0 (child regions only).",
    ),
    "hedwig_zookeeper_session_state": (
        "gauge",
        "1 for the ZooKeeper session's current state (regions on ZooKeeper only).",
    ),
    "hedwig_zookeeper_owned_topics": (
        "gauge",
        "Topics whose ZooKeeper owner znode this hub holds (regions on ZooKeeper only).",
    ),
    "hedwig_zookeeper_hubs": (
        "gauge",
        "Live hubs of the region, as this hub sees them (regions on ZooKeeper only).",
    ),
    "hedwig_zookeeper_topic_moves": (
        "counter",
        "Topics claimed here, released from here, taken over from here by another hub, and taken"
        " over here from another hub, by event (regions on ZooKeeper only).",
    ),
    "hedwig_requests_redirected": (
        "counter",
        "Requests answered NOT_RESPONSIBLE_FOR_TOPIC (another hub owns it).",
    ),
}


def _counter(name, value=None, labels=None):
    """A counter family of METRICS' help; given a value, its one unlabelled sample."""
    return CounterMetricFamily(name, METRICS[name][1], value=value, labels=labels)


def _gauge(name, value=None, labels=None):
    """A gauge family of METRICS' help; given a value, its one unlabelled sample."""
    return GaugeMetricFamily(name, METRICS[name][1], value=value, labels=labels)


def histogram_of(name: str, buckets, sum_s: float, bounds_s=None):
    """A histogram family from per-bucket counts over LATENCY_BUCKETS_US (or `bounds_s`,
    in seconds) and one past the last bound, made cumulative and given in seconds as
    Prometheus expects."""
    family = HistogramMetricFamily(name, METRICS[name][1])
    cumulative, seen = [], 0
    if bounds_s is None:
        bounds_s = [bound_us / 1e6 for bound_us in LATENCY_BUCKETS_US]
    for bound_s, count in zip(bounds_s, buckets, strict=False):
        seen += count
        cumulative.append((repr(bound_s), seen))
    cumulative.append(("+Inf", sum(buckets)))
    family.add_metric([], cumulative, sum_s)
    return family


class HubCollector:
    """Everything /metrics shows of one hub (a prometheus-client custom collector)."""

    def __init__(self, view, max_topic_labels: int):
        self.view = view
        self.max_topic_labels = max_topic_labels

    def collect(self):
        view, hub = self.view, self.view.hub
        stats = hub.stats
        identity = view.identity()
        info = _gauge("hedwig_info", labels=["name", "region", "version"])
        info.add_metric([identity["name"], identity["region"], identity["version"]], 1)
        yield info
        yield _gauge("hedwig_uptime_seconds", identity["uptime_s"])
        yield from self._published(stats.topics)
        publish = stats.ops["publish"]
        yield histogram_of("hedwig_publish_latency_seconds", publish.buckets, publish.total_us / 1e6)
        latency = stats.delivery_latency
        yield histogram_of("hedwig_delivery_latency_seconds", latency.buckets, latency.sum_s)
        requests = _counter("hedwig_requests", labels=["op", "outcome"])
        for op, op_stats in sorted(stats.ops.items()):
            requests.add_metric([op, "ok"], op_stats.ok)
            requests.add_metric([op, "failed"], op_stats.failed)
            requests.add_metric([op, "redirected"], op_stats.redirected)
        yield requests
        yield _counter("hedwig_messages_delivered", stats.messages_delivered)
        yield _counter("hedwig_entries_delivered", stats.entries_delivered)
        subscriptions = view.subscriptions()
        yield self._backlog(subscriptions, stats.topics)
        delivery = hub.delivery.stats()
        yield _counter("hedwig_messages_acknowledged", delivery["acked"])
        yield _counter("hedwig_messages_redelivered", delivery["redelivered"])
        yield _counter("hedwig_messages_dead_lettered", delivery["dead_lettered"])
        yield _counter("hedwig_messages_skipped_by_bound", delivery["skipped_by_bound"])
        yield _counter("hedwig_messages_ttl_expired", delivery["ttl_expired"])
        yield _gauge("hedwig_subscriptions", len(subscriptions))
        yield _gauge("hedwig_subscriptions_attached", delivery["attached"])
        yield _gauge("hedwig_topics_owned", len(hub.topics.open_topics()))
        yield from self._connections(hub)
        yield from self._cache(hub.cache.stats())
        ledgers = view.ledger_totals()
        yield _gauge("hedwig_ledgers", ledgers["count"])
        yield _gauge("hedwig_ledger_bytes", ledgers["bytes"])
        yield _gauge("hedwig_ledgers_unsized", ledgers["unsized"])
        yield from self._ledger_writes(getattr(view.ledgers, "write_stats", None))
        gc = view.gc
        yield _counter("hedwig_gc_runs", gc.runs)
        yield _counter("hedwig_gc_ledgers_deleted", gc.ledgers_deleted)
        yield from self._regions(view.regions(subscriptions))
        yield _counter("hedwig_requests_redirected", hub.stats.redirected)
        yield from self._zookeeper(hub.topics)

    def _published(self, counters: TopicCounters):
        messages = _counter("hedwig_messages_published", labels=["topic"])
        sets = _counter("hedwig_message_sets_published", labels=["topic"])
        size = _counter("hedwig_published_bytes", labels=["topic"])
        for topic, count, set_count, byte_count in counters.rows():
            messages.add_metric([topic], count)
            sets.add_metric([topic], set_count)
            size.add_metric([topic], byte_count)
        return messages, sets, size

    def _backlog(self, subscriptions, counters: TopicCounters):
        """Backlog by (topic, subscriber) for at most max_topic_labels topics: those the
        publish counters label, then others by name; the rest summed under _other."""
        labelled = [t for t in counters.counts if t != TopicCounters.OTHER][: self.max_topic_labels]
        chosen = set(labelled)
        for topic in sorted({row["topic"] for row in subscriptions}):
            if len(chosen) >= self.max_topic_labels:
                break
            chosen.add(topic)
        family = _gauge("hedwig_subscription_backlog_messages", labels=["topic", "subscriber"])
        other = 0
        others = False
        for row in subscriptions:
            if row["topic"] in chosen:
                family.add_metric([row["topic"], row["subscriber_id"]], row["backlog"])
            else:
                other += row["backlog"]
                others = True
        if others:
            family.add_metric([TopicCounters.OTHER, TopicCounters.OTHER], other)
        return family

    def _connections(self, hub):
        connections = list(hub.connections)
        yield _gauge("hedwig_connections_open", len(connections))
        yield _counter("hedwig_connections_opened", hub.stats.connections_opened)
        yield _counter("hedwig_protocol_errors", hub.stats.protocol_errors)
        yield _gauge("hedwig_partial_request_bytes", sum(c.buffered_bytes for c in connections))

    def _cache(self, cache: dict):
        yield _gauge("hedwig_cache_bytes", cache["bytes"])
        yield _gauge("hedwig_cache_max_bytes", cache["max_bytes"])
        yield _gauge("hedwig_cache_entries", cache["entries"])
        yield _counter("hedwig_cache_hits", cache["hits"])
        yield _counter("hedwig_cache_misses", cache["misses"])
        evictions = _counter("hedwig_cache_evictions", labels=["reason"])
        evictions.add_metric(["consumed"], cache["evicted_pruned"])
        evictions.add_metric(["fifo"], cache["evicted_fifo"])
        yield evictions

    def _ledger_writes(self, stats):
        """A store that writes to remote storage (hedwig.ledger.rados_writer.WriteStats):
        its writes' latency (a histogram over its own bounds), bytes, entries, failures."""
        if stats is None:
            return
        yield histogram_of(
            "hedwig_ledger_append_latency_seconds", stats.latency_counts, stats.latency_sum_s, stats.BUCKETS_S
        )
        yield _counter("hedwig_ledger_append_bytes", stats.bytes)
        yield _counter("hedwig_ledger_append_entries", stats.entries)
        yield _counter("hedwig_ledger_append_failures", stats.failed)

    def _regions(self, regions):
        if regions is None:
            return
        lag = _gauge("hedwig_relay_lag_messages", labels=["region"])
        for region, messages in sorted(regions["relay_lag"].items()):
            lag.add_metric([region], messages)
        yield lag
        yield _counter("hedwig_relayed_messages", regions["relayed"].get("appended_messages", 0))
        parent = regions["parent"]
        if parent is not None:
            yield _gauge("hedwig_region_parent_link_up", 1 if parent.get("state") == "relaying" else 0)

    def _zookeeper(self, topics):
        """Only for a topic manager on ZooKeeper: one that says its session's state
        (`session_state`, a kazoo KazooState name) and `owned_topics()`."""
        state = getattr(topics, "session_state", None)
        if state is None:
            return
        family = _gauge("hedwig_zookeeper_session_state", labels=["state"])
        for name in ("CONNECTED", "SUSPENDED", "LOST"):
            family.add_metric([name], 1 if str(state).upper() == name else 0)
        yield family
        owned = getattr(topics, "owned_topics", None)
        yield _gauge("hedwig_zookeeper_owned_topics", len(owned()) if owned else len(topics.open_topics()))
        zookeeper = getattr(topics, "zookeeper_stats", None)
        if zookeeper is None:
            return
        stats = zookeeper()
        yield _gauge("hedwig_zookeeper_hubs", stats["hubs"])
        moves = _counter("hedwig_zookeeper_topic_moves", labels=["event"])
        for event, key in (
            ("claims", "claims"),
            ("releases", "releases"),
            ("taken_over", "taken_over_by_others"),
            ("taken_over_here", "taken_over_here"),
        ):
            moves.add_metric([event], stats[key])
        yield moves


def hub_registry(view, max_topic_labels: int) -> CollectorRegistry:
    """A registry of the hub's own, holding its HubCollector only."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(HubCollector(view, max_topic_labels))
    return registry
