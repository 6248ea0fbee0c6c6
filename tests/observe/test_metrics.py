"""/metrics' collector over a hub of real parts (tests/hub/harness.py: in-memory ledgers,
SQLite metadata, StringTransport peers on a task.Clock): what it counts, per entry, with
the topic label cap, in a registry of the hub's own."""

from pathlib import Path

import pytest
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from hedwig.config.settings import Config
from hedwig.observe.metrics import METRICS, hub_registry
from hedwig.observe.view import HubView
from hedwig.protocol import Op
from hedwig.protocol.requests import encode_consume, encode_subscribe
from tests.hub.harness import HubHarness

DOCS = Path(__file__).resolve().parents[2] / "docs"


def scrape(harness, max_topic_labels=100) -> dict:
    """{(sample name, sorted labels): value} of one scrape, through the text format."""
    view = HubView(harness.hub, harness.ledgers, harness.parts.gc)
    text = generate_latest(hub_registry(view, max_topic_labels)).decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def config(max_topic_labels=100) -> Config:
    c = Config()
    c.http.max_topic_labels = max_topic_labels
    return c


def test_published_counters_count_messages_sets_and_bytes_per_topic(tmp_path):
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    peer.publish("orders", [b"a", b"bb", b"ccc"])
    peer.publish("orders", [b"d"])
    peer.publish("audit", [b"x"] * 10)
    harness.clock.advance(0)
    assert all(r.status == 0 for _id, r in peer.responses())
    samples = scrape(harness)
    assert samples[("hedwig_messages_published_total", (("topic", "orders"),))] == 4
    assert samples[("hedwig_message_sets_published_total", (("topic", "orders"),))] == 2
    assert samples[("hedwig_messages_published_total", (("topic", "audit"),))] == 10
    assert samples[("hedwig_message_sets_published_total", (("topic", "audit"),))] == 1
    assert samples[("hedwig_published_bytes_total", (("topic", "audit"),))] > 10
    assert samples[("hedwig_publish_latency_seconds_count", ())] == 3
    assert samples[("hedwig_requests_total", (("op", "publish"), ("outcome", "ok")))] == 3
    assert samples[("hedwig_ledgers", ())] == 2
    assert samples[("hedwig_ledger_bytes", ())] == harness.ledgers.ledger_bytes(
        harness.ledgers.list_ledgers()[0]
    ) + harness.ledgers.ledger_bytes(harness.ledgers.list_ledgers()[1])
    assert samples[("hedwig_topics_owned", ())] == 2
    assert samples[("hedwig_connections_open", ())] == 1


def test_topics_past_the_cap_are_summed_under_other_and_keep_their_series(tmp_path):
    harness = HubHarness(tmp_path, config(max_topic_labels=2))
    peer = harness.connect()
    for topic, count in (("t1", 1), ("t2", 2), ("t3", 3), ("t4", 4), ("t1", 5)):
        peer.publish(topic, [b"m"] * count)
    harness.clock.advance(0)
    samples = scrape(harness, max_topic_labels=2)
    published = {
        dict(labels)["topic"]: value
        for (name, labels), value in samples.items()
        if name == "hedwig_messages_published_total"
    }
    assert published == {"t1": 6, "t2": 2, "_other": 7}
    sets = {
        dict(labels)["topic"]: value
        for (name, labels), value in samples.items()
        if name == "hedwig_message_sets_published_total"
    }
    assert sets == {"t1": 2, "t2": 1, "_other": 2}


def test_counters_move_once_per_entry_not_per_message(tmp_path):
    """A publish of 1,000 messages is one entry: one set, one latency observation."""
    harness = HubHarness(tmp_path)
    peer = harness.connect()
    peer.publish("bulk", [b"m"] * 1000)
    harness.clock.advance(0)
    samples = scrape(harness)
    assert samples[("hedwig_messages_published_total", (("topic", "bulk"),))] == 1000
    assert samples[("hedwig_message_sets_published_total", (("topic", "bulk"),))] == 1
    assert samples[("hedwig_publish_latency_seconds_count", ())] == 1


def test_delivery_latency_backlog_and_delivered_counts(tmp_path):
    harness = HubHarness(tmp_path)
    publisher, subscriber = harness.connect(), harness.connect()
    subscriber.send(Op.SUBSCRIBE, encode_subscribe("news", "reader"))
    harness.clock.advance(0)
    [(_id, reply)] = subscriber.responses()
    assert reply.status == 0, reply
    harness.clock.advance(0.25)  # the entry is published a quarter second later ...
    publisher.publish("news", [b"a", b"b", b"c"])
    harness.clock.advance(0)
    samples = scrape(harness)
    assert samples[("hedwig_messages_delivered_total", ())] == 3
    assert samples[("hedwig_entries_delivered_total", ())] == 1
    assert samples[("hedwig_delivery_latency_seconds_count", ())] == 1
    backlog = ("hedwig_subscription_backlog_messages", (("subscriber", "reader"), ("topic", "news")))
    assert samples[backlog] == 3
    assert samples[("hedwig_subscriptions", ())] == 1
    assert samples[("hedwig_subscriptions_attached", ())] == 1
    subscriber.send(Op.CONSUME, encode_consume(1, 3))
    harness.clock.advance(0)
    assert scrape(harness)[backlog] == 0


def test_latency_buckets_are_cumulative_seconds(tmp_path):
    harness = HubHarness(tmp_path)
    stats = harness.hub.stats.ops["publish"]
    stats.record(True, 0.0003)  # 300 us: the 500 us bucket
    stats.record(True, 0.02)  # 20 ms: the 25 ms bucket
    samples = scrape(harness)
    bucket = "hedwig_publish_latency_seconds_bucket"
    assert samples[(bucket, (("le", "0.00025"),))] == 0
    assert samples[(bucket, (("le", "0.0005"),))] == 1
    assert samples[(bucket, (("le", "0.025"),))] == 2
    assert samples[(bucket, (("le", "+Inf"),))] == 2
    assert samples[("hedwig_publish_latency_seconds_sum", ())] == pytest.approx(0.0203)


def test_each_hub_has_its_own_registry_and_the_global_one_holds_none(tmp_path):
    first, second = HubHarness(tmp_path / "a"), HubHarness(tmp_path / "b")
    first.connect().publish("only-first", [b"x"])
    first.clock.advance(0)
    assert ("hedwig_messages_published_total", (("topic", "only-first"),)) in scrape(first)
    assert ("hedwig_messages_published_total", (("topic", "only-first"),)) not in scrape(second)
    assert not [m for m in REGISTRY.collect() if m.name.startswith("hedwig")]


def test_every_metric_is_exposed_or_conditional_and_documented(tmp_path):
    harness = HubHarness(tmp_path, relays=True)
    peer = harness.connect()
    peer.send(Op.SUBSCRIBE, encode_subscribe("t", "reader"))
    peer.publish("t", [b"m"])
    harness.clock.advance(0)
    names = {name for name, _labels in scrape(harness)}
    conditional = {  # only with relay subscriptions, with a parent region, or on ZooKeeper
        "hedwig_relay_lag_messages",
        "hedwig_region_parent_link_up",
        "hedwig_zookeeper_session_state",
        "hedwig_zookeeper_owned_topics",
        "hedwig_zookeeper_hubs",
        "hedwig_zookeeper_topic_moves",
        "hedwig_ledger_append_latency_seconds",  # (a RADOS store's: tests/rados/test_faults.py)
        "hedwig_ledger_append_bytes",
        "hedwig_ledger_append_entries",
        "hedwig_ledger_append_failures",
    }
    for metric in METRICS:
        exposed = {f"{metric}_total", f"{metric}_count", metric}
        assert metric in conditional or names & exposed, metric
    operations = (DOCS / "operations.md").read_text()
    missing = [m for m in METRICS if m not in operations]
    assert missing == []


def test_the_grafana_dashboard_asks_only_for_metrics_the_hub_has():
    import json
    import re

    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    used = {m for e in exprs for m in re.findall(r"\bhedwig_[a-z_]+", e)}
    known = set()
    for name, (kind, _help) in METRICS.items():
        known |= {name, f"{name}_total"} if kind == "counter" else {name}
        if kind == "histogram":
            known |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    assert used - known == set()
    assert {"hedwig_messages_published_total", "hedwig_publish_latency_seconds_bucket"} <= used


def test_relay_lag_is_the_backlog_of_each_neighbours_relay_subscriptions(tmp_path):
    from hedwig.region.settings import relay_subscriber_id

    harness = HubHarness(tmp_path, relays=True)
    link = harness.connect()
    link.connection.is_hub_peer = True  # (what REGION_LINK makes a child's connection)
    for topic in ("a", "b"):
        link.send(Op.SUBSCRIBE, encode_subscribe(topic, relay_subscriber_id("paris"), window=1))
    harness.clock.advance(0)
    publisher = harness.connect()
    publisher.publish("a", [b"m"] * 3)
    publisher.publish("b", [b"m"] * 4)
    harness.clock.advance(0)
    assert scrape(harness)[("hedwig_relay_lag_messages", (("region", "paris"),))] == 7


def test_work_queue_counters_count_acks_redeliveries_dead_letters_and_bound_skips(tmp_path):
    from hedwig.protocol.work_requests import encode_ranges

    harness = HubHarness(tmp_path)
    peer = harness.connect()
    peer.send(Op.SUBSCRIBE, encode_subscribe("jobs", "w", kind="shared", max_deliveries=2))
    peer.send(Op.SUBSCRIBE, encode_subscribe("jobs", "slow", deliver=False, message_bound=3))
    harness.clock.advance(0)
    handle = next(r.value.handle for _id, r in peer.split()[0] if r.op == Op.SUBSCRIBE)
    peer.publish("jobs", [b"a", b"b", b"c", b"d", b"e"])
    harness.clock.advance(0)
    peer.send(Op.ACK, encode_ranges(handle, [(1, 3)]))
    peer.send(Op.NACK, encode_ranges(handle, [(4, 4)]))  # delivered again ...
    harness.clock.advance(0)
    peer.send(Op.NACK, encode_ranges(handle, [(4, 4)]))  # ... then dead-lettered
    harness.clock.advance(0)
    samples = scrape(harness)
    assert samples[("hedwig_messages_acknowledged_total", ())] == 3
    assert samples[("hedwig_messages_redelivered_total", ())] == 1
    assert samples[("hedwig_messages_dead_lettered_total", ())] == 1
    assert samples[("hedwig_messages_skipped_by_bound_total", ())] == 2
