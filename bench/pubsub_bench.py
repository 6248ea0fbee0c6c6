"""Publish/subscribe benchmark: a hub process and client processes on loopback.

    .venv/bin/python bench/pubsub_bench.py [--quick] [--only NAME ...] [--dir DIR] [--no-save]

Every payload is 100 bytes. The hub runs as `python -m hedwig hub` with its defaults
(fsync "never", 256 MiB cache); each client is a process of its own (multiprocessing,
spawn). The figures, each with its target:

- echo: the floor, first: a bare Twisted echo server and a raw-socket client sending the
  bytes of a one-message PUBLISH, one at a time (bench/echo_peer.py): round trips/s and
  the median round trip, which the latency's p50 is compared with
- publish_many: one producer, message sets of 1000 (blocking client): >= 1,000,000 msg/s
- twisted_publish: the Twisted client, one message per publish() call, 1000 in flight:
  >= 250,000 msg/s
- aio_publish: the asyncio client, the same way (1000 tasks each awaiting its publish):
  >= 200,000 msg/s
- aio_subscribe: one asyncio subscriber (`async for`, every message acknowledged) from the
  earliest of 2,000,000 messages just published: >= 500,000 msg/s
- blocking_publish: the blocking client, one publish at a time (median of three runs):
  >= 10,000 msg/s
- latency: one subscriber, 10,000 msg/s published as they fall due (blocking client: one
  publish() per message, publish_many of those due together after a late wake-up; each
  stamped when sent); the subscriber (blocking client) measures stamp -> receive:
  p50 <= 1.5x the echo figure's median round trip, p99 <= 3 ms
- fanout: 10 subscriber processes (blocking client, receive_batch, every message made a
  Message object and acknowledged), one producer of message sets of 1000:
  >= 1,500,000 msg/s delivered in total
- catchup: 10,000,000 messages published, the hub restarted (so the cache is empty and
  every entry comes from the ledger), then one subscriber from the earliest:
  >= 1,000,000 msg/s

Timestamps cross processes through time.perf_counter_ns (CLOCK_MONOTONIC on Linux, one
clock for the whole machine). Prints JSON and writes bench/results/pubsub_bench.json,
with the load average around each figure: the machine has 2 cores that the hub, the
clients (and whatever else runs) share.
"""

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.aio_processes import aio_publish_worker, aio_subscribe_worker
from bench.client_processes import (
    PAYLOAD,
    PAYLOAD_BYTES,
    latency_publisher,
    latency_subscriber,
    publish_many_worker,
    run_processes,
)
from bench.echo_peer import EchoServer, echo_client
from bench.figures import (
    RESULTS_DIR,
    emit,
    load,
    median,
    own_cpu_seconds,
    process_cpu_seconds,
)
from hedwig.protocol.session import HubSession
from hedwig.testing.hubprocess import HubProcess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout
RESULTS = RESULTS_DIR / "pubsub_bench.json"
HUB_STOP_TIMEOUT_S = 120.0  # a graceful stop after millions of messages
LATENCY_P50_RATIO = 1.5  # of the echo round trip's median, at most

TARGETS = {
    "echo": (">=", 0, "round trips/s", "the floor: a bare Twisted echo server, a raw socket client"),
    "publish_many": (
        ">=",
        1_000_000,
        "msg/s",
        "Redis pipelined XADD ~77,000/s; Kafka single producer 821,557/s",
    ),
    "twisted_publish": (">=", 250_000, "msg/s", ""),
    "aio_publish": (">=", 200_000, "msg/s", "the Twisted client's twisted_publish, same run"),
    "aio_subscribe": (">=", 500_000, "msg/s", ""),
    "blocking_publish": (">=", 10_000, "msg/s", "Redis one XADD per round trip ~3,300/s"),
    # (its target, 1.5x the echo round trip's median of the same run, is set once both are in)
    "latency_p50_us": ("<=", 300, "us", "Redis XADD->XREAD ~600 us; raw TCP between processes ~50 us"),
    "latency_p99_us": ("<=", 3000, "us", "Redis ~5 ms; raw TCP ~2 ms"),
    "fanout": (">=", 1_500_000, "msg/s delivered", "Redis ~240,000/s"),
    "catchup": (">=", 1_000_000, "msg/s", "Redis XRANGE ~230,000/s"),
}


# -- client processes (bench/client_processes.py has the publishers shared with region_bench) --


def blocking_publish_worker(address, topic, count, out):
    """Three runs of `count` publishes after a warm-up on the same topic: the median is
    the figure (one round trip at a time is at the mercy of wake-ups on a shared VM)."""
    from hedwig.client import Client

    runs = []
    with Client(address) as client:
        publish = client.publish
        for _ in range(min(2000, count)):
            publish(topic, PAYLOAD)
        cpu = own_cpu_seconds()
        for _ in range(3):
            started = time.perf_counter()
            for _ in range(count):
                publish(topic, PAYLOAD)
            runs.append(count / (time.perf_counter() - started))
        cpu = own_cpu_seconds() - cpu
    out.put({"runs_msg_per_s": [round(r) for r in runs], "messages": 3 * count, "client_cpu_s": cpu})


def twisted_publish_worker(address, topic, count, in_flight, out):
    from twisted.internet import reactor

    from hedwig.client.twisted import Client

    client = Client(reactor, address, max_in_flight=in_flight * 2)
    state = {"issued": 0, "done": 0, "started": None, "error": None}

    def issue():
        state["issued"] += 1
        client.publish(topic, PAYLOAD).addCallbacks(published, failed)

    def published(_seq):
        state["done"] += 1
        if state["issued"] < count:
            issue()
        elif state["done"] == count:
            state["seconds"] = time.perf_counter() - state["started"]
            state["client_cpu_s"] = own_cpu_seconds() - state["cpu"]
            client.close().addBoth(lambda _: reactor.stop())

    def failed(failure):
        state["error"] = failure.getErrorMessage()
        reactor.stop()

    def run(_client):
        state["cpu"] = own_cpu_seconds()
        state["started"] = time.perf_counter()
        for _ in range(in_flight):
            issue()

    client.connect().addCallbacks(run, failed)
    reactor.run()
    out.put(
        {
            "messages": count,
            "seconds": state.get("seconds"),
            "client_cpu_s": state.get("client_cpu_s"),
            "error": state["error"],
        }
    )


def fanout_subscriber(address, topic, name, total, barrier, out):
    from hedwig.client import Client

    received = 0
    with Client(address) as client:
        sub = client.subscribe(topic, name)
        barrier.wait()
        cpu = own_cpu_seconds()
        first = None
        payload_bytes = 0
        while received < total:
            batch = sub.receive_batch(timeout=60)
            if not batch:
                break
            if first is None:
                first = time.perf_counter()
            received += len(batch)
            for message in batch:  # touch every message, as an application would
                payload_bytes += len(message.payload)
            sub.ack(batch[-1])
        finished = time.perf_counter()
    out.put(
        {
            "received": received,
            "first": first,
            "finished": finished,
            "bytes": payload_bytes,
            "cpu_s": own_cpu_seconds() - cpu,
        }
    )


def fanout_publisher(address, topic, batches, batch_size, barrier, out):
    from hedwig.client import Client

    payloads = [PAYLOAD] * batch_size
    with Client(address) as client:
        barrier.wait()
        cpu = own_cpu_seconds()
        started = time.perf_counter()
        for _ in range(batches):
            client.publish_many(topic, payloads)
        finished = time.perf_counter()
    out.put({"started": started, "finished": finished, "cpu_s": own_cpu_seconds() - cpu})


def catchup_subscriber(address, topic, total, out):
    from hedwig.client import Client

    received = 0
    with Client(address) as client:
        sub = client.subscribe(topic, "catchup", start="earliest")
        cpu = own_cpu_seconds()
        started = time.perf_counter()
        last = 0
        while received < total:
            batch = sub.receive_batch(timeout=60)
            if not batch:
                break
            received += len(batch)
            for message in batch:
                if message.seq != last + 1:
                    raise AssertionError(f"seq {message.seq} after {last}")
                last = message.seq
            sub.ack(batch[-1])
        elapsed = time.perf_counter() - started
    out.put({"received": received, "seconds": elapsed, "client_cpu_s": own_cpu_seconds() - cpu})


# -- figures ------------------------------------------------------------------------------------


def figure(name, value, **details):
    op, target, unit, reference = TARGETS[name]
    meets = value is not None and (value >= target if op == ">=" else value <= target)
    entry = {
        "value": round(value, 1) if value is not None else None,
        "unit": unit,
        "target": f"{op} {target:,}",
    }
    entry["meets_target"] = meets
    if reference:
        entry["for_scale"] = reference
    entry.update(details)
    return entry


def bench_echo(ctx, hub, sizes):
    server = EchoServer(ctx).start()
    try:
        request = HubSession(None).publish_one("echo", PAYLOAD)[1]
        [result] = run_processes(ctx, [(echo_client, (server.address, request, sizes["echo_count"]))])
    finally:
        server.stop()
    result.pop("peer")
    return {"echo": figure("echo", result["per_s"], **result)}


def relate_latency_to_echo(figures) -> None:
    """The latency's p50 target: LATENCY_P50_RATIO x the echo round trip of this run."""
    echo, p50 = figures.get("echo"), figures.get("latency_p50_us")
    if echo is None or p50 is None:
        return
    bound = LATENCY_P50_RATIO * echo["p50_us"]
    p50["echo_p50_us"] = echo["p50_us"]
    p50["ratio_to_echo"] = round(p50["value"] / echo["p50_us"], 3)
    p50["target"] = f"<= {LATENCY_P50_RATIO}x echo p50 ({bound:.1f})"
    p50["meets_target"] = p50["value"] <= bound


def bench_publish_many(ctx, hub, sizes):
    [result] = run_processes(
        ctx, hubs=[hub], targets=[(publish_many_worker, (hub.address, "pm", sizes["pm_batches"], 1000))]
    )
    details = {key: result[key] for key in ("messages", "seconds", "client_cpu_s")}
    return {"publish_many": figure("publish_many", result["messages"] / result["seconds"], **details)}


def bench_twisted(ctx, hub, sizes):
    [result] = run_processes(
        ctx, hubs=[hub], targets=[(twisted_publish_worker, (hub.address, "tw", sizes["tw_count"], 1000))]
    )
    if result["error"]:
        raise RuntimeError(result["error"])
    return {"twisted_publish": figure("twisted_publish", result["messages"] / result["seconds"], **result)}


def bench_aio_publish(ctx, hub, sizes):
    [result] = run_processes(
        ctx, hubs=[hub], targets=[(aio_publish_worker, (hub.address, "aio", sizes["tw_count"], 1000))]
    )
    return {"aio_publish": figure("aio_publish", result["messages"] / result["seconds"], **result)}


def bench_aio_subscribe(ctx, hub, sizes):
    total = sizes["aio_sub_messages"]
    run_processes(
        ctx, hubs=[hub], targets=[(publish_many_worker, (hub.address, "aio-sub", total // 1000, 1000))]
    )
    [result] = run_processes(
        ctx, hubs=[hub], targets=[(aio_subscribe_worker, (hub.address, "aio-sub", total))]
    )
    return {"aio_subscribe": figure("aio_subscribe", result["received"] / result["seconds"], **result)}


def bench_blocking(ctx, hub, sizes):
    [result] = run_processes(
        ctx, hubs=[hub], targets=[(blocking_publish_worker, (hub.address, "bp", sizes["bp_count"]))]
    )
    return {"blocking_publish": figure("blocking_publish", median(result["runs_msg_per_s"]), **result)}


def bench_latency(ctx, hub, sizes):
    rate, seconds = 10_000, sizes["lat_seconds"]
    count = int(rate * seconds)
    ready = ctx.Event()
    results = run_processes(
        ctx,
        hubs=[hub],
        targets=[
            (latency_subscriber, (hub.address, "lat", count, rate, ready)),
            (latency_publisher, (hub.address, "lat", rate, seconds, ready)),
        ],
    )
    sub = next(r for r in results if "p50_us" in r)
    details = {"messages_measured": sub["messages"], "p999_us": sub["p999_us"], "max_us": sub["max_us"]}
    return {
        "latency_p50_us": figure("latency_p50_us", sub["p50_us"], rate=rate, **details),
        "latency_p99_us": figure("latency_p99_us", sub["p99_us"], rate=rate, **details),
    }


def bench_fanout(ctx, hub, sizes):
    subscribers = 10
    batches = sizes["fan_batches"]
    total = batches * 1000
    barrier = ctx.Barrier(subscribers + 1)
    targets = [(fanout_subscriber, (hub.address, "fan", f"s{i}", total, barrier)) for i in range(subscribers)]
    targets.append((fanout_publisher, (hub.address, "fan", batches, 1000, barrier)))
    results = run_processes(ctx, targets, hubs=[hub])
    publisher = next(r for r in results if "started" in r)
    subs = [r for r in results if "received" in r]
    delivered = sum(r["received"] for r in subs)
    elapsed = max(r["finished"] for r in subs) - publisher["started"]
    return {
        "fanout": figure(
            "fanout",
            delivered / elapsed,
            subscribers=subscribers,
            messages_published=total,
            delivered=delivered,
            seconds=round(elapsed, 3),
            publisher_msg_per_s=round(total / (publisher["finished"] - publisher["started"])),
            subscribers_cpu_s=round(sum(r["cpu_s"] for r in subs), 2),
            publisher_cpu_s=round(publisher["cpu_s"], 2),
        )
    }


def bench_catchup(ctx, hub, sizes):
    total = sizes["catchup_messages"]
    batches = total // 1000
    [loaded] = run_processes(
        ctx, hubs=[hub], targets=[(publish_many_worker, (hub.address, "catchup", batches, 1000))]
    )
    hub.stop(timeout=HUB_STOP_TIMEOUT_S)  # the restart empties the cache: entries come from the ledger
    hub.start()
    hub_cpu = process_cpu_seconds(hub.process.pid)
    [result] = run_processes(ctx, hubs=[hub], targets=[(catchup_subscriber, (hub.address, "catchup", total))])
    hub_cpu = process_cpu_seconds(hub.process.pid) - hub_cpu
    return {
        "catchup": figure(
            "catchup",
            result["received"] / result["seconds"],
            messages=result["received"],
            seconds=round(result["seconds"], 3),
            load_msg_per_s=round(loaded["messages"] / loaded["seconds"]),
            client_cpu_s=round(result["client_cpu_s"], 2),
            hub_cpu_s=round(hub_cpu, 2),
        )
    }


BENCHES = {
    "echo": bench_echo,
    "publish_many": bench_publish_many,
    "twisted_publish": bench_twisted,
    "aio_publish": bench_aio_publish,
    "aio_subscribe": bench_aio_subscribe,
    "blocking_publish": bench_blocking,
    "latency": bench_latency,
    "fanout": bench_fanout,
    "catchup": bench_catchup,
}

FULL = dict(
    echo_count=20_000,
    pm_batches=3000,
    tw_count=500_000,
    aio_sub_messages=2_000_000,
    bp_count=10_000,
    lat_seconds=6,
    fan_batches=500,
    catchup_messages=10_000_000,
)
QUICK = dict(
    echo_count=3000,
    pm_batches=300,
    tw_count=50_000,
    aio_sub_messages=200_000,
    bp_count=3000,
    lat_seconds=2,
    fan_batches=50,
    catchup_messages=500_000,
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, to check it runs (not saved)")
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHES), help="run only these figures")
    parser.add_argument("--dir", help="where the hub keeps its data (default: a temporary directory)")
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/pubsub_bench.json")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    ctx = multiprocessing.get_context("spawn")
    directory = tempfile.mkdtemp(prefix="pubsub-bench-", dir=args.dir)
    hub = HubProcess(os.path.join(directory, "data"), cwd=ROOT).start()
    report = {
        "benchmark": "pubsub_bench",
        "command": " ".join(["python bench/pubsub_bench.py", *(sys.argv[1:] if argv is None else argv)]),
        "payload_bytes": PAYLOAD_BYTES,
        "cores": os.cpu_count(),
        "sizes": sizes,
        "load_before": load(),
        "figures": {},
        "load_during": {},
    }
    try:
        for name in args.only or list(BENCHES):
            before = load()
            hub_cpu = process_cpu_seconds(hub.process.pid)
            started = time.perf_counter()
            figures = BENCHES[name](ctx, hub, sizes)
            if hub.running and name != "catchup":
                for entry in figures.values():
                    entry["hub_cpu_s_whole_figure"] = round(process_cpu_seconds(hub.process.pid) - hub_cpu, 2)
                    entry["wall_s_whole_figure"] = round(time.perf_counter() - started, 2)
            report["figures"].update(figures)
            report["load_during"][name] = f"{before} -> {load()}"
            print(
                json.dumps({name: {k: v for k, v in report["figures"].items() if k.startswith(name[:7])}}),
                file=sys.stderr,
            )
    finally:
        hub.stop(timeout=HUB_STOP_TIMEOUT_S)
        shutil.rmtree(directory, ignore_errors=True)
    relate_latency_to_echo(report["figures"])
    report["load_after"] = load()
    report["all_targets_met"] = all(f["meets_target"] for f in report["figures"].values())
    emit(report, RESULTS, save=not (args.quick or args.no_save))
    return 0


if __name__ == "__main__":
    sys.exit(main())
