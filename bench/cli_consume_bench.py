"""The command line's consumers: `hedwig subscribe` beside `hedwig read`, on one backlog.

    .venv/bin/python bench/cli_consume_bench.py [--quick] [--messages N] [--rounds R] [--no-save]

A hub process holds a backlog of `--messages` messages ("message 0000001", ...,
published in sets of 1000). Then, in turns within the same run, each command prints the
whole backlog as a user runs it, `python -m hedwig ...` in its own process:

- read_pipe: `hedwig read TOPIC` into a pipe this process reads (as `| wc -l` would);
- subscribe_pipe: `hedwig subscribe TOPIC sN --from earliest --count N` into such a pipe
  (a new subscription each turn: it prints, and acknowledges what its reader took);
- subscribe_file: the same into /dev/null (a file: printed once written).

The clock runs from the command's start to its exit, with every line read. Figures are
messages per second, the median of `--rounds` turns each, and subscribe/read ratios of
those medians (the target: subscribe into a pipe within 1.5x of read's time). Prints
JSON and writes bench/results/cli_consume_bench.json; run under bench/before_after.py
for the same figures of another checkout in the same session.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.figures import RESULTS_DIR, emit, load, median, report_start
from hedwig.testing.hubprocess import HubProcess, hub_environment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = RESULTS_DIR / "cli_consume_bench.json"
TOPIC = "cli-backlog"
SET = 1000
TARGET_PIPE_RATIO = 1.5  # subscribe's time into a pipe, at most this many times read's


def publish_backlog(address: str, count: int) -> None:
    from hedwig.client import Client

    with Client(address) as client:
        for first in range(0, count, SET):
            client.publish_many(TOPIC, [b"message %07d" % i for i in range(first, min(first + SET, count))])


def timed(command: list, into_pipe: bool, expected: int) -> float:
    """Seconds from starting `command` to its exit, its output read to the end (a pipe) or
    sent to /dev/null; RuntimeError when it did not print `expected` lines."""
    env = hub_environment()
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    started = time.perf_counter()
    if into_pipe:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, env=env, cwd=ROOT)
        lines = 0
        while chunk := process.stdout.read1(1 << 16):
            lines += chunk.count(b"\n")
        process.wait()
    else:
        with open(os.devnull, "wb") as sink:
            process = subprocess.run(command, stdout=sink, env=env, cwd=ROOT)
        lines = expected
    elapsed = time.perf_counter() - started
    if process.returncode != 0 or lines != expected:
        raise RuntimeError(f"{command}: exit status {process.returncode}, {lines} of {expected} lines")
    return elapsed


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a small run that checks the bench works")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.messages, args.rounds = 20_000, 1
    report = report_start("cli_consume_bench", argv, messages=args.messages, rounds=args.rounds)
    directory = tempfile.mkdtemp(prefix="cli-consume-")
    hedwig = [sys.executable, "-m", "hedwig"]
    try:
        with HubProcess(os.path.join(directory, "data")) as hub:
            publish_backlog(hub.address, args.messages)
            at = ["--hub", hub.address]
            seconds = {"read_pipe": [], "subscribe_pipe": [], "subscribe_file": []}
            for turn in range(args.rounds):
                seconds["read_pipe"].append(timed([*hedwig, *at, "read", TOPIC], True, args.messages))
                for name, into_pipe in (("subscribe_pipe", True), ("subscribe_file", False)):
                    command = [*hedwig, *at, "subscribe", TOPIC, f"{name}-{turn}", "--from", "earliest"]
                    command += ["--count", str(args.messages)]
                    seconds[name].append(timed(command, into_pipe, args.messages))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    medians = {name: median(values) for name, values in seconds.items()}
    figures = {f"{name}_messages_per_s": round(args.messages / s) for name, s in medians.items()}
    figures["subscribe_pipe_time_vs_read"] = round(medians["subscribe_pipe"] / medians["read_pipe"], 2)
    figures["subscribe_file_time_vs_read"] = round(medians["subscribe_file"] / medians["read_pipe"], 2)
    report["figures"] = figures
    report["seconds"] = {name: [round(s, 3) for s in values] for name, values in seconds.items()}
    report["target"] = f"subscribe into a pipe <= {TARGET_PIPE_RATIO}x read's time"
    report["met"] = figures["subscribe_pipe_time_vs_read"] <= TARGET_PIPE_RATIO
    report["load_after"] = load()
    emit(report, RESULTS, save=not (args.no_save or args.quick))
    return report


if __name__ == "__main__":
    main()
