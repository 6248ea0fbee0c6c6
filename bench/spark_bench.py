"""The drain's throughput against Spark's own limit, in one run.

drain:     one hub (a real `hedwig hub` process) holds N messages of B bytes, published
           in message sets of 1000; the drain job (hedwig.spark.drain.drain, --once)
           writes them to Parquet by topic and date with local[2]. Figure: messages per
           second from the drain's start to its return (subscription set-up, every
           micro-batch, the acknowledgements).
synthetic: the same streaming Parquet write (same micro-batches, partitions and Arrow
           batch size) fed by a Python data source that makes the rows in memory as
           Arrow batches (hedwig.spark.synthetic), so the source costs next to nothing
           and Spark's own side is the limit. Figure: rows per second.

Target (issue 5): the drain reaches >= 80% of the synthetic rate. Both are run `--rounds`
times, alternating, after a warm-up of each (the first micro-batch of a session pays for
the JVM's warm-up and the Python workers' start); the medians are compared. The hub's
CPU seconds during each drain are recorded, and the load average, since other work on
the machine moves these figures.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python bench/spark_bench.py [--messages N] [--rounds R]
        [--warmup N] [--no-save]

Prints JSON and writes bench/results/spark_bench.json.
"""

import argparse
import dataclasses
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import RESULTS_DIR, emit, proc_stat, process_cpu_seconds
from hedwig.client.blocking import Client
from hedwig.spark.drain import drain, write_parquet_stream
from hedwig.spark.options import DEFAULT_MAX_MESSAGES_PER_PARTITION, DEFAULT_ROWS_PER_BATCH
from hedwig.spark.settings import DrainSettings
from hedwig.spark.synthetic import SYNTHETIC_NAME, register_synthetic
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.spark import local_session

COMMAND = "PYSPARK_PYTHON=.venv/bin/python .venv/bin/python bench/spark_bench.py"


def tree_cpu_seconds(root: int, exclude: int) -> float:
    """CPU seconds of `root` and every process below it but `exclude`'s subtree: the
    driver, Spark's JVM and its Python workers (children that ended and were waited for
    count in their parent's cutime/cstime)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(proc_stat(entry)[1])
            except (OSError, IndexError):
                continue  # gone meanwhile
    total = 0
    for pid in parents:
        at = pid
        while at not in (root, exclude, 0, 1) and at in parents:
            at = parents[at]
        if at == root and pid != exclude:
            try:
                fields = proc_stat(pid)
            except OSError:
                continue
            total += sum(int(fields[i]) for i in (11, 12, 13, 14))
    return total / os.sysconf("SC_CLK_TCK")


def publish(address: str, topic: str, messages: int, size: int, per_publish: int) -> float:
    """Publish `messages` random payloads of `size` bytes, every one different (so that
    Parquet can no more dictionary-encode them than the synthetic source's); returns
    messages per second, the making of the payloads included."""
    generator = random.Random(7)
    started = time.perf_counter()
    with Client(address) as client:
        done = 0
        while done < messages:
            n = min(per_publish, messages - done)
            block = generator.randbytes(n * size)
            client.publish_many(topic, [block[i * size : (i + 1) * size] for i in range(n)])
            done += n
    return messages / (time.perf_counter() - started)


def count_rows(spark, out: str) -> int:
    return spark.read.parquet(out).count()


def parquet_bytes(out) -> int:
    """Bytes of the Parquet files written (both runs should write about the same)."""
    return sum(p.stat().st_size for p in Path(out).rglob("*.parquet"))


def run_synthetic(spark, work: Path, name: str, hub_pid: int, messages: int, size: int, settings) -> dict:
    out, checkpoint = work / f"{name}-out", work / f"{name}-checkpoint"
    stream = (
        spark.readStream.format(SYNTHETIC_NAME)
        .option("topic", "bench")
        .option("messages", str(messages))
        .option("payloadBytes", str(size))
        .option("maxMessagesPerPartition", str(settings.max_messages_per_partition))
        .option("rowsPerBatch", str(DEFAULT_ROWS_PER_BATCH))
    )
    if settings.max_messages_per_trigger is not None:
        stream = stream.option("maxMessagesPerTrigger", str(settings.max_messages_per_trigger))
    run = dataclasses.replace(settings, out=str(out), checkpoint=str(checkpoint), subscriber=name)
    spark_cpu = tree_cpu_seconds(os.getpid(), exclude=hub_pid)
    started = time.perf_counter()
    query = write_parquet_stream(stream.load(), run)
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    spark_cpu = tree_cpu_seconds(os.getpid(), exclude=hub_pid) - spark_cpu
    rows = count_rows(spark, str(out))
    written = parquet_bytes(out)
    shutil.rmtree(out)
    shutil.rmtree(checkpoint)
    if rows != messages:
        raise RuntimeError(f"synthetic run {name} wrote {rows} rows, expected {messages}")
    return {
        "seconds": round(elapsed, 2),
        "rows_per_s": round(messages / elapsed),
        "batches": len(query.recentProgress),
        "spark_cpu_s": round(spark_cpu, 2),
        "parquet_bytes": written,
    }


def run_drain(spark, work: Path, name: str, hub_pid: int, messages: int, settings: DrainSettings) -> dict:
    run = dataclasses.replace(
        settings, out=str(work / f"{name}-out"), checkpoint=str(work / f"{name}-checkpoint"), subscriber=name
    )
    hub_cpu = process_cpu_seconds(hub_pid)
    spark_cpu = tree_cpu_seconds(os.getpid(), exclude=hub_pid)
    started = time.perf_counter()
    report = drain(spark, run, say=lambda line: None)
    elapsed = time.perf_counter() - started
    hub_cpu = process_cpu_seconds(hub_pid) - hub_cpu
    spark_cpu = tree_cpu_seconds(os.getpid(), exclude=hub_pid) - spark_cpu
    rows = count_rows(spark, run.out)
    written = parquet_bytes(run.out)
    shutil.rmtree(run.out)
    shutil.rmtree(run.checkpoint)
    if rows != messages or report.drained != messages:
        raise RuntimeError(f"drain {name} wrote {rows} rows, reported {report.drained}, expected {messages}")
    return {
        "seconds": round(elapsed, 2),
        "messages_per_s": round(messages / elapsed),
        "batches": report.batches,
        "spark_cpu_s": round(spark_cpu, 2),
        "hub_cpu_s": round(hub_cpu, 2),
        "parquet_bytes": written,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=5_000_000)
    parser.add_argument("--payload-bytes", type=int, default=100)
    parser.add_argument("--per-publish", type=int, default=1000, help="messages per publish (one entry)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=300_000, help="messages of each warm-up run")
    parser.add_argument("--max-messages-per-trigger", type=int, default=1_000_000)
    parser.add_argument("--max-messages-per-partition", type=int, default=DEFAULT_MAX_MESSAGES_PER_PARTITION)
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed after)")
    parser.add_argument("--out", default=str(RESULTS_DIR / "spark_bench.json"), help="where the JSON goes")
    parser.add_argument("--no-save", action="store_true", help="print the JSON, write it nowhere")
    args = parser.parse_args()

    work = Path(args.dir or tempfile.mkdtemp(prefix="spark-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    hub = HubProcess(work / "hub").start()
    address, hub_pid = hub.address, hub.process.pid
    spark = None
    try:
        publish_rate = publish(address, "bench", args.messages, args.payload_bytes, args.per_publish)
        publish(address, "warmup", args.warmup, args.payload_bytes, args.per_publish)
        with Client(address) as client:  # keeps every message: no drain's acknowledgement lets GC in
            for topic in ("bench", "warmup"):
                client.subscribe(topic, "bench-holder", start="earliest", window=1).close()

        spark = local_session("hedwig-spark-bench")
        register_synthetic(spark)
        settings = DrainSettings(
            hubs=(address,),
            topics=("bench",),
            out="",
            checkpoint="",
            once=True,
            max_messages_per_trigger=args.max_messages_per_trigger or None,
            max_messages_per_partition=args.max_messages_per_partition,
            progress_interval_s=1.0,
        )
        size = args.payload_bytes
        warm_settings = dataclasses.replace(settings, topics=("warmup",))
        warm = {
            "synthetic": run_synthetic(spark, work, "warm-synthetic", hub_pid, args.warmup, size, settings),
            "drain": run_drain(spark, work, "warm-drain", hub_pid, args.warmup, warm_settings),
        }
        synthetic, drained = [], []
        for r in range(args.rounds):
            made = run_synthetic(spark, work, f"synthetic-{r}", hub_pid, args.messages, size, settings)
            synthetic.append(made)
            drained.append(run_drain(spark, work, f"drain-{r}", hub_pid, args.messages, settings))
            print(json.dumps({"round": r, "synthetic": synthetic[-1], "drain": drained[-1]}), file=sys.stderr)
    finally:
        if spark is not None:
            spark.stop()
        hub.stop(timeout=60)
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)

    synthetic_rate = statistics.median(s["rows_per_s"] for s in synthetic)
    drain_rate = statistics.median(d["messages_per_s"] for d in drained)
    # CPU per message varies less than wall time on a shared machine: the drain's (its
    # Spark side and the hub together) against the synthetic source's.
    synthetic_cpu = statistics.median(s["spark_cpu_s"] for s in synthetic) / args.messages * 1e6
    drain_cpu = statistics.median(d["spark_cpu_s"] + d["hub_cpu_s"] for d in drained) / args.messages * 1e6
    result = {
        "benchmark": "spark_bench",
        "command": " ".join([COMMAND, *sys.argv[1:]]),
        "messages": args.messages,
        "payload_bytes": args.payload_bytes,
        "messages_per_publish": args.per_publish,
        "spark_master": "local[2]",
        "max_messages_per_trigger": settings.max_messages_per_trigger,
        "max_messages_per_partition": settings.max_messages_per_partition,
        "publish_messages_per_s": round(publish_rate),
        "warmup": warm,
        "synthetic_runs": synthetic,
        "drain_runs": drained,
        "synthetic_rows_per_s_median": round(synthetic_rate),
        "drain_messages_per_s_median": round(drain_rate),
        "drain_vs_synthetic": round(drain_rate / synthetic_rate, 3),
        "synthetic_cpu_us_per_message": round(synthetic_cpu, 2),
        "drain_cpu_us_per_message": round(drain_cpu, 2),
        "drain_vs_synthetic_by_cpu": round(synthetic_cpu / drain_cpu, 3),
        "target_ratio": 0.8,
        "met": drain_rate >= 0.8 * synthetic_rate,
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    emit(result, args.out, save=not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
