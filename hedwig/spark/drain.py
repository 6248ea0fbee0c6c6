"""The drain job: topics -> Parquet, exactly once, acknowledged to the hub as it goes.

    hedwig drain --hub H:P --topics a,b --out PATH --checkpoint DIR [--once] [--subscriber NAME]

A Structured Streaming query (its command line is command.py) reads the topics with
the `hedwig` source and writes Parquet partitioned by topic and date (the UTC day of
publish_time). Spark's file sink and the query checkpoint make the output exactly
once: a batch is planned from offsets
written before it runs, its files are listed in the sink's log (`_spark_metadata`)
when it commits, and a restarted query redoes only a batch that never committed.
Read the output with Spark (`spark.read.parquet(PATH)`), which follows that log and so
never sees the files of a batch cut short by a crash.

The drain holds a durable subscription per topic, attached for acknowledgements only
(nothing is delivered on it: the source reads with range reads), and acknowledges a
seq-id only once the checkpoint records the batch that holds it as committed
(checkpoint.py, acks.py). The hub therefore keeps everything not yet safely in the
output and collects the rest. If the job dies between a commit and its acknowledgement,
the next run acknowledges first.

`--snapshot` instead writes each topic as a table (one row per live key: a compacted
topic's state) once, with a batch read: the whole snapshot appears at --out, or nothing.

`--once` drains what the topics hold when it starts (trigger availableNow) and stops;
otherwise the query runs until it is asked to stop (a StopRequest: the command makes
SIGTERM and Ctrl-C one, stopping.py), which the drain acts on between its calls into Spark:
it stops the query and acknowledges what Spark committed. Progress goes to stderr every
few seconds: a line per micro-batch (rows, rows/s, lag per topic) and the messages
drained so far, or a progress bar on a terminal (progress.py); a summary at the end.
"""

import json
import os
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from hedwig.client.blocking import Client
from hedwig.protocol.errors import CouldNotConnect, HedwigError
from hedwig.spark.acks import DrainSubscriptions
from hedwig.spark.checkpoint import checkpoint_files, last_committed
from hedwig.spark.hubs import HubUnreachable
from hedwig.spark.progress import BatchProgress
from hedwig.spark.settings import DrainSettings
from hedwig.spark.source import SOURCE_NAME, register
from hedwig.spark.stopping import StopRequest

MICROS_PER_DAY = 86_400_000_000


class DrainFailed(RuntimeError):
    """The drain query stopped with an error; what it committed stays acknowledged."""


@dataclass
class DrainReport:
    """Where a drain run left each topic."""

    drained: int  # messages committed to the output by this run
    committed: dict  # topic -> last seq-id in the output
    acknowledged: dict  # topic -> the consumed seq-id the hub holds for the drain
    lag: dict  # topic -> messages published but not yet in the output
    batches: int  # the checkpoint's last committed batch id + 1
    stopped: bool = False  # the run was asked to stop (a signal) before it was done


class Progress:
    """Turns committed offsets and hub bounds into the drain's progress line."""

    def __init__(self, baseline: dict, clock=time.monotonic):
        self.baseline = dict(baseline)
        self._clock = clock
        self._started = clock()
        self._last = (self._started, 0)

    def drained(self, committed: dict) -> int:
        return sum(max(0, committed.get(t, b) - b) for t, b in self.baseline.items())

    def line(self, committed: dict, lag: dict) -> str:
        now = self._clock()
        drained = self.drained(committed)
        then, before = self._last
        rate = (drained - before) / (now - then) if now > then else 0.0
        self._last = (now, drained)
        lags = " ".join(f"{t}={n}" for t, n in lag.items())
        return f"drained {drained} messages ({rate:,.0f}/s now); lag {lags}"


def _date_column():
    from pyspark.sql import functions

    day = functions.floor(functions.unix_micros("publish_time") / MICROS_PER_DAY).cast("int")
    return functions.date_from_unix_date(day)


def start_query(spark, settings: DrainSettings, starting: dict):
    """The streaming query: hedwig source -> Parquet by topic and date."""
    reader = (
        spark.readStream.format(SOURCE_NAME)
        .option("hub", ",".join(settings.hubs))
        .option("topics", ",".join(settings.topics))
        .option("startingSeq", json.dumps(starting))
        .option("maxMessagesPerPartition", str(settings.max_messages_per_partition))
        .option("failOnDataLoss", "true" if settings.fail_on_data_loss else "false")
        .options(**settings.access.source_options())
    )
    if settings.max_messages_per_trigger is not None:
        reader = reader.option("maxMessagesPerTrigger", str(settings.max_messages_per_trigger))
    return write_parquet_stream(reader.load(), settings)


def write_parquet_stream(stream, settings: DrainSettings):
    """Start writing a stream of SCHEMA rows as the drain writes them: Parquet under
    settings.out, partitioned by topic and UTC date, checkpointed in settings.checkpoint."""
    writer = (
        stream.withColumn("date", _date_column())
        .writeStream.format("parquet")
        .option("path", settings.out)
        .option("checkpointLocation", settings.checkpoint)
        .partitionBy("topic", "date")
        .queryName(f"hedwig-drain-{settings.subscriber}")
    )
    if settings.once:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{settings.trigger_interval_s} seconds")
    return writer.start()


def write_snapshot(spark, settings: DrainSettings) -> int:
    """`--snapshot`: each topic read as a table (the source's `compacted` option: one row
    per live key) written to settings.out as Parquet by topic, once: into a directory
    beside it, renamed into place only when Spark's job committed, so `out` holds a whole
    snapshot or does not exist. Refused when `out` exists. How many rows."""
    out = Path(settings.out)
    if out.exists():
        raise DrainFailed(f"{out} exists: a snapshot is written once, into a directory of its own")
    partial = out.with_name(f".{out.name}.partial-{uuid.uuid4().hex}")
    register(spark)
    table = (
        spark.read.format(SOURCE_NAME)
        .option("hub", ",".join(settings.hubs))
        .option("topics", ",".join(settings.topics))
        .option("compacted", "true")
        .options(**settings.access.source_options())
        .load()
        .cache()
    )
    try:
        table.write.partitionBy("topic").parquet(str(partial))
        rows = table.count()
    finally:
        table.unpersist()
    os.rename(partial, out)
    return rows


def drain(spark, settings: DrainSettings, say=None, stop: StopRequest | None = None) -> DrainReport:
    """Run the drain in `spark` until it is done (--once) or `stop` is requested (then
    the report says stopped); returns where it left each topic. Raises DrainFailed when
    the query fails."""
    terminal = say is None and sys.stderr.isatty()  # a progress bar instead of lines
    say = say or (lambda message: print(f"hedwig drain: {message}", file=sys.stderr, flush=True))
    stop = stop or StopRequest()
    register(spark)
    files = checkpoint_files(settings.checkpoint, spark)
    try:
        client = Client(
            list(settings.hubs),
            client_name=f"hedwig-drain/{settings.subscriber}",
            **settings.access.client_options(),
        ).connect()
    except CouldNotConnect as e:
        raise HubUnreachable(
            f"could not connect to the hedwig hub at {', '.join(settings.hubs)}: {e.message}"
        ) from None
    with client:
        subscriptions = DrainSubscriptions(client, settings.topics, settings.subscriber, say)
        try:
            return _run(spark, settings, say, stop, client, files, subscriptions, terminal)
        finally:
            subscriptions.close()  # the hub writes every pointer before it answers


def _run(
    spark, settings: DrainSettings, say, stop, client, files, subscriptions, terminal: bool = False
) -> DrainReport:
    """The drain with its subscriptions open: acknowledge what an earlier run committed,
    run the query, acknowledge as batches commit."""
    consumed = subscriptions.open()
    previous = last_committed(files)
    committed = dict(consumed)
    if previous is not None:
        committed.update({t: s for t, s in previous[1].items() if t in consumed})
        made = subscriptions.acknowledge(committed)
        if made:
            say(f"acknowledged what the last run committed: {made}")
    progress = Progress(committed)
    batches = BatchProgress(say, terminal)  # each micro-batch, or a bar on a terminal
    starting = {topic: seq + 1 for topic, seq in consumed.items()}

    def catch_up():
        """Acknowledge what the checkpoint now says is committed."""
        found = last_committed(files)
        if found is not None:
            committed.update({t: s for t, s in found[1].items() if t in consumed})
            subscriptions.acknowledge(committed)
        return found

    def lag():
        return {t: max(0, int(client.describe(t)["last_seq"]) - committed[t]) for t in subscriptions.topics}

    def tick():
        # A hub that is away for a moment delays acknowledgements (they are made
        # at the next tick: committed stays ahead of consumed) but stops nothing.
        try:
            catch_up()
            lags = lag()
            batches.tick(progress.drained(committed), lags)
            if not batches.terminal:
                say(progress.line(committed, lags))
        except HedwigError as e:
            say(f"hub unavailable ({e}); acknowledging at the next tick")

    def report(stopped: bool) -> DrainReport:
        try:
            found = catch_up()
            lags = lag()
        except HedwigError as e:
            if not stopped:
                raise
            # Stopping does not wait for a hub that is away: the next run acknowledges.
            say(f"hub unavailable ({e}); the next run acknowledges what this one committed")
            found, lags = last_committed(files), {}
        if batches.query is not None:  # (a run stopped before its query started said so)
            say(batches.summary(progress.drained(committed), lags, stopped))
        return DrainReport(
            drained=progress.drained(committed),
            committed=dict(committed),
            acknowledged=dict(subscriptions.consumed),
            lag=lags,
            batches=0 if found is None else found[0] + 1,
            stopped=stopped,
        )

    if stop.requested:  # asked to stop while the run was getting ready: start nothing
        say(f"{stop.reason}: stopped before the query started")
        return report(stopped=True)
    began = time.monotonic()
    query = start_query(spark, settings, starting)
    say(f"query started in {time.monotonic() - began:.1f} s (the source's schema and offsets planned)")
    batches.query = query
    try:
        failure = _follow(query, settings.progress_interval_s, tick, stop)
    except BaseException:  # an error of our own, or a second signal: leave no query behind
        _stop_quietly(query)
        raise
    if stop.requested and failure is None and query.isActive:
        say(f"{stop.reason}: stopping the query")
        try:
            query.stop()  # a batch under way is abandoned uncommitted: the next run redoes it
        except Exception as e:
            tick()  # what Spark committed is acknowledged all the same
            raise DrainFailed(f"could not stop the query: {_describe_failure(e)}") from None
        return report(stopped=True)
    if failure is None and query.exception() is not None:
        failure = query.exception()
    if failure is not None:
        raise DrainFailed(_describe_failure(failure)) from None
    return report(stopped=False)


# How long the drain waits on the query at a time before it looks whether it was asked
# to stop: the longest a stop waits to begin (each wait is one small call into Spark).
STOP_CHECK_INTERVAL_S = 0.2


def _follow(query, progress_interval_s: float, tick, stop: StopRequest):
    """Wait on the running query, ticking every `progress_interval_s`, until it ends
    (returns None, or the error it failed with) or `stop` is requested (returns None,
    the query still running). Between calls into Spark, never inside one: a stop is
    acted on where it breaks nothing."""
    next_tick = time.monotonic() + progress_interval_s
    while not stop.requested:
        wait = min(STOP_CHECK_INTERVAL_S, next_tick - time.monotonic())
        failure = None
        try:
            finished = query.awaitTermination(max(wait, 0.01))
        except Exception as e:  # the query failed: acknowledge what it committed
            failure, finished = e, True
        if finished or time.monotonic() >= next_tick:
            tick()
            next_tick = time.monotonic() + progress_interval_s
        if finished:
            return failure
    return None


def _stop_quietly(query) -> None:
    """Stop the query on the way out of an error, which says more than a failed stop would."""
    try:
        if query.isActive:
            query.stop()
    except Exception:  # the error already leaving is the one to report
        pass


_OUR_ERRORS = ("DataLoss: ", "UnknownTopic: ", "HubUnreachable: ", "RangeNotAvailable: ", "CorruptEntry: ")


def _describe_failure(error) -> str:
    """The first line that says what went wrong, out of a Spark error's Python traceback."""
    text = str(getattr(error, "desc", None) or error)
    for marker in _OUR_ERRORS:
        at = text.find(marker)
        if at >= 0:
            return text[at:].split("\n", 1)[0]
    return text.strip().split("\n", 1)[0]
