"""The hedwig data source reads a compacted topic (a real hub, a real local Spark
session): the rows are the messages compaction kept, at their seq-ids, whatever seq-id
ranges the partitions cut (inside gaps included)."""

import pytest

from hedwig.client.blocking import Client
from hedwig.spark.options import OptionError, parse_options
from tests.hub.test_compaction import publish_keyed, publish_rounds, table
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


def test_the_compacted_option_reads_one_row_per_live_key(spark, gc_hub):
    with Client(gc_hub.address) as client:
        client.create_topic("compacted-table", compaction=True)
        latest = publish_rounds(client, "compacted-table", rounds=7, keys=5)
        publish_keyed(client, "compacted-table", [(b"k3", b"")])  # a tombstone: k3 is gone
        del latest[b"k3"]
        client.compact("compacted-table")
        latest.update(publish_rounds(client, "compacted-table", rounds=2, keys=2))  # not compacted yet
        client.create_topic("plain-table")
        publish_keyed(client, "plain-table", [(b"a", b"1"), (None, b"keyless"), (b"a", b"2"), (b"b", b"3")])
    df = load(spark, gc_hub, "compacted-table,plain-table", compacted="true")
    assert df.rdd.getNumPartitions() == 2  # one a topic
    rows = sorted((row.topic, row.seq, bytes(row.payload)) for row in df.collect())
    want = sorted(("compacted-table", seq, payload) for seq, payload in latest.values())
    assert rows == [*want, ("plain-table", 3, b"2"), ("plain-table", 4, b"3")]
    # A table read is a batch read only.
    with pytest.raises(OptionError, match="compacted"):
        parse_options({"hub": gc_hub.address, "topics": "plain-table", "compacted": "true"}, streaming=True)
