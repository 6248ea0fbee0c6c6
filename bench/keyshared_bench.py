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
import os
import random
import sys
from statistics import median

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.client_processes import PAYLOAD
from bench.figures import RESULTS_DIR, emit, load
from bench.shared_bench import SET, add_turn_arguments, medians, run_turns

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
    add_turn_arguments(parser, 100_000)
    parser.add_argument("--keys", type=int, default=1000, help="distinct keys (default 1,000)")
    parser.add_argument(
        "--run", type=int, default=1, help="messages of one key after another in a publish (default 1)"
    )
    args = parser.parse_args(argv)
    total = 20_000 if args.quick else args.messages
    report = run_turns(
        "keyshared_bench",
        args,
        total,
        WORKERS,
        [(kind, WORKERS) for kind in KINDS],
        lambda hub, topic, kind: prepare(hub, topic, total, kind, args.keys, args.run),
        keys=args.keys,
        messages_per_key_run=args.run,
    )
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
