"""Random fault schedules against a region of two hubs on a three-server ZooKeeper
ensemble, each hub and server in a network namespace of its own (hedwig.testing.faults).

    .venv/bin/python bench/faults_bench.py --seed S --schedules N [--faults-per-schedule K]
        [--store mmap] [--out F]

Runs as root (namespaces, iptables). Each schedule is a fresh region (a ZooKeeper root
and a storage root of its own: mmap ledgers shared by both hubs; or a RADOS namespace of
its own with `--store rados`) under load (one
idempotent producer and one durable subscriber per topic, two topics), then K faults
drawn from the seed (hedwig.testing.faults.schedule.random_schedule: which fault, held
0.5-3 session timeouts of 2 s), each healed and followed by acknowledgements on every
topic again; then the load stops, the logs are read and the checker runs.

JSON out (stdout, and `--out`): schedules run, acked, lost, duplicated, reordered,
split_brain, phantom, subscriber gaps/mismatches/reordered, indeterminate (and how many
of them were stored), unavailable_s (per fault applied: the longest time any topic went
without an acknowledgement from the fault to its recovery, summed), stalls by fault
(count, median and max seconds), every fault applied (kind, nodes) and each schedule's
own figures. `--store rados`: the regions keep their ledgers in a RADOS pool of a Ceph
cluster on a node of its own (1 monitor, 3 OSDs), and the schedules draw from one more
fault, the owner cut off from that node (rados-from-owner).
"""

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hedwig.testing.faults.history import Report
from hedwig.testing.faults.schedule import Stage, random_schedule

SESSION_TIMEOUT_MS = 2000


def run_schedule(stage, rng, faults_per_schedule: int, rados: bool) -> dict:
    steps = random_schedule(rng, faults_per_schedule, SESSION_TIMEOUT_MS / 1000.0, rados)
    before = len(stage.network.faults)
    trial = stage.trial(session_timeout_ms=SESSION_TIMEOUT_MS)
    try:
        for name, hold_s in steps:
            trial.apply(name, hold_s, rng)
        report = trial.finish()
    finally:
        trial.stop()
        stage.restore()
    return {
        "steps": trial.stalls,
        "faults": stage.network.faults[before:],
        "report": report,
        "summary": report.summary(),
        "violations": {k: [repr(v) for v in vs] for k, vs in report.violations().items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--schedules", type=int, default=3)
    parser.add_argument("--faults-per-schedule", type=int, default=2)
    parser.add_argument("--store", choices=("mmap", "rados"), default="mmap")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rados = args.store == "rados"
    rng = random.Random(args.seed)
    runs = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="faults-bench-") as work, Stage(work, rados=rados) as stage:
        for number in range(args.schedules):
            run = run_schedule(stage, rng, args.faults_per_schedule, rados)
            runs.append(run)
            print(f"schedule {number + 1}/{args.schedules}: {run['steps']} {run['summary']}", file=sys.stderr)
    totals = {name: 0 for name in Report().summary() if name != "unavailable_s"}
    for run in runs:
        for name in totals:
            totals[name] += run["summary"][name]
    stalls = {}
    for run in runs:
        for step in run["steps"]:
            stalls.setdefault(step["fault"], []).append(step["stall_s"])
    result = {
        "seed": args.seed,
        "store": args.store,
        "schedules": len(runs),
        "faults_per_schedule": args.faults_per_schedule,
        "session_timeout_s": SESSION_TIMEOUT_MS / 1000.0,
        **totals,
        "unavailable_s": round(sum(sum(stall for stall in by) for by in stalls.values()), 3),
        "stalls_by_fault": {
            name: {"count": len(by), "median_s": round(statistics.median(by), 3), "max_s": max(by)}
            for name, by in sorted(stalls.items())
        },
        "faults": [fault for run in runs for fault in run["faults"]],
        "runs": [{"steps": run["steps"], **run["summary"], "violations": run["violations"]} for run in runs],
        "wall_s": round(time.monotonic() - started, 1),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as out:
            out.write(text + "\n")
    return 0 if all(run["report"].valid for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
