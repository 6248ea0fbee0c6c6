"""hedwig beside Redis Streams in one run, as ratios: the paths where each message pays
its own way (one publish per round trip, fan-out to subscribers that each take every
message, catch-up of a stored backlog, end-to-end latency) and pipelined publishing.

    .venv/bin/python bench/redis_ratio_bench.py [--reactors epoll uvloop] [--rounds N]
        [--quick] [--only NAME ...] [--no-save]

One redis-server (bench/redis_peer.py: AOF on, appendfsync no) and one hub per reactor
(`epoll`, Twisted's default; `asyncio`, Twisted's asyncioreactor on the standard loop;
`uvloop`, the same on uvloop: bench/reactor_bench.py's install), each a process of its
own, started as bench/reactor_bench.py starts its hubs (`--hub KIND`: the reactor installed,
then `hedwig hub`), so that a checkout without [hub] reactor is measured the same way
(bench/before_after.py). The Twisted client's figure runs its client on the same reactor. Rounds
alternate over every server; the figures, each the best (round trips, rates) or the
median (latency) of its rounds:

- blocking_publish_<kind> / redis_xadd: one blocking publish() (one XADD through
  redis-py) per round trip;
- fanout_<kind> / redis_fanout: 10 subscriber processes (blocking client's
  receive_batch, every message touched, acknowledged per batch / blocking XREAD of up
  to 1000 entries) and one producer of sets of 1000 (publish_many / a pipeline of 1000
  XADDs): messages delivered in total per second;
- catchup_<kind> / redis_catchup: one subscriber from the earliest of a stored backlog
  (receive_batch / XRANGE of 1000 at a time);
- twisted_publish_<kind>: the Twisted client, 1000 publishes in flight (pipelined; no
  Redis figure: its pipeline is a batch);
- latency_<kind> / redis_latency: 10,000 msg/s published one by one, stamp to receive:
  p50 and p99.

Each hedwig figure carries its ratio to Redis's (`ratio_to_redis`; for latency,
`p50_ratio_to_redis`, lower is better). Prints JSON and writes
bench/results/redis_ratio_bench.json.
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
    latency_publisher,
    latency_subscriber,
    publish_many_worker,
    run_processes,
)
from bench.figures import RESULTS_DIR, emit, load, median
from bench.pubsub_bench import catchup_subscriber, fanout_publisher, fanout_subscriber, twisted_publish_worker
from bench.reactor_bench import REACTORS, install
from bench.round_trip_bench import hedwig_client
from hedwig.testing.hubprocess import HubProcess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = RESULTS_DIR / "redis_ratio_bench.json"
SUBSCRIBERS = 10
SET_SIZE = 1000
LATENCY_RATE = 10_000
_TOPICS = itertools.count()

FULL = dict(round_trips=10_000, fan_sets=200, catchup=1_000_000, tw_count=200_000, lat_seconds=4)
QUICK = dict(round_trips=2000, fan_sets=20, catchup=100_000, tw_count=20_000, lat_seconds=2)


def topic(name: str) -> str:
    return f"{name}-{next(_TOPICS)}"


# -- hedwig's client processes ------------------------------------------------------------


def twisted_publisher(kind, address, topic_name, count, in_flight, out):
    """bench/pubsub_bench.py's Twisted publisher, the client on reactor `kind`."""
    install(kind)
    twisted_publish_worker(address, topic_name, count, in_flight, out)


# -- Redis's client processes -------------------------------------------------------------


def redis_client(address):
    import redis

    host, port = address.rsplit(":", 1)
    return redis.Redis(host=host, port=int(port), socket_timeout=None)


def redis_fanout_subscriber(address, stream, name, total, barrier, out):
    client = redis_client(address)
    received = 0
    touched = 0
    last_id = "0-0"
    barrier.wait()
    while received < total:
        reply = client.xread({stream: last_id}, count=SET_SIZE, block=60_000)
        if not reply:
            break
        entries = reply[0][1]
        received += len(entries)
        for _entry_id, fields in entries:
            touched += len(fields[b"p"])
        last_id = entries[-1][0]
    finished = time.perf_counter()
    client.close()
    out.put({"received": received, "finished": finished})


def redis_producer(address, stream, sets, set_size, barrier, out):
    client = redis_client(address)
    fields = {"p": PAYLOAD}
    if barrier is not None:
        barrier.wait()
    started = time.perf_counter()
    for _ in range(sets):
        pipeline = client.pipeline(transaction=False)
        for _ in range(set_size):
            pipeline.xadd(stream, fields)
        pipeline.execute()
    seconds = time.perf_counter() - started
    client.close()
    out.put({"started": started, "seconds": seconds})


def redis_catchup_subscriber(address, stream, total, out):
    client = redis_client(address)
    received = 0
    touched = 0
    start = "-"
    started = time.perf_counter()
    while received < total:
        entries = client.xrange(stream, min=start, count=SET_SIZE)
        if not entries:
            break
        received += len(entries)
        for _entry_id, fields in entries:
            touched += len(fields[b"p"])  # every message touched, as an application would
        start = "(" + entries[-1][0].decode()
    seconds = time.perf_counter() - started
    client.close()
    out.put({"received": received, "seconds": seconds})


# -- figures ------------------------------------------------------------------------------


def fanout(ctx, servers, name, sizes) -> float:
    total = sizes["fan_sets"] * SET_SIZE
    barrier = ctx.Barrier(SUBSCRIBERS + 1)
    server = servers[name]
    stream = topic("fan")
    if name == "redis":
        subscriber, producer = redis_fanout_subscriber, redis_producer
    else:
        subscriber, producer = fanout_subscriber, fanout_publisher
    targets = [(subscriber, (server.address, stream, f"s{i}", total, barrier)) for i in range(SUBSCRIBERS)]
    targets.append((producer, (server.address, stream, sizes["fan_sets"], SET_SIZE, barrier)))
    results = run_processes(ctx, targets, hubs=hubs_of(servers))
    started = next(r["started"] for r in results if "started" in r)
    subs = [r for r in results if "received" in r]
    return sum(r["received"] for r in subs) / (max(r["finished"] for r in subs) - started)


def catchup(ctx, servers, name, sizes) -> float:
    total = sizes["catchup"]
    server = servers[name]
    stream = topic("catchup")
    if name == "redis":
        run_processes(ctx, [(redis_producer, (server.address, stream, total // SET_SIZE, SET_SIZE, None))])
        worker = redis_catchup_subscriber
    else:
        run_processes(ctx, [(publish_many_worker, (server.address, stream, total // SET_SIZE, SET_SIZE))])
        worker = catchup_subscriber
    [result] = run_processes(ctx, [(worker, (server.address, stream, total))], hubs=hubs_of(servers))
    return result["received"] / result["seconds"]


def round_trips(ctx, servers, name, sizes) -> float:
    server = servers[name]
    if name == "redis":
        worker = (redis_peer.xadd_client, (server.address, topic("rt"), PAYLOAD, sizes["round_trips"]))
    else:
        worker = (hedwig_client, (server.address, topic("rt"), sizes["round_trips"]))
    [result] = run_processes(ctx, [worker], hubs=hubs_of(servers))
    return result["per_s"]


def pipelined(ctx, servers, name, sizes) -> float:
    worker = (twisted_publisher, (name, servers[name].address, topic("tw"), sizes["tw_count"], 1000))
    [result] = run_processes(ctx, [worker], hubs=hubs_of(servers))
    if result["error"]:
        raise RuntimeError(result["error"])
    return result["messages"] / result["seconds"]


def latency(ctx, servers, name, sizes) -> dict:
    server = servers[name]
    seconds = sizes["lat_seconds"]
    count = int(LATENCY_RATE * seconds)
    ready = ctx.Event()
    if name == "redis":
        pair = (redis_peer.xread_subscriber, redis_peer.xadd_publisher)
    else:
        pair = (latency_subscriber, latency_publisher)
    stream = topic("lat")
    results = run_processes(
        ctx,
        hubs=hubs_of(servers),
        targets=[
            (pair[0], (server.address, stream, count, LATENCY_RATE, ready)),
            (pair[1], (server.address, stream, LATENCY_RATE, seconds, ready)),
        ],
    )
    run = next(r for r in results if "p50_us" in r)
    return {"p50_us": run["p50_us"], "p99_us": run["p99_us"]}


# name -> (measure, the figure's name, its Redis peer's name; None: no Redis figure)
FIGURES = {
    "blocking_publish": (round_trips, "redis_xadd"),
    "fanout": (fanout, "redis_fanout"),
    "catchup": (catchup, "redis_catchup"),
    "twisted_publish": (pipelined, None),
    "latency": (latency, "redis_latency"),
}


def hubs_of(servers) -> list:
    return [server for name, server in servers.items() if name != "redis"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reactors", nargs="+", choices=REACTORS, default=["epoll", "uvloop"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check it runs (not saved)")
    parser.add_argument("--only", nargs="+", choices=list(FIGURES), help="only these figures")
    parser.add_argument("--no-save", action="store_true", help=f"do not write bench/results/{RESULTS.name}")
    args = parser.parse_args(argv)
    absent = redis_peer.missing()
    if absent:  # (as round_trip_bench does: said, not failed)
        emit({"benchmark": "redis_ratio_bench", "skipped": absent}, RESULTS, save=False)
        return 0
    sizes = QUICK if args.quick else FULL
    ctx = multiprocessing.get_context("spawn")
    directory = tempfile.mkdtemp(prefix="redis-ratio-bench-")
    launcher = [sys.executable, "-m", "bench.reactor_bench", "--hub"]  # (a hub on that reactor)
    servers = {"redis": redis_peer.RedisServer(os.path.join(directory, "redis"))}
    for kind in args.reactors:
        servers[kind] = HubProcess(os.path.join(directory, kind), cwd=ROOT, launcher=[*launcher, kind])
    runs = {}
    chosen = args.only or list(FIGURES)
    try:
        for server in servers.values():
            server.start()
        for _ in range(args.rounds):
            for figure in chosen:
                measure, peer = FIGURES[figure]
                names = [*args.reactors, "redis"] if peer else args.reactors
                for name in names:
                    value = measure(ctx, servers, name, sizes)
                    key = peer if name == "redis" else f"{figure}_{name}"
                    runs.setdefault(key, []).append(value)
                    print(f"{key}: {value}", file=sys.stderr)
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(directory, ignore_errors=True)
    figures = {}
    for key, values in runs.items():
        if isinstance(values[0], dict):  # latency: the run of median p50
            chosen_run = median(values, key=lambda run: run["p50_us"])
            figures[key] = {**chosen_run, "runs_p50_us": [v["p50_us"] for v in values]}
        else:
            figures[key] = {"per_s": round(max(values)), "runs_per_s": [round(v) for v in values]}
    for figure in chosen:
        peer = FIGURES[figure][1]
        for kind in args.reactors:
            mine, theirs = figures.get(f"{figure}_{kind}"), figures.get(peer)
            if mine is None or theirs is None:
                continue
            if "per_s" in mine:
                mine["ratio_to_redis"] = round(mine["per_s"] / theirs["per_s"], 3)
            else:
                mine["p50_ratio_to_redis"] = round(mine["p50_us"] / theirs["p50_us"], 3)
                mine["p99_ratio_to_redis"] = round(mine["p99_us"] / theirs["p99_us"], 3)
    report = {
        "benchmark": "redis_ratio_bench",
        "command": " ".join(["python bench/redis_ratio_bench.py", *(sys.argv[1:] if argv is None else argv)]),
        "sizes": sizes,
        "cores": os.cpu_count(),
        "load": load(),
        "figures": figures,
    }
    emit(report, RESULTS, save=not (args.quick or args.no_save))
    return 0


if __name__ == "__main__":
    sys.exit(main())
