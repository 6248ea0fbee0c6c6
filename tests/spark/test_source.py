"""The hedwig data source against a real hub, in a real local Spark session."""

import json
from datetime import UTC, datetime

import pytest
from pyspark.sql import functions

from hedwig.client.blocking import Client
from hedwig.testing.hubprocess import refusing_port
from hedwig.testing.polling import wait_until

pytestmark = pytest.mark.spark


def publish(client, topic, count, per_entry, properties_every=0, tag=""):
    """Publish `count` messages in entries of `per_entry`; returns {seq: (payload, properties)}."""
    sent = {}
    seq = 0
    while seq < count:
        n = min(per_entry, count - seq)
        payloads = [f"{tag}{topic}-{seq + i + 1}".encode() * (1 + (seq + i) % 3) for i in range(n)]
        properties = None
        if properties_every:
            properties = [
                None if (seq + i) % properties_every else {"k": f"v{seq + i + 1}".encode(), "n": b"\x00\x01"}
                for i in range(n)
            ]
        seqs = client.publish_many(topic, payloads, properties)
        for i, s in enumerate(seqs):
            sent[s] = (payloads[i], (properties[i] if properties else None) or {})
        seq += n
    return sent


def load(spark, hub, topics, **options):
    reader = spark.read.format("hedwig").option("hub", hub.address).option("topics", topics)
    for key, value in options.items():
        reader = reader.option(key, value if isinstance(value, str) else json.dumps(value))
    return reader.load()


def test_batch_read_of_three_topics_returns_every_message_once_with_its_fields(spark, hub):
    before = datetime.now(UTC)
    with Client(hub.address) as client:
        sent = {
            "b3-orders": publish(client, "b3-orders", 250, per_entry=40, properties_every=7),
            "b3-clicks": publish(client, "b3-clicks", 120, per_entry=1),
            "b3-empty-ish": publish(client, "b3-empty-ish", 3, per_entry=3),
        }
    after = datetime.now(UTC)
    df = load(spark, hub, "b3-orders,b3-clicks,b3-empty-ish", maxMessagesPerPartition="60")
    assert df.rdd.getNumPartitions() == 5 + 2 + 1
    rows = df.collect()
    assert len(rows) == sum(len(s) for s in sent.values())
    seen = set()
    for row in rows:
        key = (row.topic, row.seq)
        assert key not in seen
        seen.add(key)
        payload, properties = sent[row.topic][row.seq]
        assert row.payload == payload
        assert dict(row.properties) == properties
        assert row.origin_region == "standalone"
        assert row.origin_seq == row.seq
        assert before.replace(microsecond=0) <= row.publish_time.replace(tzinfo=UTC) <= after
    assert seen == {(t, s) for t, msgs in sent.items() for s in msgs}


def test_ranges_split_across_partitions_cover_exactly_the_requested_seq_ids(spark, hub):
    with Client(hub.address) as client:
        publish(client, "split-a", 100, per_entry=9)
        publish(client, "split-b", 50, per_entry=50)
    df = load(
        spark,
        hub,
        "split-a,split-b",
        startingSeq={"split-a": 13, "split-b": 5},
        endingSeq={"split-a": 88, "split-b": "latest"},
        maxMessagesPerPartition="7",
    )
    per_partition = (
        df.select("topic", "seq", functions.spark_partition_id().alias("part"))
        .groupBy("part", "topic")
        .agg(
            functions.min("seq").alias("lo"),
            functions.max("seq").alias("hi"),
            functions.count("*").alias("n"),
        )
        .collect()
    )
    assert len(per_partition) == 11 + 7  # ceil(76 / 7) and ceil(46 / 7) partitions
    assert all(p.n <= 7 and p.hi - p.lo + 1 == p.n for p in per_partition)
    seqs = sorted((r.topic, r.seq) for r in df.select("topic", "seq").collect())
    assert seqs == sorted([("split-a", s) for s in range(13, 89)] + [("split-b", s) for s in range(5, 51)])
    assert load(spark, hub, "split-a,split-b", startingSeq="latest").count() == 0  # nothing after latest


def test_a_bad_hub_address_is_a_clear_error(spark):
    with refusing_port() as port:
        df = spark.read.format("hedwig").option("hub", f"127.0.0.1:{port}").option("topics", "t").load()
        with pytest.raises(Exception, match=f"could not connect to the hedwig hub at 127.0.0.1:{port}"):
            df.collect()


def test_an_unknown_topic_is_a_clear_error(spark, hub):
    with pytest.raises(Exception, match="topic 'never-published' does not exist on the hedwig hub"):
        load(spark, hub, "never-published").collect()


def test_bad_options_are_clear_errors(spark, hub):
    with pytest.raises(Exception, match=r"(?i)unknown option 'startingOffsets'"):
        load(spark, hub, "t", startingOffsets="earliest").collect()
    with pytest.raises(Exception, match="option 'hub' is required"):
        spark.read.format("hedwig").option("topics", "t").load().collect()


def test_a_removed_range_fails_the_read_unless_allowed(spark, gc_hub):
    with Client(gc_hub.address) as client:
        publish(client, "r-gone", 60, per_entry=5)
        reader = client.subscribe("r-gone", "reader", start="earliest")
        for _ in range(60):
            reader.ack(reader.receive(timeout=10))
        reader.close()
        wait_until(lambda: client.describe("r-gone")["first_seq"] > 30, "collection of r-gone", timeout=15.0)
        first_held = client.describe("r-gone")["first_seq"]
    with pytest.raises(Exception, match=rf"seq-ids 1\.\.{first_held - 1} of topic 'r-gone' were removed"):
        load(spark, gc_hub, "r-gone", startingSeq={"r-gone": 1}).collect()
    rows = load(spark, gc_hub, "r-gone", startingSeq={"r-gone": 1}, failOnDataLoss="false").collect()
    assert sorted(r.seq for r in rows) == list(range(first_held, 61))
    earliest = load(spark, gc_hub, "r-gone").collect()  # earliest means the earliest held
    assert len(earliest) == 61 - first_held


def test_the_synthetic_source_makes_the_rows_it_is_asked_for(spark):
    from hedwig.spark.synthetic import SYNTHETIC_NAME, register_synthetic

    register_synthetic(spark)
    df = (
        spark.read.format(SYNTHETIC_NAME)
        .option("messages", "1000")
        .option("payloadBytes", "16")
        .option("maxMessagesPerPartition", "300")
        .option("rowsPerBatch", "128")
        .load()
    )
    assert df.rdd.getNumPartitions() == 4
    rows = df.select("seq", "payload").collect()
    assert sorted(r.seq for r in rows) == list(range(1, 1001))
    assert {len(r.payload) for r in rows} == {16}
    assert len({bytes(r.payload) for r in rows}) == 4 * 128  # random within a batch, reused by the next


def test_the_key_column_holds_each_messages_key_and_null_for_none(spark, hub):
    with Client(hub.address) as client:
        client.publish_many("spark-keys", [b"a", b"b", b"c"], keys=["k-a", None, b"\x00k"])
        client.publish("spark-keys", b"d", {"n": 1})
        client.publish("spark-keys", b"e", key="k-e")
    df = load(spark, hub, "spark-keys")
    assert "key" in df.columns
    rows = sorted(df.select("seq", "key", "payload").collect())
    assert [(row.seq, None if row.key is None else bytes(row.key)) for row in rows] == [
        (1, b"k-a"),
        (2, None),
        (3, b"\x00k"),
        (4, None),
        (5, b"k-e"),
    ]
    assert sorted(row.seq for row in df.where(functions.col("key").isNull()).collect()) == [2, 4]
