"""The `hedwig` PySpark data source: batch and streaming reads of topics.

    hedwig.spark.register(spark)
    spark.read.format("hedwig").option("hub", "h:4080").option("topics", "a,b").load()
    spark.readStream.format("hedwig").option("hub", "h:4080").option("topics", "a").load()

Spark runs the parts of a Python data source in different processes: the reader
objects are made on the driver (batch planning in a short-lived Python worker, stream
planning in a long-lived one) and pickled to the executors for `read`. So a reader
holds only its parsed options; hub connections are opened where they are used and never
pickled. Options are described in options.py, offsets in offsets.py.
"""

import sys

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

from hedwig.spark.hubs import HubReader, asked_for
from hedwig.spark.offsets import admit, last_seq_of, offset_before, skip_lost
from hedwig.spark.options import OptionError, SourceOptions, parse_options
from hedwig.spark.planning import SeqRange, plan_partitions
from hedwig.spark.reading import read_seq_range, read_table
from hedwig.spark.schema import SCHEMA

SOURCE_NAME = "hedwig"


def _log(message: str) -> None:
    """Warnings from the planner or a task go to its stderr, which Spark keeps in its logs."""
    print(f"hedwig source: {message}", file=sys.stderr, flush=True)


class HedwigDataSource(DataSource):
    """Topics of a hedwig hub as rows of SCHEMA (topic, seq, publish_time, origin_region,
    origin_seq, key, properties, payload)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self):
        return SCHEMA

    def reader(self, schema) -> "HedwigBatchReader":
        _check_schema(schema)
        return HedwigBatchReader(parse_options(self.options, streaming=False))

    def streamReader(self, schema) -> "HedwigStreamReader":
        _check_schema(schema)
        return HedwigStreamReader(parse_options(self.options, streaming=True))


def _check_schema(schema) -> None:
    if schema != SCHEMA:
        raise OptionError(
            f"the hedwig data source reads rows of {SCHEMA.simpleString()}; "
            f"it cannot produce {schema.simpleString()} (select or cast after loading instead)"
        )


def _read_partition(options: SourceOptions, partition):
    if not isinstance(partition, SeqRange):  # Spark's stand-in when nothing was planned
        return
    # The owner first (its plain address: over TLS the redirects lead to its TLS port).
    hubs = options.hubs if partition.owner is None or options.access.tls else (partition.owner, *options.hubs)
    with HubReader(hubs, timeout=options.timeout_s, access=options.access) as hub:
        if options.compacted:  # (one partition per topic: every key's latest is in it)
            yield from read_table(
                hub,
                partition.topic,
                partition.from_seq,
                partition.to_seq,
                max_bytes=options.max_bytes_per_request,
                rows_per_batch=options.rows_per_batch,
            )
            return
        yield from read_seq_range(
            hub,
            partition.topic,
            partition.from_seq,
            partition.to_seq,
            max_bytes=options.max_bytes_per_request,
            rows_per_batch=options.rows_per_batch,
            fail_on_data_loss=options.fail_on_data_loss,
            log=_log,
        )


class HedwigBatchReader(DataSourceReader):
    """A batch read: startingSeq..endingSeq of every topic, planned once."""

    def __init__(self, options: SourceOptions):
        self.options = options

    def plan(self, hub) -> list:
        options = self.options
        start, end = {}, {}
        for topic, bounds in hub.all_bounds(options.topics).items():
            offset = offset_before(asked_for(options.starting, topic), bounds)
            start[topic] = skip_lost(topic, offset, bounds, options.fail_on_data_loss, _log)
            end[topic] = last_seq_of(topic, asked_for(options.ending, topic), bounds)
        per_partition = (1 << 63) if options.compacted else options.max_messages_per_partition
        return plan_partitions(start, end, per_partition, hub.owners)

    def partitions(self):
        with HubReader(self.options.hubs, timeout=self.options.timeout_s, access=self.options.access) as hub:
            return self.plan(hub)

    def read(self, partition):
        return _read_partition(self.options, partition)


class HedwigStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A stream of topics. Offsets are {topic: last seq-id read} (offsets.py); a query
    restarted from its checkpoint resumes after the offsets of its last batch."""

    def __init__(self, options: SourceOptions):
        self.options = options
        self._hub = None  # opened on first use, in the planner process only
        self._target = None  # availableNow: the latest offsets when the query started
        self._latest = None  # what the hub held at the last latestOffset, for progress

    def _connection(self) -> HubReader:
        if self._hub is None:
            options = self.options
            self._hub = HubReader(options.hubs, timeout=options.timeout_s, access=options.access)
        return self._hub

    def _all_bounds(self) -> dict:
        return self._connection().all_bounds(self.options.topics)

    def initialOffset(self) -> dict:
        options = self.options
        offsets = {}
        for topic, bounds in self._all_bounds().items():
            offset = offset_before(asked_for(options.starting, topic), bounds)
            offsets[topic] = skip_lost(topic, offset, bounds, options.fail_on_data_loss, _log)
        return offsets

    def getDefaultReadLimit(self):
        limit = self.options.max_messages_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = {topic: bounds.last_seq for topic, bounds in self._all_bounds().items()}

    def latestOffset(self, start: dict, limit) -> dict:
        options = self.options
        all_bounds = self._all_bounds()
        begin, latest, joining = {}, {}, {}
        for topic, bounds in all_bounds.items():
            if topic not in start:
                # A topic added to the query since its checkpoint: this batch only records
                # where it starts, so every batch is planned from its two offsets alone.
                joining[topic] = skip_lost(
                    topic,
                    offset_before(asked_for(options.starting, topic), bounds),
                    bounds,
                    options.fail_on_data_loss,
                    _log,
                )
                continue
            begin[topic] = skip_lost(topic, start[topic], bounds, options.fail_on_data_loss, _log)
            last = bounds.last_seq
            if self._target is not None:
                last = min(last, self._target.get(topic, last))
            latest[topic] = last
        self._latest = {topic: bounds.last_seq for topic, bounds in all_bounds.items()}
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return admit(begin, latest, max_rows) | joining

    def reportLatestOffset(self):
        return self._latest

    def partitions(self, start: dict, end: dict) -> list:
        # A topic missing from `start` joined the query with this batch: nothing to read.
        reading = {topic: last for topic, last in end.items() if topic in start}
        owners = self._hub.owners if self._hub is not None else None
        return plan_partitions(start, reading, self.options.max_messages_per_partition, owners)

    def read(self, partition):
        return _read_partition(self.options, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the drain job acknowledges to the hub from the checkpoint."""

    def stop(self) -> None:
        if self._hub is not None:
            self._hub.close()
            self._hub = None


def register(spark) -> None:
    """Make `spark.read.format("hedwig")` and `spark.readStream.format("hedwig")` work."""
    spark.dataSource.register(HedwigDataSource)
