"""The reactors Twisted offers, for a hub answering one message at a time.

    .venv/bin/python bench/reactor_bench.py [--reactors epoll asyncio uvloop] [--rounds N]
        [--no-save]

A hub under each reactor (`epoll`, Twisted's default on Linux; `asyncio`, Twisted's
asyncioreactor on the standard event loop; `uvloop`, the same on uvloop when it is
installed) and a bare Twisted echo server under each, all on one CPU with their clients
(bench/round_trip_bench.py's `same_cpu` placement, where a round trip costs what the two
processes do and not a wake-up of another CPU). Rounds alternate over every server;
each figure is the best of its runs: blocking publishes per second and echo round trips
per second. Prints JSON and writes bench/results/reactor_bench.json.
"""

import argparse
import importlib.util
import multiprocessing
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.client_processes import PAYLOAD, pin, run_processes
from bench.echo_peer import ServerProcess, echo_client
from bench.figures import RESULTS_DIR, emit, load
from bench.round_trip_bench import TOPIC, hedwig_client, publish_frame
from hedwig.testing.hubprocess import HubProcess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = RESULTS_DIR / "reactor_bench.json"
REACTORS = ("epoll", "asyncio", "uvloop")


def install(kind: str) -> None:
    """Install the reactor `kind` (before anything imports twisted.internet.reactor):
    hedwig.hub.reactors' ([hub] reactor), by the name of Twisted's own here."""
    from hedwig.hub.reactors import install_reactor

    install_reactor("default" if kind == "epoll" else kind)


def echo_server(kind, ready):
    install(kind)
    from bench.echo_peer import echo_server as serve

    serve(ready)


class EchoUnder(ServerProcess):
    """bench/echo_peer.py's echo server, under the reactor `kind`."""

    def __init__(self, ctx, kind):
        super().__init__(ctx, echo_server, (kind,))
        self.kind = kind


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reactors", nargs="+", choices=REACTORS, default=list(REACTORS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=20_000, help="round trips per run")
    parser.add_argument("--no-save", action="store_true", help=f"do not write bench/results/{RESULTS.name}")
    args = parser.parse_args(argv)
    kinds = [k for k in args.reactors if k != "uvloop" or importlib.util.find_spec("uvloop")]
    ctx = multiprocessing.get_context("spawn")
    cpu = {min(os.sched_getaffinity(0))}
    directory = tempfile.mkdtemp(prefix="reactor-bench-")
    launcher = [sys.executable, "-m", "bench.reactor_bench", "--hub"]
    servers = {}
    runs = {}
    try:
        for kind in kinds:
            hub = HubProcess(os.path.join(directory, kind), cwd=ROOT, launcher=[*launcher, kind])
            servers[f"blocking_publish_{kind}"] = hub.start()
            servers[f"echo_{kind}"] = EchoUnder(ctx, kind).start()
        for server in servers.values():
            pin(server.process.pid, cpu)
        request = publish_frame(TOPIC, PAYLOAD)
        for _ in range(args.rounds):
            for name, server in servers.items():
                if name.startswith("echo"):
                    worker = (echo_client, (server.address, request, args.count))
                else:
                    worker = (hedwig_client, (server.address, TOPIC, args.count))
                [result] = run_processes(ctx, [worker], cpus=cpu)
                runs.setdefault(name, []).append(result["per_s"])
                print(f"{name}: {result['per_s']:,}/s", file=sys.stderr)
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(directory, ignore_errors=True)
    best = {name: max(values) for name, values in runs.items()}
    report = {
        "benchmark": "reactor_bench",
        "command": " ".join(["python bench/reactor_bench.py", *(sys.argv[1:] if argv is None else argv)]),
        "placement": f"every server and client on CPU {sorted(cpu)}",
        "round_trips_per_run": args.count,
        "load": load(),
        "runs_per_s": runs,
        "best_per_s": best,
        "blocking_publish_ratio_to_echo": {
            kind: round(best[f"blocking_publish_{kind}"] / best[f"echo_{kind}"], 3) for kind in kinds
        },
        "uvloop": "measured" if "uvloop" in kinds else "skipped: uvloop is not installed",
    }
    emit(report, RESULTS, save=not args.no_save)
    return 0


def run_hub_under(kind: str, hub_args: list) -> int:
    """`python -m bench.reactor_bench --hub KIND HUB-ARGS...`: `hedwig hub` on that reactor."""
    install(kind)
    from hedwig.commands.main import main as hedwig_main

    return hedwig_main(["hub", *hub_args])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--hub"]:
        sys.exit(run_hub_under(sys.argv[2], sys.argv[3:]))
    sys.exit(main())
