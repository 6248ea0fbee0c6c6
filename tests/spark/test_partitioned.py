"""A partitioned topic (hedwig.protocol.partitions) through the Spark source, on a real
hub in a real local Spark session: every partition read as a topic of its own, in
parallel Spark partitions, each row naming its partition's topic; a stream too."""

import pytest

from hedwig.client.blocking import Client
from tests.spark.test_source import load

pytestmark = pytest.mark.spark


def test_a_batch_read_covers_every_partition_in_parallel(spark, hub):
    with Client(hub.address) as client:
        client.create_topic("spark-parts", partitions=3)
        keys = [b"key-%d" % i for i in range(60)]
        client.publish_many("spark-parts", [b"v-%d" % i for i in range(60)], keys=keys)
        stored = {m.payload: m.topic for m in client.read("spark-parts")}
    assert set(stored.values()) == {"spark-parts", "spark-parts.p-1", "spark-parts.p-2"}
    df = load(spark, hub, "spark-parts", startingSeq={"spark-parts": "earliest"})
    assert df.rdd.getNumPartitions() == 3
    rows = df.collect()
    assert sorted(r.payload for r in rows) == sorted(stored)
    assert {r.payload: r.topic for r in rows} == stored


def test_a_stream_of_a_partitioned_topic_reads_every_partition(spark, hub, tmp_path):
    with Client(hub.address) as client:
        client.create_topic("spark-stream-parts", partitions=2)
        client.publish_many(
            "spark-stream-parts", [b"s-%d" % i for i in range(20)], keys=[b"%d" % i for i in range(20)]
        )
    stream = (
        spark.readStream.format("hedwig")
        .option("hub", hub.address)
        .option("topics", "spark-stream-parts")
        .option("startingSeq", "earliest")
        .load()
    )
    query = (
        stream.writeStream.format("memory")
        .queryName("partitioned_stream")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    rows = spark.sql("select topic, payload from partitioned_stream").collect()
    assert sorted(r.payload for r in rows) == sorted(b"s-%d" % i for i in range(20))
    assert {r.topic for r in rows} == {"spark-stream-parts", "spark-stream-parts.p-1"}
