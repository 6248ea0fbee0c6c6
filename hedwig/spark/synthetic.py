"""A data source of made-up rows in the hedwig schema, generated in memory as Arrow batches.

It measures Spark's own side: how fast this Spark writes rows like a drain's when the
source costs next to nothing. bench/spark_bench.py compares the drain against it, both
as the same kind of streaming query (micro-batches, partitions, Arrow batch size).

    spark.read.format("hedwig-synthetic").option("messages", 1000000)
         .option("payloadBytes", 100).option("maxMessagesPerPartition", 250000).load()

As a stream it behaves like a topic already holding `messages` messages: offsets are
{topic: seq-id} as in the hedwig source, and maxMessagesPerTrigger splits it into
micro-batches the same way.
"""

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

from hedwig.spark.offsets import admit
from hedwig.spark.options import DEFAULT_MAX_MESSAGES_PER_PARTITION, DEFAULT_ROWS_PER_BATCH
from hedwig.spark.planning import SeqRange, plan_partitions
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
            pa.nulls(rows, pa.binary()),  # no keys
            no_properties,
            payload,
        ],
        schema=ARROW_SCHEMA,
    )


class SyntheticDataSource(DataSource):
    """Options: topic (default "synthetic"), messages, payloadBytes (default 100),
    maxMessagesPerPartition (default 250000), rowsPerBatch (default 65536),
    maxMessagesPerTrigger (streams), publishTimeUs."""

    @classmethod
    def name(cls) -> str:
        return SYNTHETIC_NAME

    def schema(self):
        return SCHEMA

    def _settings(self) -> dict:
        options = {k.lower(): v for k, v in self.options.items()}
        per_trigger = options.get("maxmessagespertrigger")
        return dict(
            topic=options.get("topic", "synthetic"),
            messages=int(options["messages"]),
            payload_bytes=int(options.get("payloadbytes", 100)),
            per_partition=int(options.get("maxmessagesperpartition", DEFAULT_MAX_MESSAGES_PER_PARTITION)),
            rows_per_batch=int(options.get("rowsperbatch", DEFAULT_ROWS_PER_BATCH)),
            time_us=int(options.get("publishtimeus", 1_700_000_000_000_000)),
            per_trigger=None if per_trigger is None else int(per_trigger),
        )

    def reader(self, schema) -> "SyntheticReader":
        return SyntheticReader(**self._settings())

    def streamReader(self, schema) -> "SyntheticStreamReader":
        return SyntheticStreamReader(**self._settings())


@dataclass(eq=False)  # readers compare and hash by identity, as Spark may expect
class _Generator:
    """What both readers generate from: the source's options, read once by
    SyntheticDataSource._settings."""

    topic: str
    messages: int
    payload_bytes: int
    per_partition: int
    rows_per_batch: int
    time_us: int
    per_trigger: int | None

    def read(self, partition):
        if not isinstance(partition, SeqRange):
            return
        payloads = random_payloads(self.rows_per_batch, self.payload_bytes, seed=partition.from_seq)
        seq = partition.from_seq
        while seq <= partition.to_seq:
            rows = min(self.rows_per_batch, partition.to_seq - seq + 1)
            yield synthetic_batch(partition.topic, seq, rows, self.payload_bytes, payloads, self.time_us)
            seq += rows


class SyntheticReader(_Generator, DataSourceReader):
    def partitions(self):
        return plan_partitions({self.topic: 0}, {self.topic: self.messages}, self.per_partition)


class SyntheticStreamReader(_Generator, DataSourceStreamReader, SupportsTriggerAvailableNow):
    def initialOffset(self) -> dict:
        return {self.topic: 0}

    def getDefaultReadLimit(self):
        return ReadAllAvailable() if self.per_trigger is None else ReadMaxRows(self.per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        pass  # everything is there from the start

    def latestOffset(self, start: dict, limit) -> dict:
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return admit(start, {self.topic: self.messages}, max_rows)

    def partitions(self, start: dict, end: dict) -> list:
        return plan_partitions(start, end, self.per_partition)


def register_synthetic(spark) -> None:
    spark.dataSource.register(SyntheticDataSource)
