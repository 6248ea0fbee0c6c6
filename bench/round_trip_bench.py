"""One message per round trip: hedwig beside a bare Twisted echo server and Redis.

    .venv/bin/python bench/round_trip_bench.py [--quick] [--rounds N]
        [--placements same_cpu two_cpus free] [--no-save]

What a user measures first: `client.publish(topic, payload)` once per message, and how
long a subscriber waits for each. Every server (an echo server, a hub with its defaults,
and redis-server when this machine has it) runs in a process of its own, and so does
every client:

- echo: a bare Twisted echo server (bench/echo_peer.py) and a raw-socket client sending
  the bytes of hedwig's PUBLISH frame for a 100-byte payload, one at a time: the floor;
- blocking_publish: hedwig's blocking client, `publish(topic, payload)` one at a time:
  >= 0.6x the echo rate;
- raw_publish: the echo client's loop sending the same PUBLISH frame to the hub
  (bench/raw_hub_clients.py): the hub's round trip without hedwig's client, so that
  blocking_publish's p50 minus this one's is what the client adds;
- redis_xadd: redis-py, one `XADD` at a time (bench/redis_peer.py; skipped, saying why,
  when redis-server or redis-py is missing).

They alternate, `--rounds` times (default 3), each run on a client process of its
own; each figure is the best of its runs (a round trip at a time is at the mercy of
wake-ups on a shared 2-core machine). Then end-to-end latency: one publisher at 10,000
messages/s (one publish per message), one subscriber, stamp to receive: p50 <= 1.5x the
echo round trip's median measured above, p99 <= 3 ms; and the same through Redis (XADD
and a blocking XREAD) beside it. Two more runs of that path say where its time goes:
relay_latency, the floor (bench/relay_peer.py: a bare Twisted relay between a raw-socket
publisher and subscriber, paced the same way), and raw_clients_latency, the hub between
those raw-socket clients (bench/raw_hub_clients.py). Their difference is what the hub
adds (`hub_adds_p50_us`); hedwig's latency minus the raw clients' is what hedwig's
clients add (`clients_add_p50_us`).

Where the processes run changes every figure here several times over: on this virtual
machine a round trip between processes on one CPU costs a context switch each way, and
between two CPUs a wake-up of the other CPU, which can cost more than all the rest. So
the whole set is measured in each placement (`same_cpu`: servers and clients on one
CPU; `two_cpus`: servers on one, clients on the other; `free`: where the scheduler puts
them, which moves between the two from run to run), and each figure is compared with
the echo figure of its own placement. The end-to-end latency's publisher and
subscriber are clients: on the hub's CPU in `same_cpu`, both on the other in
`two_cpus` (each message then crosses between CPUs twice, as an echo round trip does).

Prints JSON and writes bench/results/round_trip_bench.json.
"""

import argparse
import itertools
import multiprocessing
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import redis_peer
from bench.client_processes import (
    PAYLOAD,
    PAYLOAD_BYTES,
    latency_publisher,
    latency_subscriber,
    pin,
    run_processes,
)
from bench.echo_peer import EchoServer, echo_client, timed_round_trips
from bench.figures import RESULTS_DIR, emit, load, median, process_cpu_seconds
from bench.raw_hub_clients import raw_publish_client, raw_publisher, raw_subscriber
from bench.relay_peer import RelayServer, relay_publisher, relay_subscriber
from hedwig.protocol.session import HubSession
from hedwig.testing.hubprocess import HubProcess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout
RESULTS = RESULTS_DIR / "round_trip_bench.json"
TOPIC = "rt"
LATENCY_RATE = 10_000
BLOCKING_PUBLISH_RATIO = 0.6  # of the echo round trips per second, at least
LATENCY_P50_RATIO = 1.5  # of the echo round trip's median, at most
LATENCY_P99_US = 3000
_RUNS = itertools.count()  # (end-to-end runs, numbering their topics)


def publish_frame(topic: str, payload: bytes) -> bytes:
    """The bytes hedwig's blocking client sends for publish(topic, payload): the echo
    client sends the same, so both carry the same request."""
    return HubSession(None).publish_one(topic, payload)[1]


def hedwig_client(address, topic: str, count: int, out):
    """`count` blocking publishes of one 100-byte payload, one at a time."""
    from hedwig.client import Client

    with Client(address) as client:
        publish = client.publish
        out.put({"peer": "blocking_publish", **timed_round_trips(lambda: publish(topic, PAYLOAD), count)})


def round_trips(ctx, servers, count, rounds, cpus) -> dict:
    """Each peer's runs, alternating: echo, hedwig, Redis, echo, ..."""
    request = publish_frame(TOPIC, PAYLOAD)
    workers = {
        "echo": (echo_client, (servers["echo"].address, request, count)),
        "blocking_publish": (hedwig_client, (servers["hub"].address, TOPIC, count)),
        "raw_publish": (raw_publish_client, (servers["hub"].address, request, count)),
    }
    if "redis" in servers:
        redis_address = servers["redis"].address
        workers["redis_xadd"] = (redis_peer.xadd_client, (redis_address, TOPIC, PAYLOAD, count))
    server_of = {"echo": "echo", "blocking_publish": "hub", "raw_publish": "hub", "redis_xadd": "redis"}
    runs = {name: [] for name in workers}
    for _ in range(rounds):
        for name, worker in workers.items():
            before = load()
            server_pid = servers[server_of[name]].process.pid
            server_cpu = process_cpu_seconds(server_pid)
            [result] = run_processes(ctx, [worker], hubs=[servers["hub"]], cpus=cpus)
            # (with the connection and the warm-up: per round trip, an upper bound)
            result["server_cpu_s"] = round(process_cpu_seconds(server_pid) - server_cpu, 3)
            result["load"] = f"{before} -> {load()}"
            result.pop("peer")
            runs[name].append(result)
            print(f"{name}: {result['per_s']:,} round trips/s, p50 {result['p50_us']} us", file=sys.stderr)
    return runs


def best(runs: list) -> dict:
    top = max(runs, key=lambda run: run["per_s"])
    return {**top, "runs_per_s": [run["per_s"] for run in runs]}


def end_to_end(ctx, path, seconds: float, cpus) -> dict:
    """One run of an end-to-end path: (subscriber, publisher, the server's arguments,
    the hubs whose exit fails it); the subscriber's latencies, with the run's load."""
    subscriber, publisher, server_args, hubs = path
    count = int(LATENCY_RATE * seconds)
    ready = ctx.Event()
    before = load()
    results = run_processes(
        ctx,
        hubs=hubs,
        targets=[
            (subscriber, (*server_args, count, LATENCY_RATE, ready)),
            (publisher, (*server_args, LATENCY_RATE, seconds, ready)),
        ],
        cpus=cpus,
    )
    run = next(r for r in results if "p50_us" in r)
    run.pop("peer", None)
    run["load"] = f"{before} -> {load()}"
    return run


def end_to_end_paths(servers) -> dict:
    """name -> path (end_to_end) of every end-to-end figure; each run gets a topic of its
    own, so that no run starts behind what an earlier one left."""
    hub = servers["hub"]
    topic = f"lat-{next(_RUNS)}"
    paths = {
        "latency": (latency_subscriber, latency_publisher, (hub.address, topic), [hub]),
        "relay_latency": (relay_subscriber, relay_publisher, (servers["relay"].address,), []),
        "raw_clients_latency": (raw_subscriber, raw_publisher, (hub.address, topic + "-raw"), [hub]),
    }
    if "redis" in servers:
        xread = (
            redis_peer.xread_subscriber,
            redis_peer.xadd_publisher,
            (servers["redis"].address, topic),
            [],
        )
        paths["redis_xread_latency"] = xread
    return paths


def end_to_end_medians(ctx, servers, seconds: float, rounds: int, cpus) -> dict:
    """Each end-to-end path `rounds` times, alternating; per path, the run of median p50
    (one run's figures as measured) and every run's p50."""
    runs = {}
    for _ in range(rounds):
        for name, path in end_to_end_paths(servers).items():
            run = end_to_end(ctx, path, seconds, cpus)
            runs.setdefault(name, []).append(run)
            print(f"{name}: p50 {run['p50_us']:.1f} us, p99 {run['p99_us']:.1f} us", file=sys.stderr)
    return {
        name: {
            **median(path_runs, key=lambda run: run["p50_us"]),
            "runs_p50_us": [r["p50_us"] for r in path_runs],
        }
        for name, path_runs in runs.items()
    }


def placements() -> dict:
    """name -> (the servers' CPUs, the clients' CPUs), or None for the scheduler's choice.

    A round trip between two processes costs very different amounts on one CPU (a
    context switch) and across two (a wake-up of the other CPU, which on a virtual
    machine may cost more than everything else): every figure is measured in each
    placement, and compared only with the echo figure of the same placement."""
    cpus = sorted(os.sched_getaffinity(0))
    chosen = {"same_cpu": ({cpus[0]}, {cpus[0]})}
    if len(cpus) > 1:
        chosen["two_cpus"] = ({cpus[0]}, {cpus[1]})
    chosen["free"] = None
    return chosen


def measure(ctx, servers, placement, count, seconds, rounds) -> dict:
    """Every figure in one placement of the processes."""
    server_cpus, client_cpus = placement if placement is not None else (set(os.sched_getaffinity(0)), None)
    for server in servers.values():
        pin(server.process.pid, server_cpus)
    runs = round_trips(ctx, servers, count, rounds, client_cpus)
    figures = {name: best(peer_runs) for name, peer_runs in runs.items()}
    echo = figures["echo"]
    publish = figures["blocking_publish"]
    publish["ratio_to_echo"] = round(publish["per_s"] / echo["per_s"], 3)
    publish["target"] = f">= {BLOCKING_PUBLISH_RATIO}x echo"
    publish["meets_target"] = publish["ratio_to_echo"] >= BLOCKING_PUBLISH_RATIO
    raw_publish = figures["raw_publish"]  # (the hub's round trip with the echo client's loop)
    raw_publish["ratio_to_echo"] = round(raw_publish["per_s"] / echo["per_s"], 3)
    publish["client_adds_p50_us"] = round(publish["p50_us"] - raw_publish["p50_us"], 1)
    if "redis_xadd" in figures:
        redis = figures["redis_xadd"]
        redis["ratio_to_echo"] = round(redis["per_s"] / echo["per_s"], 3)
        publish["ratio_to_redis_xadd"] = round(publish["per_s"] / redis["per_s"], 3)
    started = time.perf_counter()
    latencies = end_to_end_medians(ctx, servers, seconds, rounds, client_cpus)
    for figure in latencies.values():
        figure["p50_ratio_to_echo"] = round(figure["p50_us"] / echo["p50_us"], 3)
    latency = latencies["latency"]
    latency["rate"] = LATENCY_RATE
    latency["wall_s"] = round(time.perf_counter() - started, 2)  # (every path's runs)
    latency["echo_p50_us"] = echo["p50_us"]
    latency["target"] = f"p50 <= {LATENCY_P50_RATIO}x echo p50, p99 <= {LATENCY_P99_US} us"
    latency["meets_target"] = (
        latency["p50_ratio_to_echo"] <= LATENCY_P50_RATIO and latency["p99_us"] <= LATENCY_P99_US
    )
    # Where the time goes: the floor, then the hub between the floor's clients.
    relay, raw = latencies["relay_latency"], latencies["raw_clients_latency"]
    raw["hub_adds_p50_us"] = round(raw["p50_us"] - relay["p50_us"], 1)
    latency["p50_ratio_to_relay"] = round(latency["p50_us"] / relay["p50_us"], 3)
    latency["clients_add_p50_us"] = round(latency["p50_us"] - raw["p50_us"], 1)
    if "redis_xread_latency" in latencies:
        latency["p50_ratio_to_redis_xread"] = round(
            latency["p50_us"] / latencies["redis_xread_latency"]["p50_us"], 3
        )
    figures.update(latencies)
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, to check it runs (not saved)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each peer, alternating (default 3)")
    parser.add_argument("--no-save", action="store_true", help=f"do not write bench/results/{RESULTS.name}")
    chosen = placements()
    parser.add_argument(
        "--placements",
        nargs="+",
        choices=list(chosen),
        default=[name for name in chosen if name != "free"],
        help="where the processes run: all on one CPU, the servers on one and the clients on another, "
        "or wherever the scheduler puts them (default: the pinned ones)",
    )
    args = parser.parse_args(argv)
    figures = {}
    count, seconds = (3000, 2) if args.quick else (20_000, 6)
    ctx = multiprocessing.get_context("spawn")
    directory = tempfile.mkdtemp(prefix="round-trip-bench-")
    report = {
        "benchmark": "round_trip_bench",
        "command": " ".join(["python bench/round_trip_bench.py", *(sys.argv[1:] if argv is None else argv)]),
        "payload_bytes": PAYLOAD_BYTES,
        "request_bytes": len(publish_frame(TOPIC, PAYLOAD)),
        "round_trips_per_run": count,
        "rounds": args.rounds,
        "placements": {name: _described(chosen[name]) for name in args.placements},
        "cores": os.cpu_count(),
        "load_before": load(),
    }
    servers = {
        "echo": EchoServer(ctx),
        "relay": RelayServer(ctx),
        "hub": HubProcess(os.path.join(directory, "hub"), cwd=ROOT),
    }
    absent = redis_peer.missing()
    if absent is None:
        servers["redis"] = redis_peer.RedisServer(os.path.join(directory, "redis"))
    else:
        report["redis"] = f"skipped: {absent}"
        print(f"redis_xadd skipped: {absent}", file=sys.stderr)
    try:
        for server in servers.values():
            server.start()
        for name in args.placements:
            print(f"-- placement {name}", file=sys.stderr)
            measured = measure(ctx, servers, chosen[name], count, seconds, args.rounds)
            figures.update({f"{figure}_{name}": value for figure, value in measured.items()})
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(directory, ignore_errors=True)
    report["figures"] = figures
    report["load_after"] = load()
    report["all_targets_met"] = all(f.get("meets_target", True) for f in figures.values())
    emit(report, RESULTS, save=not (args.quick or args.no_save))
    return 0


def _described(placement) -> str:
    if placement is None:
        return "wherever the scheduler puts the processes"
    servers, clients = placement
    return f"servers on CPU {sorted(servers)}, clients on CPU {sorted(clients)}"


if __name__ == "__main__":
    sys.exit(main())
