"""Periodic garbage collection driven by consume pointers (and rolling quiet topics by
age, so it reaches them), and the hub's counters."""

import pytest

from hedwig.config.settings import Config
from hedwig.hub.gc import GarbageCollector
from hedwig.hub.stats import OpStats
from hedwig.protocol import Op, Status
from hedwig.protocol.requests import (
    encode_close_subscription,
    encode_consume,
    encode_read_range,
    encode_subscribe,
)
from tests.hub.harness import HubHarness


@pytest.fixture
def harness(tmp_path):
    config = Config()
    config.log.max_ledger_entries = 2  # a ledger every two publishes
    config.log.gc_interval_s = 60
    return HubHarness(tmp_path, config)


def consume_and_close(peer, clock, subscriber, seq):
    peer.send(Op.SUBSCRIBE, encode_subscribe("t", subscriber, start="earliest"))
    clock.advance(0)
    responses, _, _ = peer.split()
    handle = responses[0][1].value.handle
    peer.send(Op.CONSUME, encode_consume(handle, seq))
    peer.send(Op.CLOSE_SUBSCRIPTION, encode_close_subscription(handle))  # persists the pointer
    assert peer.responses()[0][1].status is Status.SUCCESS


def test_gc_deletes_ledgers_every_subscriber_consumed(harness):
    peer = harness.connect()
    for i in range(6):
        peer.publish("t", [b"%d" % i])
    peer.responses()
    consume_and_close(peer, harness.clock, "fast", 5)
    consume_and_close(peer, harness.clock, "slow", 3)
    gc = GarbageCollector(harness.topics, harness.delivery, harness.clock, 60)
    gc.startService()
    ledgers_before = len(harness.logs.get("t").describe()["ledgers"])
    harness.clock.advance(59)
    assert gc.runs == 0
    harness.clock.advance(1)
    assert gc.runs == 1 and gc.ledgers_deleted == 1  # only seq-ids 1..2: "slow" consumed 3
    described = harness.logs.get("t").describe()
    assert described["first_seq"] == 3 and len(described["ledgers"]) == ledgers_before - 1
    peer.send(Op.READ_RANGE, encode_read_range("t", 1))
    [(_, response)] = peer.responses()
    assert response.status is Status.SEQ_OUT_OF_RANGE and "3" in response.message
    gc.stopService()
    harness.clock.advance(600)
    assert gc.runs == 1


def test_gc_keeps_everything_while_a_subscriber_has_consumed_nothing(harness):
    peer = harness.connect()
    for i in range(6):
        peer.publish("t", [b"%d" % i])
    peer.responses()
    consume_and_close(peer, harness.clock, "fast", 6)
    consume_and_close(peer, harness.clock, "idle", 0)
    gc = GarbageCollector(harness.topics, harness.delivery, harness.clock, 60)
    assert gc.collect().result == 0
    assert harness.logs.get("t").describe()["first_seq"] == 1


@pytest.fixture
def quiet_harness(tmp_path):
    """Ledgers roll only by age (10 min) and on acquire; GC every minute."""
    config = Config()
    config.log.max_ledger_age_s = 600
    config.log.gc_interval_s = 60
    return HubHarness(tmp_path, config)


def described(harness, topic="t"):
    info = harness.logs.get(topic).describe()
    return info["first_seq"], info["last_seq"], [(r["first_seq"], r["last_seq"]) for r in info["ledgers"]]


def test_gc_pass_rolls_a_quiet_topic_by_age_and_deletes_what_every_subscriber_consumed(quiet_harness):
    harness = quiet_harness
    peer = harness.connect()
    for i in range(3):
        peer.publish("t", [b"%d" % i])
    peer.responses()
    consume_and_close(peer, harness.clock, "s", 3)
    gc = GarbageCollector(harness.topics, harness.delivery, harness.clock, 60)
    gc.startService()
    for _ in range(10):  # passes at 60 s ... 600 s: the first entry is not older than 600 s
        harness.clock.advance(60)
    assert (gc.runs, gc.ledgers_rolled, gc.ledgers_deleted) == (10, 0, 0)
    assert described(harness) == (1, 3, [(1, 3)])  # everything consumed, all of it kept
    harness.clock.advance(60)
    # One pass rolls the open ledger and deletes it, consumed as it is.
    assert (gc.runs, gc.ledgers_rolled, gc.ledgers_deleted) == (11, 1, 1)
    assert described(harness) == (4, 3, [(4, 3)])
    peer.send(Op.READ_RANGE, encode_read_range("t", 1))
    [(_, response)] = peer.responses()
    assert response.status is Status.SEQ_OUT_OF_RANGE
    for _ in range(30):  # the new ledger is empty: it never rolls
        harness.clock.advance(60)
    assert (gc.ledgers_rolled, gc.ledgers_deleted) == (1, 1)
    peer.publish("t", [b"after"])
    [(_, response)] = peer.responses()
    assert response.status is Status.SUCCESS and response.value.first_seq == 4
    gc.stopService()


def test_gc_pass_keeps_a_quiet_topics_ledger_while_a_subscriber_still_needs_it(quiet_harness):
    harness = quiet_harness
    peer = harness.connect()
    for i in range(3):
        peer.publish("t", [b"%d" % i])
    peer.responses()
    consume_and_close(peer, harness.clock, "done", 3)
    consume_and_close(peer, harness.clock, "behind", 2)
    gc = GarbageCollector(harness.topics, harness.delivery, harness.clock, 60)
    gc.startService()
    harness.clock.advance(24 * 3600)
    assert (gc.ledgers_rolled, gc.ledgers_deleted) == (1, 0)
    assert described(harness) == (1, 3, [(1, 3), (4, 3)])
    peer.send(Op.READ_RANGE, encode_read_range("t", 3))
    [(_, response)] = peer.responses()
    assert response.status is Status.SUCCESS
    gc.stopService()


def test_gc_pass_applies_retention_secs_to_a_quiet_topic(quiet_harness):
    harness = quiet_harness
    harness.config.log.retention_secs = 3600
    peer = harness.connect()
    for i in range(2):
        peer.publish("t", [b"%d" % i])
    peer.responses()  # no subscriber: only retention removes anything
    gc = GarbageCollector(harness.topics, harness.delivery, harness.clock, 60)
    gc.startService()
    harness.clock.advance(660)
    assert (gc.ledgers_rolled, gc.ledgers_deleted) == (1, 0)  # rolled, but not an hour old
    harness.clock.advance(3600 - 660)  # the pass at exactly one hour: not older than it
    assert gc.ledgers_deleted == 0 and described(harness) == (1, 2, [(1, 2), (3, 2)])
    harness.clock.advance(60)
    assert gc.ledgers_deleted == 1 and described(harness) == (3, 2, [(3, 2)])
    gc.stopService()


def test_publish_latency_is_measured_on_the_hub_clock(harness):
    peer = harness.connect()
    peer.publish("t", [b"warm"])
    harness.ledgers.hold_acks()
    peer.publish("t", [b"x"])
    harness.clock.advance(0.003)
    harness.ledgers.release_acks()
    peer.responses()
    latency = harness.hub.stats.ops["publish"].snapshot()["latency_us"]
    assert latency["count"] == 2 and latency["max"] == 3000 and latency["p99"] == 3000
    assert latency["p50"] == 50  # the first publish took no clock time: the lowest bucket


def test_percentiles_come_from_bucket_bounds():
    stats = OpStats()
    for latency_us in [10] * 90 + [700] * 9 + [40_000]:
        stats.record(True, latency_us / 1e6)
    stats.record(False, 0.0)
    snapshot = stats.snapshot()
    assert (snapshot["ok"], snapshot["failed"]) == (100, 1)
    assert snapshot["latency_us"]["p50"] == 50  # the bucket bound, an upper estimate
    assert snapshot["latency_us"]["p99"] == 1000
    assert snapshot["latency_us"]["max"] == 40_000
