"""Key_Shared benchmark: a key_shared subscription beside a plain shared one, same run.

    .venv/bin/python bench/keyshared_bench.py [--quick] [--messages N] [--rounds R]
        [--keys K] [--run N] [--no-save]

A hub process (`python -m hedwig hub`, its defaults) holds a backlog of `--messages`
100-byte messages published in sets of 1000, each message with one of `--keys` keys
(1,000) drawn at random, `--run` (1) messages of one key after another: with 1 the
hardest case for the hub, every entry split into runs of a message or two for each
member, each sent as a delivery of its own. In turns within the same run, 3 worker
processes (bench/shared_bench.py's: blocking client, every message acknowledged by its
own `ack` call) take the whole backlog through a subscription of one kind:

- shared: kind="shared", whole entries to members in turn;
- key_shared: kind="key_shared", every key's messages to one member, in order.

Each turn's clock starts when its processes have connected and stops at the last
acknowledgement the hub has taken (shared_bench.turn). The target is key_shared >= 0.8 x
shared, the ratio of the medians of `--rounds` turns each (alternating). Prints JSON
and writes bench/results/keyshared_bench.json (keyshared_bench_runN.json with --run N).
"""

import argparse
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
from statistics import median

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.client_processes import PAYLOAD, PAYLOAD_BYTES
from bench.figures import RESULTS_DIR, emit, load
from bench.shared_bench import SET, alternate, medians
from hedwig.testing.hubprocess import HubProcess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_NAME = "keyshared_bench{}.json"  # (with --run N above 1: keyshared_bench_runN.json)
WORKERS = 3
TARGET_RATIO = 0.8
KINDS = ("shared", "key_shared")


def prepare(hub, topic, total, kind, keys: int, run: int) -> None:
    """The backlog (the same keys, drawn with the same seed, for every turn; `run`
    messages of one key after another) and the subscription, created at its start."""
    from hedwig.client import Client

    rng = random.Random(39)
    names = [f"key-{i}" for i in range(keys)]
    with Client(hub.address) as client:
        client.subscribe(topic, "s", start="earliest", kind=kind).close()
        payloads = [PAYLOAD] * SET
        for _ in range(total // SET):
            drawn = [rng.choice(names) for _ in range(-(-SET // run))]
            client.publish_many(topic, payloads, keys=[key for key in drawn for _ in range(run)][:SET])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, to check it runs (not saved)")
    parser.add_argument("--messages", type=int, default=100_000, help="backlog per turn (default 100,000)")
    parser.add_argument("--keys", type=int, default=1000, help="distinct keys (default 1,000)")
    parser.add_argument(
        "--run", type=int, default=1, help="messages of one key after another in a publish (default 1)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="turns of each kind, alternating (default 2)")
    parser.add_argument("--no-save", action="store_true", help="do not write the results file")
    args = parser.parse_args(argv)
    total = 20_000 if args.quick else args.messages
    rounds = 1 if args.quick else args.rounds
    ctx = multiprocessing.get_context("spawn")
    directory = tempfile.mkdtemp(prefix="keyshared-bench-")
    hub = HubProcess(os.path.join(directory, "data"), cwd=ROOT).start()
    report = {
        "benchmark": "keyshared_bench",
        "command": "python bench/keyshared_bench.py" + (" --quick" if args.quick else ""),
        "payload_bytes": PAYLOAD_BYTES,
        "messages_per_turn": total,
        "keys": args.keys,
        "messages_per_key_run": args.run,
        "workers": WORKERS,
        "cores": os.cpu_count(),
        "load_before": load(),
        "turns": [],
    }
    try:
        kinds = [(kind, WORKERS) for kind in KINDS]
        alternate(
            ctx,
            hub,
            report,
            rounds,
            kinds,
            total,
            lambda topic, kind: prepare(hub, topic, total, kind, args.keys, args.run),
        )
    finally:
        hub.stop(timeout=120)
        shutil.rmtree(directory, ignore_errors=True)
    rate = medians(report, KINDS)
    ratio = rate["key_shared"] / rate["shared"]
    # The hub's CPU seconds per 100k messages, median of each kind's turns: steadier than
    # the rates on a machine whose other work comes and goes.
    hub_cpu = {
        kind: median([t["hub_cpu_s"] * 100_000 / total for t in report["turns"] if t["kind"] == kind])
        for kind in KINDS
    }
    report["figures"] = {
        "shared_msgs_per_s": rate["shared"],
        "key_shared_msgs_per_s": rate["key_shared"],
        "key_shared_over_shared": round(ratio, 3),
        "shared_hub_cpu_s_per_100k": round(hub_cpu["shared"], 3),
        "key_shared_hub_cpu_s_per_100k": round(hub_cpu["key_shared"], 3),
        "target": f"key_shared >= {TARGET_RATIO} x shared",
        "meets_target": ratio >= TARGET_RATIO,
    }
    report["load_after"] = load()
    results = RESULTS_DIR / RESULTS_NAME.format("" if args.run == 1 else f"_run{args.run}")
    emit(report, results, save=not (args.quick or args.no_save))
    return 0


if __name__ == "__main__":
    sys.exit(main())
