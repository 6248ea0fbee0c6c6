"""The hedwig data source reads compressed message sets, in a real local Spark session
against a real hub: sets published by the blocking, Twisted and asyncio clients with
gzip, lz4 and zstd (with properties, and partitions that begin inside an entry) come out
as the plain rows an uncompressed publish gives."""

import pytest

from tests.client.every_client import CLIENTS
from tests.spark.test_source import load

pytestmark = pytest.mark.spark

TOPIC = "spark-compressed"
CODECS = ("gzip", "lz4", "zstd")


def test_compressed_sets_from_every_client_read_as_plain_rows(spark, hub):
    sent = {}
    for kind, codec in zip(CLIENTS, CODECS, strict=True):
        client = kind(hub.address, compression=codec)
        try:
            payloads = [
                b'{"client":"%s","codec":"%s","n":%d}' % (kind.name.encode(), codec.encode(), n)
                for n in range(30)
            ]
            properties = [{"codec": codec.encode()} if n % 4 == 0 else None for n in range(30)]
            seqs = client.call("publish_many", TOPIC, payloads, properties)
            sent.update({seq: (payloads[i], properties[i] or {}) for i, seq in enumerate(seqs)})
        finally:
            client.close()
    df = load(spark, hub, TOPIC, maxMessagesPerPartition="7")  # partitions start inside entries
    assert df.rdd.getNumPartitions() == 13
    rows = sorted(df.collect(), key=lambda row: row.seq)
    assert [(row.seq, row.payload, dict(row.properties)) for row in rows] == [
        (seq, payload, properties) for seq, (payload, properties) in sorted(sent.items())
    ]
