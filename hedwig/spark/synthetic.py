"""A data source of made-up rows in the hedwig schema, generated in memory as Arrow batches.

It measures Spark's own side: how fast this Spark writes rows like a drain's when the
source costs next to nothing. bench/spark_bench.py compares the drain against it.

    spark.read.format("hedwig-synthetic").option("messages", 1000000)
         .option("payloadBytes", 100).option("partitions", 4).load()
"""

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader

from hedwig.spark.planning import SeqRange, split_range
from hedwig.spark.schema import ARROW_SCHEMA, PROPERTIES_TYPE, PUBLISH_TIME_TYPE, SCHEMA

SYNTHETIC_NAME = "hedwig-synthetic"
_ONE = pa.scalar(1, pa.int64())


def random_payloads(rows: int, size: int, seed: int = 5) -> bytes:
    """`rows` payloads of `size` bytes, concatenated: random, so that Parquet cannot
    compress or dictionary-encode them away (real payloads rarely can be)."""
    import random

    return random.Random(seed).randbytes(rows * size)


def synthetic_batch(topic: str, first_seq: int, rows: int, size: int, payloads: bytes, time_us: int):
    """Rows first_seq.. of `topic` in ARROW_SCHEMA, payload i being bytes
    [i * size, (i + 1) * size) of `payloads` (at least rows * size bytes long)."""
    seq = pc.cumulative_sum(pa.repeat(_ONE, rows), start=first_seq - 1)
    step = pa.repeat(pa.scalar(size, pa.int32()), rows + 1)
    offsets = pc.cumulative_sum(step, start=pa.scalar(-size, pa.int32()))  # 0, size, 2 * size, ...
    payload = pa.Array.from_buffers(pa.binary(), rows, [None, offsets.buffers()[1], pa.py_buffer(payloads)])
    no_properties = pa.MapArray.from_arrays(
        pa.repeat(pa.scalar(0, pa.int32()), rows + 1),
        pa.array([], pa.string()),
        pa.array([], pa.binary()),
        type=PROPERTIES_TYPE,
    )
    return pa.RecordBatch.from_arrays(
        [
            pa.repeat(pa.scalar(topic, pa.string()), rows),
            seq,
            pa.repeat(pa.scalar(time_us, PUBLISH_TIME_TYPE), rows),
            pa.repeat(pa.scalar("standalone", pa.string()), rows),
            seq,
            no_properties,
            payload,
        ],
        schema=ARROW_SCHEMA,
    )


class SyntheticDataSource(DataSource):
    """Options: topic (default "synthetic"), messages, payloadBytes (default 100),
    partitions (default 2), rowsPerBatch (default 65536), publishTimeUs."""

    @classmethod
    def name(cls) -> str:
        return SYNTHETIC_NAME

    def schema(self):
        return SCHEMA

    def reader(self, schema) -> "SyntheticReader":
        options = {k.lower(): v for k, v in self.options.items()}
        return SyntheticReader(
            topic=options.get("topic", "synthetic"),
            messages=int(options["messages"]),
            payload_bytes=int(options.get("payloadbytes", 100)),
            partitions=int(options.get("partitions", 2)),
            rows_per_batch=int(options.get("rowsperbatch", 65536)),
            time_us=int(options.get("publishtimeus", 1_700_000_000_000_000)),
        )


class SyntheticReader(DataSourceReader):
    def __init__(self, topic, messages, payload_bytes, partitions, rows_per_batch, time_us):
        self.topic = topic
        self.messages = messages
        self.payload_bytes = payload_bytes
        self.partition_count = partitions
        self.rows_per_batch = rows_per_batch
        self.time_us = time_us

    def partitions(self):
        per_partition = -(-self.messages // self.partition_count)
        return split_range(self.topic, 1, self.messages, per_partition)

    def read(self, partition):
        if not isinstance(partition, SeqRange):
            return
        payloads = random_payloads(self.rows_per_batch, self.payload_bytes, seed=partition.from_seq)
        seq = partition.from_seq
        while seq <= partition.to_seq:
            rows = min(self.rows_per_batch, partition.to_seq - seq + 1)
            yield synthetic_batch(partition.topic, seq, rows, self.payload_bytes, payloads, self.time_us)
            seq += rows


def register_synthetic(spark) -> None:
    spark.dataSource.register(SyntheticDataSource)
