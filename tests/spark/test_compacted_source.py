"""The hedwig data source reads a compacted topic (a real hub, a real local Spark
session): the rows are the messages compaction kept, at their seq-ids, whatever seq-id
ranges the partitions cut (inside gaps included)."""

import pytest

from hedwig.client.blocking import Client
from tests.hub.test_compaction import publish_rounds, table
from tests.spark.test_source import load

pytestmark = pytest.mark.spark


def test_a_compacted_topic_reads_as_the_messages_kept(spark, gc_hub):
    with Client(gc_hub.address) as client:
        client.create_topic("compacted-src", compaction=True)
        latest = publish_rounds(client, "compacted-src", rounds=15, keys=4)
        client.compact("compacted-src")
        kept = client.read("compacted-src")
        last_seq = client.describe("compacted-src")["last_seq"]
    assert table(kept) == latest
    assert len(kept) < last_seq
    df = load(spark, gc_hub, "compacted-src", maxMessagesPerPartition="7")
    assert df.rdd.getNumPartitions() > 3  # (ranges of seq-ids: most start or end in a gap)
    rows = sorted((row.seq, bytes(row.payload)) for row in df.collect())
    assert rows == [(m.seq, bytes(m.payload)) for m in kept]
