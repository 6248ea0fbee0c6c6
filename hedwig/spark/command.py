"""`hedwig drain`: the drain job's command line (hedwig/commands/main.py wires it in as a subcommand;
`python -m hedwig.spark.command` runs the same). Spark is imported only when the command
runs, so building the `hedwig` parser costs nothing and needs no pyspark.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

from hedwig.protocol.errors import HedwigError
from hedwig.protocol.names import InvalidName, check_subscriber_id
from hedwig.spark.access import access_from_args
from hedwig.spark.checkpoint import CheckpointError
from hedwig.spark.hubs import HubReader, HubUnreachable, UnknownTopic
from hedwig.spark.options import DEFAULT_MAX_MESSAGES_PER_PARTITION, OptionError, parse_hubs, parse_topics
from hedwig.spark.settings import DEFAULT_MAX_MESSAGES_PER_TRIGGER, DEFAULT_SUBSCRIBER, DrainSettings
from hedwig.spark.stopping import SignalStop, StopRequest

# How long the check before Spark starts waits for a hub to answer.
HUB_CHECK_TIMEOUT_S = 10.0


def add_drain_arguments(parser: argparse.ArgumentParser, hub_option: bool = True) -> None:
    """The drain's options; `hub_option` False where the parser has --hub already (hedwig cli)."""
    if hub_option:
        parser.add_argument("--hub", required=True, metavar="H:P[,H:P...]", help="hub address(es)")
    parser.add_argument("--topics", required=True, metavar="A,B", help="topics to drain")
    parser.add_argument("--out", required=True, metavar="PATH", help="Parquet output directory (or URI)")
    parser.add_argument("--checkpoint", metavar="DIR", help="the query's checkpoint directory (required)")
    parser.add_argument(
        "--snapshot",
        action="store_true",
        help="write each topic as a table (one row per live key: a compacted topic's state) once, "
        "into --out, a directory that must not exist yet (no checkpoint, no subscription)",
    )
    parser.add_argument("--once", action="store_true", help="drain what is there now, then stop")
    parser.add_argument(
        "--subscriber", default=DEFAULT_SUBSCRIBER, help=f"subscriber id (default {DEFAULT_SUBSCRIBER})"
    )
    parser.add_argument(
        "--max-messages-per-trigger",
        type=int,
        default=DEFAULT_MAX_MESSAGES_PER_TRIGGER,
        metavar="N",
        help=f"messages per micro-batch at most (default {DEFAULT_MAX_MESSAGES_PER_TRIGGER}; 0: no limit)",
    )
    parser.add_argument(
        "--max-messages-per-partition",
        type=int,
        default=DEFAULT_MAX_MESSAGES_PER_PARTITION,
        metavar="N",
        help=f"messages per Spark task at most (default {DEFAULT_MAX_MESSAGES_PER_PARTITION})",
    )
    parser.add_argument(
        "--allow-data-loss",
        action="store_true",
        help="skip seq-ids the hub already collected instead of failing (failOnDataLoss=false)",
    )
    parser.add_argument(
        "--interval", type=float, default=1.0, metavar="S", help="seconds between micro-batches (default 1)"
    )
    parser.add_argument(
        "--progress", type=float, default=5.0, metavar="S", help="seconds between progress lines (default 5)"
    )
    parser.add_argument("--master", help="Spark master (default: Spark's own, local[*] outside a cluster)")
    parser.add_argument(
        "--spark-log-level",
        default="error",
        choices=("error", "warn", "info", "debug"),
        help="what Spark's own log shows on standard error (default error: its warnings are left out)",
    )


def settings_from_args(args) -> DrainSettings:
    try:
        subscriber = check_subscriber_id(args.subscriber)
    except InvalidName as e:
        raise OptionError(f"--subscriber: {e}") from None
    for name in ("max_messages_per_trigger", "max_messages_per_partition"):
        value = getattr(args, name)
        if value < 0 or (value == 0 and name == "max_messages_per_partition"):
            raise OptionError(f"--{name.replace('_', '-')} must be a positive number")
    if args.interval < 0 or args.progress <= 0:
        raise OptionError("--interval must be 0 or more seconds and --progress more than 0")
    if args.snapshot and args.checkpoint:
        raise OptionError("--snapshot writes once and keeps no checkpoint: leave --checkpoint out")
    if not args.snapshot and not args.checkpoint:
        raise OptionError("--checkpoint DIR is required (the query's checkpoint directory)")
    return DrainSettings(
        hubs=parse_hubs(args.hub),
        topics=parse_topics(args.topics),
        out=args.out,
        checkpoint=args.checkpoint or "",
        once=args.once,
        subscriber=subscriber,
        max_messages_per_trigger=args.max_messages_per_trigger or None,
        max_messages_per_partition=args.max_messages_per_partition,
        fail_on_data_loss=not args.allow_data_loss,
        trigger_interval_s=args.interval,
        progress_interval_s=args.progress,
        access=access_from_args(args),
        snapshot=args.snapshot,
    )


def check_hubs(settings: DrainSettings, timeout: float = HUB_CHECK_TIMEOUT_S) -> None:
    """Reach the hubs and find every topic before Spark starts: a wrong --hub or a topic
    name's typo is one line within seconds, not a failure of the first micro-batch after
    the JVM started (10 s or more, in a page of its warnings). HubUnreachable or
    UnknownTopic otherwise; the drain itself checks again as it plans each batch."""
    with HubReader(settings.hubs, timeout=timeout, access=settings.access) as hubs:
        for topic in settings.topics:
            hubs.bounds(topic)


# Spark's log at the level the drain asks for from the JVM's start (its default
# configuration logs warnings, and says so, before any code of ours could change it).
SPARK_LOG_CONFIGURATION = Path(__file__).with_name("log4j2.properties")


# What the drain's session does without: the web UI (its server and listeners cost start-up
# time; a drain reports its own progress) and the console progress bars. The drain's
# queries shuffle nothing, so a session's 200 shuffle partitions would only be tasks.
SESSION_CONFIG = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
}


def spark_session(master: str | None = None, log_level: str = "error"):
    """A session for the drain; workers run this interpreter unless PYSPARK_PYTHON says.
    Spark's own log shows `log_level` and above (error: none of its warnings)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("hedwig-drain")
    for key, value in SESSION_CONFIG.items():
        builder = builder.config(key, value)
    if log_level == "error":
        options = f"-Dlog4j2.configurationFile={SPARK_LOG_CONFIGURATION.as_uri()}"
        builder = builder.config("spark.driver.extraJavaOptions", options)
    if master:
        builder = builder.master(master)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level.upper())
    return spark


def run_drain(args) -> int:
    """`hedwig drain`: the process's exit status (0 done, 1 failed, 2 bad options, 130 stopped)."""
    try:
        settings = settings_from_args(args)
    except OptionError as e:
        print(f"hedwig drain: {e}", file=sys.stderr)
        return 2
    try:
        check_hubs(settings)
    except (HubUnreachable, UnknownTopic, HedwigError) as e:
        print(f"hedwig drain: failed: {e}", file=sys.stderr)
        return 1
    try:
        from hedwig.spark.drain import DrainFailed, drain, write_snapshot
    except ImportError as e:
        from hedwig.config.extras import install_hint

        print(f"hedwig drain: needs pyspark and pyarrow ({install_hint('spark')}): {e}", file=sys.stderr)
        return 1
    # SIGTERM (a service manager stopping the job) and Ctrl-C ask the drain to stop: it
    # stops the query and acknowledges what Spark committed (stopping.py says why the
    # signal does not interrupt it). A second one leaves at once; a SIGKILL is a crash:
    # both are safe, the next run redoes what was not committed.
    stop = StopRequest()
    with SignalStop(stop) as signals:
        began = time.monotonic()
        spark = spark_session(args.master, getattr(args, "spark_log_level", "error"))
        # (the JVM's start: the most of a short run; Spark's own, not the drain's)
        print(f"hedwig drain: Spark session started in {time.monotonic() - began:.1f} s", file=sys.stderr)
        signals.install()  # the SparkContext put PySpark's SIGINT handler in place of ours
        try:
            if settings.snapshot:
                rows = write_snapshot(spark, settings)
                print(f"hedwig drain: wrote {rows} rows, one a live key, to {settings.out}", file=sys.stderr)
                return 0
            report = drain(spark, settings, stop=stop)
        except (DrainFailed, HubUnreachable, UnknownTopic, CheckpointError, HedwigError) as e:
            print(f"hedwig drain: failed: {e}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print(
                "hedwig drain: interrupted: left at once (the next run redoes what was not committed)",
                file=sys.stderr,
            )
            return 130
        finally:
            spark.stop()
    if getattr(args, "json", False):  # (for people: the summary line on standard error)
        print(
            json.dumps(
                {
                    "drained": report.drained,
                    "committed": report.committed,
                    "acknowledged": report.acknowledged,
                    "lag": report.lag,
                    "stopped": report.stopped,
                }
            )
        )
    if report.stopped:
        print(
            f"hedwig drain: stopped by {stop.reason}: drained {report.drained} messages; "
            f"acknowledged {_per_topic(report.acknowledged)}",
            file=sys.stderr,
        )
        return 130
    return 0


def _per_topic(seqs: dict) -> str:
    return " ".join(f"{topic}={seq}" for topic, seq in seqs.items()) or "nothing"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="hedwig drain", description="drain hedwig topics into Parquet")
    add_drain_arguments(parser)
    return run_drain(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
