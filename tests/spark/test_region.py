"""The Spark source and the drain job against a region of two hubs: the driver asks one hub,
each partition reads from its topic's owner, and the drain is exactly once and
acknowledged at each topic's owner, as against one hub (tests/spark/test_drain.py)."""

import pytest

from hedwig.client.blocking import Client
from hedwig.spark.drain import drain
from tests.spark.conftest import GC_CONF
from tests.spark.test_drain import assert_exactly_once, output_rows, publish, settings, subscriber

pytestmark = pytest.mark.spark

COUNTS = {"r-orders": 430, "r-clicks": 120, "r-views": 60, "r-carts": 33}


def read_ranges(hub) -> dict:
    with Client(hub.address) as client:
        return client.stats()["ops"]["read_range"]


def test_drain_against_a_region_of_two_hubs_reads_each_topic_from_its_owner(spark, region, tmp_path):
    hubs = region(2, conf=GC_CONF)
    first, second = hubs.hubs
    with Client(first.address) as client:
        for topic, count in COUNTS.items():
            publish(client, topic, 1, count, per_entry=25 if count > 100 else 1)
        owners = {topic: client.describe(topic)["owner"] for topic in COUNTS}
    assert set(owners.values()) == {first.address, second.address}
    # The driver knows the first hub only.
    run = settings(
        first, tmp_path, list(COUNTS), max_messages_per_trigger=300, max_messages_per_partition=100
    )
    said = []
    done = drain(spark, run, say=said.append)
    assert done.drained == sum(COUNTS.values()) and done.committed == COUNTS
    assert_exactly_once(output_rows(spark, run.out), COUNTS)
    with Client(first.address) as client:  # acknowledged where each topic lives
        for topic, count in COUNTS.items():
            described, lake = subscriber(client, topic, "lake")
            assert described["owner"] == owners[topic] and lake["consumed_seq"] == count
    # Every partition asked its topic's owner: each hub served reads, and none refused one.
    for hub in hubs.hubs:
        reads = read_ranges(hub)
        assert reads["ok"] > 0 and reads["failed"] == 0, (hub.address, reads)
    # A second run finds nothing new, and more published since is drained once more.
    with Client(second.address) as client:
        publish(client, "r-views", 61, 15, per_entry=5)
    again = drain(spark, run, say=said.append)
    assert again.drained == 15
    assert_exactly_once(output_rows(spark, run.out), {**COUNTS, "r-views": 75})


def test_a_batch_read_of_a_region_returns_every_topic_from_any_hub(spark, region):
    hubs = region(2)
    with Client(hubs.hubs[1].address) as client:
        for topic in ("rb-a", "rb-b", "rb-c"):
            client.publish_many(topic, [f"{topic}:{i}".encode() for i in range(50)])
        owners = {client.describe(t)["owner"] for t in ("rb-a", "rb-b", "rb-c")}
    assert len(owners) == 2
    for hub in hubs.hubs:
        df = spark.read.format("hedwig").option("hub", hub.address).option("topics", "rb-a,rb-b,rb-c")
        rows = df.option("maxMessagesPerPartition", "20").load().collect()
        assert sorted((r.topic, r.seq, bytes(r.payload)) for r in rows) == sorted(
            (t, i + 1, f"{t}:{i}".encode()) for t in ("rb-a", "rb-b", "rb-c") for i in range(50)
        )
