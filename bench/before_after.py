"""A benchmark run from two checkouts in turn, in one session: before and after a change.

    .venv/bin/python bench/before_after.py --before DIR --after DIR [--rounds N]
        [--out NAME] -- bench/pubsub_bench.py --only publish_many fanout

Figures mean something here only as ratios measured in the same run (the machine's
speed moves about 3x from day to day, and with the other work on its 2 cores), so the
two checkouts alternate: before, after, before, after... Each run is the benchmark's
script of that checkout, started in it with it first on PYTHONPATH (its hub, its
clients) and `--no-save`; its JSON report (the last thing it prints) gives the figures.
The report keeps every run's figures, their medians, and after/before of the medians;
`--out NAME` writes it to bench/results/NAME.json.

Make the "before" checkout with `git worktree add DIR COMMIT`; copy the benchmark
script there if the commit predates it (the script measures, the checkout's hedwig is
measured).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.figures import RESULTS_DIR, emit, load

# Report keys beside "figures" that are figures too (spark_bench's medians).
TOP_LEVEL_FIGURES = ("drain_messages_per_s_median", "synthetic_rows_per_s_median", "drain_vs_synthetic")
# Ratios to a peer measured in the same run (round_trip_bench's, pubsub_bench's).
RATIO_KEYS = ("ratio_to_echo", "p50_ratio_to_echo", "ratio_to_redis", "p50_ratio_to_redis")
# In a profile script's section, the figures (bench/publish_profile.py, receive_profile.py,
# client_calls.py).
PROFILE_KEYS = ("bytecodes", "python_calls", "us_per_publish", "calls_per_message")
# In a figure's dict, the number that is the figure, by preference.
VALUE_KEYS = ("value", "per_s", "p50_us")


def rates_of(report: dict) -> dict:
    """A report that keeps its figures in sections rather than under "figures"
    (ledger_bench's cases, delivery_bench's push and catch_up): every rate in it (a
    number under a key ending in per_s), named by where it sits (cases.small.reads_per_s,
    push[1].messages_per_s)."""
    found = {}

    def walk(where: str, value, depth: int) -> None:
        if isinstance(value, dict) and depth < 4:
            for key, item in value.items():
                walk(f"{where}.{key}" if where else key, item, depth + 1)
        elif isinstance(value, list) and depth < 4:
            for i, item in enumerate(value):
                walk(f"{where}[{i}]", item, depth + 1)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and where.endswith("per_s"):
            found[where] = value

    walk("", report, 0)
    return found


def counts_of(report: dict) -> dict:
    """The profile scripts' sections (publish_profile's "no_subscriber", receive_profile's
    "publish", client_calls' "aio_publish", ...): their exact counts and their time, as
    "<section>_<figure>"; and path_calls' call counts, which are all its report holds."""
    found = {}
    for section, value in report.items():
        if isinstance(value, dict) and any(key in value for key in PROFILE_KEYS):
            for key in PROFILE_KEYS:
                if isinstance(value.get(key), (int, float)):
                    found[f"{section}_{key}"] = value[key]
        elif isinstance(value, int) and not isinstance(value, bool) and "benchmark" not in report:
            found[section] = value
    return found


def figures_of(report: dict) -> dict:
    """name -> number, from a benchmark's report."""
    found = counts_of(report)
    if "figures" not in report:
        found.update(rates_of(report))
        return found
    for name, figure in report.get("figures", {}).items():
        if isinstance(figure, dict):
            for key in VALUE_KEYS:
                if isinstance(figure.get(key), (int, float)):
                    found[name] = figure[key]
                    break
            if "latency" in name and isinstance(figure.get("p99_us"), (int, float)):
                found[f"{name}_p99_us"] = figure["p99_us"]
            for key in RATIO_KEYS:
                if key in figure:
                    found[f"{name}_{key}"] = figure[key]
        elif isinstance(figure, (int, float)):
            found[name] = figure
    for key in TOP_LEVEL_FIGURES:
        if isinstance(report.get(key), (int, float)):
            found[key] = report[key]
    return found


def run_once(tree: Path, command: list, python: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run(
        [python, *command, "--no-save"], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        what = f"{' '.join(command)} in {tree}"
        raise RuntimeError(f"{what} exited with {done.returncode}:\n{done.stderr[-4000:]}")
    text = done.stdout
    start = 0 if text.startswith("{") else text.rindex("\n{\n") + 1  # the report is printed last
    return json.loads(text[start:])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, type=Path, help="the checkout before the change")
    parser.add_argument("--after", required=True, type=Path, help="the checkout after it")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each checkout (default 3)")
    parser.add_argument("--out", help="write bench/results/OUT.json")
    parser.add_argument("--python", default=sys.executable, help="the interpreter (default: this one)")
    parser.add_argument("command", nargs="+", help="the benchmark script and its options, after --")
    args = parser.parse_args(argv)
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    runs = {"before": [], "after": []}
    for round_number in range(args.rounds):
        for side, tree in trees.items():
            before_load = load()
            figures = figures_of(run_once(tree, args.command, args.python))
            figures["load"] = f"{before_load} -> {load()}"
            runs[side].append(figures)
            print(json.dumps({"round": round_number, side: figures}), file=sys.stderr)
    medians = {}
    for side, side_runs in runs.items():
        names = {name for run in side_runs for name, value in run.items() if value is not None}
        names.discard("load")
        medians[side] = {
            name: statistics.median(run[name] for run in side_runs if run.get(name) is not None)
            for name in sorted(names)
        }
    ratios = {
        name: round(medians["after"][name] / medians["before"][name], 3)
        for name in medians["after"]
        if medians["before"].get(name)
    }
    report = {
        "benchmark": "before_after",
        "command": "python bench/before_after.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "before": f"{trees['before']} at {_head(trees['before'])}",
        "after": f"{trees['after']} at {_head(trees['after'])}",
        "rounds": args.rounds,
        "runs": runs,
        "medians": medians,
        "after_over_before": ratios,
    }
    emit(report, RESULTS_DIR / f"{args.out}.json", save=args.out is not None)
    return 0


def _head(tree: Path) -> str:
    command = ["git", "-C", str(tree), "describe", "--always", "--dirty"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"


if __name__ == "__main__":
    sys.exit(main())
