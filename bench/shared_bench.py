"""Work-queue benchmark: a shared subscription's members beside one exclusive subscriber.

    .venv/bin/python bench/shared_bench.py [--quick] [--messages N] [--rounds R] [--no-save]

A hub process (`python -m hedwig hub`, its defaults) holds a backlog of `--messages`
100-byte messages published in sets of 1000. Then, in turns within the same run:

- exclusive: one subscriber process (blocking client, `receive_batch`, every message made
  a Message object and acknowledged one `ack` call at a time, cumulative) takes the
  whole backlog from the earliest;
- shared: 4 worker processes attach to one shared subscription (kind="shared") and take
  the same backlog between them, each message acknowledged by its own `ack` call (the
  client sends them as ranges, an ACK per 100).

Each turn's clock starts when its processes have connected (a barrier) and before they
subscribe, and stops at the last acknowledgement the hub has taken: the hub's consumed
seq-id reaching the end (polled through DESCRIBE_TOPIC, the time of the last ack a
worker made). The figure is delivered-and-acknowledged messages per second in total;
the target is shared >= 0.5 x exclusive, the ratio of the medians of `--rounds` turns
each (alternating, so load drift hits both). Prints JSON and writes
bench/results/shared_bench.json.
"""

import argparse
import multiprocessing
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.client_processes import PAYLOAD, PAYLOAD_BYTES, run_processes
from bench.figures import RESULTS_DIR, emit, load, median, own_cpu_seconds, process_cpu_seconds
from hedwig.testing.hubprocess import HubProcess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = RESULTS_DIR / "shared_bench.json"
WORKERS = 4
SET = 1000
TARGET_RATIO = 0.5


def worker(address, topic, subscriber_id, kind, barrier, done, out):
    """Take messages of (topic, subscriber_id) and acknowledge each, until `done` is set;
    how many, when it began, its last ack, its CPU seconds."""
    from hedwig.client import Client

    taken = 0
    last_ack = None
    with Client(address) as client:
        barrier.wait()
        started = time.perf_counter()
        cpu = own_cpu_seconds()
        subscription = client.subscribe(topic, subscriber_id, kind=kind)
        while not done.is_set():
            batch = subscription.receive_batch(timeout=0.2)
            for message in batch:
                subscription.ack(message)
            if batch:
                taken += len(batch)
                last_ack = time.perf_counter()
        cpu = own_cpu_seconds() - cpu
        subscription.close()
    out.put({"taken": taken, "started": started, "last_ack": last_ack, "cpu_s": round(cpu, 2)})


def watcher(address, topic, subscriber_id, total, done, out):
    """Set `done` once the subscription's consumed seq-id reaches `total`."""
    from hedwig.client import Client

    with Client(address) as client:
        while True:
            rows = client.describe(topic)["subscribers"]
            if next(r for r in rows if r["subscriber_id"] == subscriber_id)["consumed_seq"] >= total:
                break
            time.sleep(0.01)  # (the pace of polling)
    done.set()
    out.put({"consumed": total})


def turn(ctx, hub, topic, subscriber_id, kind, members, total) -> dict:
    """One turn: `members` processes take the backlog through (topic, subscriber_id)."""
    barrier = ctx.Barrier(members)
    done = ctx.Event()
    hub_cpu = process_cpu_seconds(hub.process.pid)
    targets = [(worker, (hub.address, topic, subscriber_id, kind, barrier, done)) for _ in range(members)]
    targets.append((watcher, (hub.address, topic, subscriber_id, total, done)))
    results = [r for r in run_processes(ctx, targets, hubs=[hub]) if "taken" in r]
    started = min(r["started"] for r in results)
    finished = max(r["last_ack"] for r in results if r["last_ack"] is not None)
    taken = sum(r["taken"] for r in results)
    seconds = finished - started
    return {
        "messages_per_s": round(total / seconds),
        "seconds": round(seconds, 3),
        "messages_taken": taken,
        "per_member": sorted(r["taken"] for r in results),
        "client_cpu_s": sum(r["cpu_s"] for r in results),
        "hub_cpu_s": round(process_cpu_seconds(hub.process.pid) - hub_cpu, 2),
    }


def alternate(ctx, hub, report, rounds, kinds, total, prepare_turn) -> None:
    """`rounds` turns of each (kind, members) of `kinds`, alternating (so that load drift
    hits all), each over the backlog `prepare_turn(topic, kind)` makes for subscription
    "s"; their figures appended to report["turns"]."""
    for n in range(rounds):
        for kind, members in kinds:
            topic = f"{kind}-{n}"
            prepare_turn(topic, kind)
            before = load()
            figures = turn(ctx, hub, topic, "s", kind, members, total)
            report["turns"].append({"kind": kind, "load": f"{before} -> {load()}", **figures})
            print(f"{kind} turn {n + 1}: {figures['messages_per_s']:,} msg/s", file=sys.stderr)


def add_turn_arguments(parser, messages: int) -> None:
    """What every benchmark of turns takes: --quick, --messages (default `messages`),
    --rounds, --no-save."""
    parser.add_argument("--quick", action="store_true", help="small sizes, to check it runs (not saved)")
    parser.add_argument(
        "--messages", type=int, default=messages, help=f"backlog per turn (default {messages:,})"
    )
    parser.add_argument("--rounds", type=int, default=2, help="turns of each kind, alternating (default 2)")
    parser.add_argument("--no-save", action="store_true", help="do not write the results file")


def run_turns(name, args, total, workers, kinds, prepare_turn, **described) -> dict:
    """The report of `name`: on a hub process of its own, --rounds turns (1 with --quick)
    of each (kind, members) of `kinds`, alternating, each over the backlog
    prepare_turn(hub, topic, kind) makes; `described`: more of what was run."""
    ctx = multiprocessing.get_context("spawn")
    directory = tempfile.mkdtemp(prefix=f"{name}-")
    hub = HubProcess(os.path.join(directory, "data"), cwd=ROOT).start()
    report = {
        "benchmark": name,
        "command": f"python bench/{name}.py" + (" --quick" if args.quick else ""),
        "payload_bytes": PAYLOAD_BYTES,
        "messages_per_turn": total,
        **described,
        "workers": workers,
        "cores": os.cpu_count(),
        "load_before": load(),
        "turns": [],
    }
    try:
        rounds = 1 if args.quick else args.rounds
        alternate(ctx, hub, report, rounds, kinds, total, lambda topic, kind: prepare_turn(hub, topic, kind))
    finally:
        hub.stop(timeout=120)
        shutil.rmtree(directory, ignore_errors=True)
    return report


def medians(report, kinds) -> dict:
    """kind -> the median messages_per_s of its turns."""
    return {
        kind: median([t["messages_per_s"] for t in report["turns"] if t["kind"] == kind]) for kind in kinds
    }


def prepare(hub, topic, total, subscriber_ids) -> None:
    """The backlog, and each subscription created at its start (the earliest)."""
    from hedwig.client import Client

    with Client(hub.address) as client:
        for subscriber_id, kind in subscriber_ids:
            client.subscribe(topic, subscriber_id, start="earliest", kind=kind).close()
        payloads = [PAYLOAD] * SET
        for _ in range(total // SET):
            client.publish_many(topic, payloads)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_turn_arguments(parser, 1_000_000)
    args = parser.parse_args(argv)
    total = 50_000 if args.quick else args.messages
    report = run_turns(
        "shared_bench",
        args,
        total,
        WORKERS,
        (("exclusive", 1), ("shared", WORKERS)),
        lambda hub, topic, kind: prepare(hub, topic, total, [("s", kind)]),
    )
    rate = medians(report, ("exclusive", "shared"))
    ratio = rate["shared"] / rate["exclusive"]
    report["figures"] = {
        "exclusive_msgs_per_s": rate["exclusive"],
        "shared_msgs_per_s": rate["shared"],
        "shared_over_exclusive": round(ratio, 3),
        "target": f"shared >= {TARGET_RATIO} x exclusive",
        "meets_target": ratio >= TARGET_RATIO,
    }
    report["load_after"] = load()
    emit(report, RESULTS, save=not (args.quick or args.no_save))
    return 0


if __name__ == "__main__":
    sys.exit(main())
