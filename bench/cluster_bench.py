"""Region of several hubs benchmark: a real ZooKeeper, hub processes sharing one storage
root, producer processes on loopback.

    .venv/bin/python bench/cluster_bench.py [--quick] [--no-save] [--producers N] [--prepared]

Every payload is 100 bytes; every hub runs `python -m hedwig hub --zookeeper ...` with
the defaults but a root of its own and a session timeout (fsync "never"). Figures:

- one_hub: aggregate publish_many throughput over 32 topics into a region of one hub:
  `--producers` processes (default 4; each an asyncio client of every hub of the region,
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
with every round's figure. `--prepared`: the producers send one message set encoded once
(what publish_many sends, without encoding it again each time), so that nearly all of
the CPU goes to the hubs; results in cluster_bench_prepared.json.

The machine has 2 cores: the hubs and the producers share them, and with one hub the
producers have a core of their own which with two hubs they share with the second hub.
So the scaling figure is what two hubs give on the same two cores, producers included;
the hubs' and producers' CPU seconds are reported beside it. Prints JSON and writes
bench/results/cluster_bench.json with the load average around each figure.
"""

import argparse
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.client_processes import PAYLOAD, run_processes
from bench.figures import RESULTS_DIR, emit, load, median, own_cpu_seconds, process_cpu_seconds
from hedwig.testing.zkregion import RegionHubs
from hedwig.testing.zookeeper import ZooKeeperServer

RESULTS = RESULTS_DIR / "cluster_bench.json"
PREPARED_RESULTS = RESULTS_DIR / "cluster_bench_prepared.json"
TOPICS = [f"cluster-{i:02d}" for i in range(32)]
SET_SIZE = 1000


def producer(addresses, topics, sets_per_topic, prepared, out):
    """An asyncio client of the region publishing `sets_per_topic` message sets of 1000 to
    each of its topics, one set in flight per topic (after one warm-up set each): with
    publish_many, or (`prepared`) sending one message set encoded once, so that the
    producers cost the hubs' two cores as little as they can.

    One set in flight per topic, not one per producer: a producer waiting on one hub's
    answer would leave the other hub idle, and the figure would measure the producers'
    round trips rather than what the hubs can take."""
    import asyncio

    from hedwig.client.aio import Client
    from hedwig.client.payloads import encode_payloads

    payloads = [PAYLOAD] * SET_SIZE
    message_set = encode_payloads(payloads, None, None)[0]

    async def main():
        async with Client(addresses) as client:

            async def publish(topic):
                if prepared:  # (the client's one-set publish: what publish_many sends once encoded)
                    await client._publish_set(topic, message_set, SET_SIZE)
                else:
                    await client.publish_many(topic, payloads)

            async def publish_sets(topic):
                for _ in range(sets_per_topic):
                    await publish(topic)

            await asyncio.gather(*(publish(topic) for topic in topics))
            cpu = own_cpu_seconds()
            started_ns = time.perf_counter_ns()
            await asyncio.gather(*(publish_sets(topic) for topic in topics))
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
    zookeeper, workdir, hub_count: int, producers: int, sets_per_topic: int, prepared: bool
) -> dict:
    ctx = multiprocessing.get_context("spawn")
    with RegionHubs(
        zookeeper, workdir / f"hubs{hub_count}-{time.monotonic_ns()}", session_timeout_ms=10000
    ) as hubs:
        hubs.start(hub_count)
        spread = placed(hubs)
        hub_cpu = [process_cpu_seconds(hub.process.pid) for hub in hubs.hubs]
        before = load()
        groups = [TOPICS[i::producers] for i in range(producers)]
        results = run_processes(
            ctx,
            [(producer, (hubs.addresses, group, sets_per_topic, prepared)) for group in groups],
            hubs.hubs,
        )
        after = load()
        hub_cpu = [
            process_cpu_seconds(hub.process.pid) - cpu for hub, cpu in zip(hubs.hubs, hub_cpu, strict=True)
        ]
    seconds = (max(r["ended_ns"] for r in results) - min(r["started_ns"] for r in results)) / 1e9
    messages = sum(r["messages"] for r in results)
    return {
        "hubs": hub_count,
        "producers": producers,
        "topics_per_hub": sorted(len(topics) for topics in spread.values()),
        "messages": messages,
        "seconds": round(seconds, 3),
        "msg_per_s": round(messages / seconds),
        "hub_cpu_s": [round(c, 2) for c in hub_cpu],
        "producer_cpu_s": round(sum(r["cpu_s"] for r in results), 2),
        "load_before": before,
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
                        throughput(zookeeper, work, hub_count, args.producers, sets_per_topic, args.prepared)
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
