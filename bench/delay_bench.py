"""Delayed delivery benchmark: how late delayed messages come, and what a held one costs.

    .venv/bin/python bench/delay_bench.py [--quick] [--messages N] [--spread S] [--no-save]

Lateness: a hub process (its defaults) and one member of a shared subscription (the
blocking client, every message acknowledged). `--messages` (10,000) messages are
published at once in sets of 500, each delayed by a time drawn uniformly from 0 to
`--spread` seconds (20), out of time order; one in ten carries no delay, the peer in the
same run: its latency from publish to receipt is what the hub and client cost anyway.
A delayed message's lateness is its receipt less its `hedwig.deliver_at`; an early one
(negative) would be a bug, and is counted.

Memory: what one delayed run held aside costs (hedwig/delivery/delays.py's DelayedRuns:
a heap of (time, first seq-id, last seq-id)), measured with tracemalloc over 100,000
runs of realistic numbers, and the runs that fit in 1 GiB.

Prints JSON and writes bench/results/delay_bench.json.
"""

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.figures import RESULTS_DIR, emit, load
from hedwig.delivery.delays import DelayedRuns
from hedwig.protocol.schedule import DELIVER_AT, scheduled_properties
from hedwig.testing.hubprocess import HubProcess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SET = 500
MEMORY_RUNS = 100_000
GIB = 1 << 30


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def lateness(hub, total: int, spread: float) -> dict:
    from hedwig.client import Client

    rng = random.Random(39)
    sent_at = {}
    with Client(hub.address) as client:
        client.subscribe("delays", "w", kind="shared", start="earliest").close()
        for _ in range(0, total, SET):
            now = time.time()
            properties = [
                None if rng.random() < 0.1 else scheduled_properties(None, now, rng.uniform(0, spread))
                for _ in range(SET)
            ]
            seqs = client.publish_many("delays", [b"x" * 100] * SET, properties)
            for seq in seqs:
                sent_at[seq] = now
        member = client.subscribe("delays", "w", kind="shared", mode="attach", window=1000)
        late, undelayed = [], []
        got = 0
        while got < total:
            message = member.receive(timeout=spread + 60)
            if message is None:
                raise SystemExit(f"only {got} of {total} messages came")
            at = time.time() * 1000
            member.ack(message)
            got += 1
            deliver_at = message.properties.get(DELIVER_AT)
            if deliver_at is None:
                undelayed.append(at - sent_at[message.seq] * 1000)
            else:
                late.append(at - deliver_at)
        hub_rows = client.describe("delays")["subscribers"]
    return {
        "delayed_messages": len(late),
        "early": sum(1 for v in late if v < 0),
        "lateness_ms_p50": round(statistics.median(late), 1),
        "lateness_ms_p99": round(percentile(late, 0.99), 1),
        "lateness_ms_max": round(max(late), 1),
        "undelayed_messages": len(undelayed),
        "undelayed_latency_ms_p50": round(statistics.median(undelayed), 1),
        "undelayed_latency_ms_p99": round(percentile(undelayed, 0.99), 1),
        "still_delayed_at_end": hub_rows[0].get("delayed"),
    }


def memory_per_run() -> dict:
    """Bytes one held run costs: tracemalloc's growth over MEMORY_RUNS holds."""

    class NoClock:
        def seconds(self):
            return 0.0

        def callLater(self, *_):  # pragma: no cover - arm() is not called here
            raise AssertionError

    rng = random.Random(7)
    base_ms, base_seq = int(time.time() * 1000), 10_000_000
    tracemalloc.start()
    runs = DelayedRuns(NoClock(), MEMORY_RUNS, lambda: None)
    before = tracemalloc.get_traced_memory()[0]
    for i in range(MEMORY_RUNS):
        seq = base_seq + 3 * i
        runs.hold(base_ms + rng.randrange(20_000), seq, seq + rng.randrange(2))
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    per_run = grown / MEMORY_RUNS
    return {
        "runs_measured": MEMORY_RUNS,
        "bytes_per_held_run": round(per_run, 1),
        "held_runs_per_gib": int(GIB / per_run),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, to check it runs (not saved)")
    parser.add_argument("--messages", type=int, default=10_000, help="messages (default 10,000)")
    parser.add_argument("--spread", type=float, default=20.0, help="delays from 0 to this many seconds (20)")
    parser.add_argument("--no-save", action="store_true", help="do not write the results file")
    args = parser.parse_args(argv)
    total = 2000 if args.quick else args.messages
    spread = 2.0 if args.quick else args.spread
    directory = tempfile.mkdtemp(prefix="delay-bench-")
    hub = HubProcess(os.path.join(directory, "data"), cwd=ROOT).start()
    report = {
        "benchmark": "delay_bench",
        "command": "python bench/delay_bench.py" + (" --quick" if args.quick else ""),
        "messages": total,
        "delay_spread_s": spread,
        "cores": os.cpu_count(),
        "load_before": load(),
    }
    try:
        report["lateness"] = lateness(hub, total, spread)
    finally:
        hub.stop(timeout=120)
        shutil.rmtree(directory, ignore_errors=True)
    report["memory"] = memory_per_run()
    figures = report["lateness"]
    report["figures"] = {
        "early": figures["early"],
        "lateness_ms_p99": figures["lateness_ms_p99"],
        "lateness_p99_over_undelayed_latency_p99": round(
            figures["lateness_ms_p99"] / max(figures["undelayed_latency_ms_p99"], 0.1), 2
        ),
        "bytes_per_held_run": report["memory"]["bytes_per_held_run"],
        "held_runs_per_gib": report["memory"]["held_runs_per_gib"],
    }
    report["load_after"] = load()
    emit(report, RESULTS_DIR / "delay_bench.json", save=not (args.quick or args.no_save))
    return 0


if __name__ == "__main__":
    sys.exit(main())
