"""A partitioned topic (hedwig.protocol.partitions) through the Spark source, on a real
hub in a real local Spark session: every partition read as a topic of its own, in
parallel Spark partitions, each row naming its partition's topic; a stream too; and
`hedwig drain` of a partitioned topic, run as a user runs it."""

import subprocess
import sys

import pytest

from hedwig.client.blocking import Client
from hedwig.testing.hubprocess import hub_environment
from tests.spark.test_drain import output_rows, settings, subscriber
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


def run_drain(hub, run) -> subprocess.CompletedProcess:
    """`hedwig drain --once` as a user runs it: a subprocess against the hub."""
    command = [
        sys.executable, "-m", "hedwig", "--hub", hub.address, "drain", "--topics", ",".join(run.topics),
        "--out", run.out, "--checkpoint", run.checkpoint, "--once", "--subscriber", "lake",
        "--master", "local[2]",
    ]  # fmt: skip
    env = dict(hub_environment(), PYSPARK_PYTHON=sys.executable)
    return subprocess.run(command, capture_output=True, env=env, timeout=300)


def test_hedwig_drain_of_a_partitioned_topic_drains_and_acknowledges_every_partition(spark, hub, tmp_path):
    topic = "drain-parts"
    names = [topic, f"{topic}.p-1", f"{topic}.p-2"]
    with Client(hub.address) as client:
        client.create_topic(topic, partitions=3)
        keys = [b"key-%d" % i for i in range(90)]
        client.publish_many(topic, [b"d-%d" % i for i in range(90)], keys=keys)
        stored = {m.payload: (m.topic, m.seq) for m in client.read(topic)}
    assert {where for where, _ in stored.values()} == set(names)
    run = settings(hub, tmp_path, [topic])
    done = run_drain(hub, run)
    said = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0 and "Traceback" not in said, said[-6000:]
    rows = output_rows(spark, run.out)
    assert sorted((t, s, p) for t, s, p in rows) == sorted((t, s, p) for p, (t, s) in stored.items())
    with Client(hub.address) as client:  # acknowledged on every partition's topic
        for name in names:
            described, lake = subscriber(client, name, "lake")
            assert lake["consumed_seq"] == described["last_seq"] > 0, name
        client.publish_many(topic, [b"d-%d" % i for i in range(90, 120)], keys=keys[:30])
        stored = {m.payload: (m.topic, m.seq) for m in client.read(topic)}
    again = run_drain(hub, run)  # (the new messages alone, once)
    assert again.returncode == 0, again.stderr.decode("utf-8", "replace")[-6000:]
    rows = output_rows(spark, run.out)
    assert sorted((t, s, p) for t, s, p in rows) == sorted((t, s, p) for p, (t, s) in stored.items())
