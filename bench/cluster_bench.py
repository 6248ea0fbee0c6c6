"""Region of several hubs benchmark: a real ZooKeeper, hub processes sharing one storage
root, producer processes on loopback.

    .venv/bin/python bench/cluster_bench.py [--quick] [--no-save] [--producers N] [--prepared]

Every payload is 100 bytes; every hub runs `python -m hedwig hub --zookeeper ...` with
the defaults but a root of its own and a session timeout (fsync "never"). Figures:

- one_hub: aggregate publish_many throughput over 32 topics into a region of one hub:
  `--producers` processes (default 4; each a client of every hub of the region,
  publishing message sets of 1000 to 8 topics of its own, one set in flight per topic),
  messages per second from the first producer's start to the last one's end.
- two_hubs: the same producers, the same topics, into a region of two hubs (the topics
  spread 16/16 by the hubs' least-loaded placement before the clock starts). Target:
  >= 1.5x one_hub (scaling).
- takeover: a region of two hubs; the owner of a topic is SIGKILLed while a client of the
  other hub publishes to it in a loop (a request every 5 ms, no redirect followed, so
  each answer is the other hub's own: NOT_RESPONSIBLE until it takes over): seconds from
  the SIGKILL to the first publish that hub acknowledges. Target: <= the session timeout
  + 1 s, measured with the default session timeout (10 s) and a short one (2 s).

Three rounds, one hub then two each time (fresh regions); the median of each is reported
with every round's figure. The producers are the asyncio client calling publish_many;
with `--prepared` they send one message set encoded once, through the protocol session
over plain sockets (bench/session_producer.py: no asyncio machinery per request), so
that nearly all of the CPU goes to the hubs; results in cluster_bench_prepared.json.

The machine has 2 cores: the hubs and the producers share them. With one hub the
producers, and the hub's page-preparing threads, have the core the hub's reactor thread
leaves; with two hubs that core is the second hub's, so every CPU second not spent by a
hub's reactor thread comes out of the two-hub figure alone. Two things are done so that
this is the hubs' cost and not the bench's:

- the producers are as cheap as they can be (`--prepared`, above): the asyncio client
  cost about 200 us of CPU per set, 60% of a hub's;
- before the clock, every producer publishes WARM_SETS sets to each of its topics, and
  all of them wait for each other (a Barrier) before it starts. Without it each fresh hub
  spent the first 256 MiB of the run filling its entry cache with newly faulted memory
  (64k minor faults, 4-7 us each on this virtual machine, measured): a cost a running hub
  paid once at its start, which two fresh hubs paid twice within the measured run;
- each round's storage is deleted once its hubs have stopped. Kept (as before), every
  round's 1.4 GB of ledgers stayed in the page cache, so each round stored into memory
  the machine had never used: on this virtual machine the first store into such memory
  costs 10-15 us per 4 KiB page (an 880 MB file written with pwrite took 1.3-3.6 s of
  system time instead of 0.2 s when the memory had been used before: measured), paid by
  the hubs' page-preparing threads, and by whichever round came later, not by either
  configuration as such.

The producers are the same processes doing the same work in both configurations. Each
round reports the hubs' CPU split (reactor thread and other threads, user and system,
minor faults), the producers' CPU, and the busy CPU seconds of everything else on the
machine meanwhile (other_cpu_s: other work running here, ZooKeeper, kernel threads),
with the load average around it. Prints JSON and writes bench/results/cluster_bench.json.
"""

import argparse
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.client_processes import PAYLOAD, START_WAIT_S, run_processes
from bench.figures import (
    RESULTS_DIR,
    emit,
    load,
    machine_cpu_seconds,
    median,
    own_cpu_seconds,
    thread_cpu,
    thread_cpu_delta,
)
from bench.session_producer import SET_SIZE, session_producer
from hedwig.testing.zkregion import RegionHubs
from hedwig.testing.zookeeper import ZooKeeperServer

RESULTS = RESULTS_DIR / "cluster_bench.json"
PREPARED_RESULTS = RESULTS_DIR / "cluster_bench_prepared.json"
TOPICS = [f"cluster-{i:02d}" for i in range(32)]
# Sets each producer publishes to each of its topics before the clock starts: 32 x 160
# sets of 110 KB (563 MB) fill each hub's entry cache (256 MiB, the default) in either
# configuration, so that the measured sets reuse its memory as a running hub's do.
WARM_SETS = 160


def producer(addresses, topics, sets_per_topic, warm_sets, start, out):
    """An asyncio client of the region publishing `sets_per_topic` message sets of 1000 to
    each of its topics with publish_many, one set in flight per topic, after `warm_sets`
    sets each and `start` (a Barrier of every producer and the bench) passed.

    One set in flight per topic, not one per producer: a producer waiting on one hub's
    answer would leave the other hub idle, and the figure would measure the producers'
    round trips rather than what the hubs can take."""
    import asyncio

    from hedwig.client.aio import Client

    payloads = [PAYLOAD] * SET_SIZE

    async def main():
        async with Client(addresses) as client:

            async def publish_sets(topic, count):
                for _ in range(count):
                    await client.publish_many(topic, payloads)

            await asyncio.gather(*(publish_sets(topic, warm_sets) for topic in topics))
            start.wait(START_WAIT_S)  # (blocks the loop: nothing is in flight now)
            cpu = own_cpu_seconds()
            started_ns = time.perf_counter_ns()
            await asyncio.gather(*(publish_sets(topic, sets_per_topic) for topic in topics))
            ended_ns = time.perf_counter_ns()
            return started_ns, ended_ns, own_cpu_seconds() - cpu

    started_ns, ended_ns, cpu_s = asyncio.run(main())
    out.put(
        {
            "messages": sets_per_topic * len(topics) * SET_SIZE,
            "started_ns": started_ns,
            "ended_ns": ended_ns,
            "cpu_s": cpu_s,
        }
    )


def placed(hubs) -> dict:
    """Create every topic through the first hub (least-loaded placement spreads them);
    {hub address: topics it owns}."""
    from hedwig.client import Client

    with Client(hubs.addresses) as client:
        for topic in TOPICS:
            client.publish_many(topic, [PAYLOAD])
        owners = client.owners()
    spread = {}
    for topic in TOPICS:
        spread.setdefault(owners[topic], []).append(topic)
    return spread


def throughput(
    zookeeper, workdir, hub_count: int, producers: int, sets_per_topic: int, warm_sets: int, prepared: bool
) -> dict:
    ctx = multiprocessing.get_context("spawn")
    storage = workdir / f"hubs{hub_count}-{time.monotonic_ns()}"
    with RegionHubs(zookeeper, storage, session_timeout_ms=10000) as hubs:
        hubs.start(hub_count)
        spread = placed(hubs)
        owners = {topic: hub for hub, topics in spread.items() for topic in topics}
        groups = [TOPICS[i::producers] for i in range(producers)]
        start = ctx.Barrier(producers + 1)  # every producer warmed up, and the bench
        work = (sets_per_topic, warm_sets, start)
        if prepared:
            targets = [(session_producer, (owners, group, *work)) for group in groups]
        else:
            targets = [(producer, (hubs.addresses, group, *work)) for group in groups]
        started = {}

        def at_start():  # (a thread: the bench's own thread waits in run_processes)
            start.wait(START_WAIT_S)
            started["hubs"] = [thread_cpu(hub.process.pid) for hub in hubs.hubs]
            started["machine"] = machine_cpu_seconds()
            started["load"] = load()

        reader = threading.Thread(target=at_start, daemon=True)
        reader.start()
        results = run_processes(ctx, targets, hubs.hubs)
        machine = machine_cpu_seconds() - started["machine"]
        hub_cpu = [
            thread_cpu_delta(before, thread_cpu(hub.process.pid))
            for hub, before in zip(hubs.hubs, started["hubs"], strict=True)
        ]
        after = load()
    shutil.rmtree(storage)  # (the next round's page cache reuses its memory: see the docstring)
    seconds = (max(r["ended_ns"] for r in results) - min(r["started_ns"] for r in results)) / 1e9
    messages = sum(r["messages"] for r in results)
    hub_totals = [
        round(h["main_user_s"] + h["main_system_s"] + h["threads_user_s"] + h["threads_system_s"], 2)
        for h in hub_cpu
    ]
    producer_cpu = sum(r["cpu_s"] for r in results)
    return {
        "hubs": hub_count,
        "producers": producers,
        "topics_per_hub": sorted(len(topics) for topics in spread.values()),
        "messages": messages,
        "seconds": round(seconds, 3),
        "msg_per_s": round(messages / seconds),
        "hub_cpu_s": hub_totals,
        "hub_cpu": hub_cpu,
        "producer_cpu_s": round(producer_cpu, 2),
        # Busy CPU seconds of the machine meanwhile that were neither the hubs' nor the
        # producers': other processes (other work on the machine, ZooKeeper) and the kernel's threads.
        "other_cpu_s": round(machine - sum(hub_totals) - producer_cpu, 2),
        "load_before": started["load"],
        "load_after": after,
    }


def takeover(zookeeper, workdir, session_timeout_ms: int) -> dict:
    from hedwig.client import Client
    from hedwig.client.errors import HedwigError

    with RegionHubs(
        zookeeper, workdir / f"takeover{session_timeout_ms}", session_timeout_ms=session_timeout_ms
    ) as hubs:
        hubs.start(2)
        first, second = hubs.hubs
        with Client(first.address, max_redirects=0) as client:
            client.publish_many("takeover", [PAYLOAD])  # claimed by the first hub: asked, least loaded
            assert client.describe("takeover")["owner"] == first.address
        before = load()
        with Client(second.address, max_redirects=0, timeout=5) as survivor:
            refused = 0
            killed = time.perf_counter()
            first.process.send_signal(signal.SIGKILL)
            while True:
                try:
                    survivor.publish_many("takeover", [PAYLOAD])
                    break
                except HedwigError:
                    refused += 1
                    time.sleep(0.005)  # (the pace of the probe: its resolution)
            acknowledged = time.perf_counter()
        first.process.wait()
    seconds = acknowledged - killed
    return {
        "session_timeout_ms": session_timeout_ms,
        "seconds": round(seconds, 3),
        "target_s": session_timeout_ms / 1000 + 1,
        "met": seconds <= session_timeout_ms / 1000 + 1,
        "refused_meanwhile": refused,
        "load_before": before,
        "load_after": load(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer messages (a smoke run)")
    parser.add_argument("--no-save", action="store_true", help="print only; keep the saved results")
    parser.add_argument("--producers", type=int, default=4, help="producer processes (default 4)")
    parser.add_argument(
        "--prepared",
        action="store_true",
        help="producers send one message set encoded once instead of calling publish_many (the hubs'"
        " figure with as little producer work as can be)",
    )
    args = parser.parse_args()
    sets_per_topic = 5 if args.quick else 250
    warm_sets = 2 if args.quick else WARM_SETS
    rounds = 1 if args.quick else 3
    workdir = tempfile.mkdtemp(prefix="hedwig-cluster-bench-")
    try:
        from pathlib import Path

        work = Path(workdir)
        with ZooKeeperServer(work / "zookeeper", tick_ms=500, max_ticks=40) as zookeeper:
            runs = {1: [], 2: []}
            for _ in range(rounds):  # alternating, so that both see the same machine
                for hub_count in (1, 2):
                    runs[hub_count].append(
                        throughput(
                            zookeeper,
                            work,
                            hub_count,
                            args.producers,
                            sets_per_topic,
                            warm_sets,
                            args.prepared,
                        )
                    )
            takeovers = [takeover(zookeeper, work, timeout) for timeout in (10000, 2000)]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    one, two = (median(runs[n], key=lambda run: run["msg_per_s"]) for n in (1, 2))
    scaling = two["msg_per_s"] / one["msg_per_s"]
    cpu = {
        n: round(
            sum(sum(r["hub_cpu_s"]) + r["producer_cpu_s"] for r in runs[n])
            / sum(r["seconds"] for r in runs[n]),
            2,
        )
        for n in (1, 2)
    }
    report = {
        "benchmark": "cluster_bench",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cores": os.cpu_count(),
        "payload_bytes": len(PAYLOAD),
        "set_size": SET_SIZE,
        "rounds": rounds,
        "producers": "prepared message sets" if args.prepared else "publish_many",
        "one_hub": one,
        "two_hubs": two,
        "runs_msg_per_s": {f"{n}_hubs": [r["msg_per_s"] for r in runs[n]] for n in (1, 2)},
        # CPU-seconds (hubs + producers) per wall second: how much of the 2 cores was used
        "cores_busy": {f"{n}_hubs": cpu[n] for n in (1, 2)},
        "scaling": {"value": round(scaling, 2), "target": ">= 1.5", "met": scaling >= 1.5},
        "takeover": takeovers,
    }
    emit(report, PREPARED_RESULTS if args.prepared else RESULTS, save=not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
