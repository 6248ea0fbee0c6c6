"""Replicated ledgers on RADOS: a hub over a Ceph pool against raw librados, and against
itself over mmap ledgers. One run, one throw-away cluster (hedwig.testing.ceph: 1 monitor,
3 bluestore OSDs, pool size 3 / min_size 2), every figure a ratio to a peer measured
in the same run (the machine's 2 cores carry the OSDs, the hub and the clients).

    .venv/bin/python bench/rados_bench.py [--quick] [--only NAME ...] [--no-save]

- publish_many: message sets of 100 x 100 B published through a RADOS-backed hub by the
  Twisted client keeping 64 sets in flight (the store's max_in_flight: 64), msg/s;
  peer: raw librados appends of the same 10,000-byte batches to one object with 64
  aio_appends in flight (this process, python-rados): the ratio must be >= 0.7;
- blocking_publish: one 100-byte message at a time, the blocking client, p50 of the
  round trip; peer: one synchronous librados append of 100 bytes, p50: <= 1.5x;
- catchup: 1,000,000 messages (sets of 100) published, the hub restarted (nothing
  cached: every entry is read from its ledgers), then one subscriber from the earliest,
  msg/s; peer: the same from a hub over mmap ledgers: >= 0.8x.

Prints JSON and writes bench/results/rados_bench.json.
"""

import argparse
import multiprocessing
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.client_processes import PAYLOAD, publish_many_worker, run_processes
from bench.figures import (
    RESULTS_DIR,
    emit,
    load,
    own_cpu_seconds,
    percentile,
    process_cpu_seconds,
    report_start,
)
from bench.pubsub_bench import catchup_subscriber
from hedwig.testing.ceph import CephCluster
from hedwig.testing.hubprocess import HubProcess

RESULTS = RESULTS_DIR / "rados_bench.json"
IN_FLIGHT = 64
SET_SIZE = 100
TARGETS = {"publish_many": (">=", 0.7), "blocking_publish": ("<=", 1.5), "catchup": (">=", 0.8)}


# -- the peers: raw librados, in this process ------------------------------------------------


def raw_aio_appends(cluster, batches: int) -> dict:
    """`batches` appends of SET_SIZE x 100 B to one object, IN_FLIGHT in flight."""
    batch = PAYLOAD * SET_SIZE
    with cluster.admin().open_ioctx(cluster.pool) as ioctx:
        ioctx.set_namespace("raw")
        ioctx.write_full("raw-aio", b"")
        in_flight = []
        cpu = own_cpu_seconds()
        started = time.perf_counter()
        for _ in range(batches):
            if len(in_flight) >= IN_FLIGHT:
                in_flight.pop(0).wait_for_complete()
            in_flight.append(ioctx.aio_append("raw-aio", batch))
        for completion in in_flight:
            completion.wait_for_complete()
        seconds = time.perf_counter() - started
        assert ioctx.stat("raw-aio")[0] == batches * len(batch)
        ioctx.remove_object("raw-aio")
    return {"msg_per_s": batches * SET_SIZE / seconds, "seconds": seconds, "cpu_s": own_cpu_seconds() - cpu}


def raw_sync_appends(cluster, count: int) -> dict:
    """`count` synchronous appends of one 100-byte message: their latencies."""
    with cluster.admin().open_ioctx(cluster.pool) as ioctx:
        ioctx.set_namespace("raw")
        ioctx.write_full("raw-sync", b"")
        for _ in range(min(200, count)):
            ioctx.append("raw-sync", PAYLOAD)
        latencies = []
        for _ in range(count):
            started = time.perf_counter_ns()
            ioctx.append("raw-sync", PAYLOAD)
            latencies.append(time.perf_counter_ns() - started)
        ioctx.remove_object("raw-sync")
    latencies.sort()
    return {"p50_us": percentile(latencies, 0.5) / 1000, "p99_us": percentile(latencies, 0.99) / 1000}


# -- client processes -------------------------------------------------------------------------


def pipelined_publish_worker(address, topic, batches, out, set_size=SET_SIZE, in_flight=IN_FLIGHT):
    """The Twisted client publishing `batches` sets of `set_size` payloads (1: one
    message per publish() call), `in_flight` of them outstanding (after a warm-up of 100
    on another topic)."""
    from twisted.internet import reactor

    from hedwig.client.twisted import Client

    client = Client(reactor, address, max_in_flight=in_flight * set_size * 2)
    payloads = [PAYLOAD] * set_size
    state = {"issued": 0, "done": 0, "error": None}

    def failed(failure):
        state["error"] = failure.getErrorMessage()
        reactor.stop()

    def issue():
        state["issued"] += 1
        if set_size == 1:
            client.publish(topic, PAYLOAD).addCallbacks(published, failed)
        else:
            client.publish_many(topic, payloads).addCallbacks(published, failed)

    def published(_seqs):
        state["done"] += 1
        if state["issued"] < batches:
            issue()
        elif state["done"] == batches:
            state["seconds"] = time.perf_counter() - state["started"]
            state["cpu_s"] = own_cpu_seconds() - state["cpu"]
            client.close().addBoth(lambda _: reactor.stop())

    def warm(_):
        warming = [client.publish_many(topic + "-warm", payloads) for _ in range(100)]
        from twisted.internet.defer import gatherResults

        return gatherResults(warming)

    def run(_):
        state["cpu"] = own_cpu_seconds()
        state["started"] = time.perf_counter()
        for _ in range(min(in_flight, batches)):
            issue()

    client.connect().addCallback(warm).addCallbacks(run, failed)
    reactor.run()
    out.put({"messages": batches * set_size, "seconds": state.get("seconds"), "error": state["error"]})


def blocking_latency_worker(address, topic, count, out):
    """One 100-byte publish at a time (blocking client): each round trip's latency."""
    from hedwig.client import Client

    with Client(address) as client:
        for _ in range(min(200, count)):
            client.publish(topic + "-warm", PAYLOAD)
        latencies = []
        for _ in range(count):
            started = time.perf_counter_ns()
            client.publish(topic, PAYLOAD)
            latencies.append(time.perf_counter_ns() - started)
    latencies.sort()
    out.put({"p50_us": percentile(latencies, 0.5) / 1000, "p99_us": percentile(latencies, 0.99) / 1000})


# -- the run ----------------------------------------------------------------------------------


def ratio(name: str, value: float, peer: float, **details) -> dict:
    op, target = TARGETS[name]
    r = value / peer
    return {
        "ratio": round(r, 3),
        "target": f"{op} {target}",
        "meets": r >= target if op == ">=" else r <= target,
        **details,
        "load": load(),
    }


def rados_hub(cluster, directory, namespace: str) -> HubProcess:
    conf = os.path.join(directory, f"{namespace}.conf")
    cluster.hub_conf(conf, namespace, max_in_flight=IN_FLIGHT)
    return HubProcess(os.path.join(directory, f"{namespace}-data"), 0, "--conf", conf)


def catchup(ctx, hub: HubProcess, total: int) -> dict:
    run_processes(
        ctx,
        hubs=[hub],
        targets=[(publish_many_worker, (hub.address, "catchup", total // SET_SIZE, SET_SIZE))],
    )
    hub.stop(timeout=120)
    hub.start()  # the cache is empty: every entry comes from the ledgers
    hub_cpu = process_cpu_seconds(hub.process.pid)
    [result] = run_processes(ctx, hubs=[hub], targets=[(catchup_subscriber, (hub.address, "catchup", total))])
    assert result["received"] == total, result
    return {
        "msg_per_s": result["received"] / result["seconds"],
        "seconds": round(result["seconds"], 2),
        "hub_cpu_s": round(process_cpu_seconds(hub.process.pid) - hub_cpu, 2),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, to check it runs (not saved)")
    parser.add_argument("--only", nargs="+", choices=sorted(TARGETS), help="these figures only")
    parser.add_argument("--no-save", action="store_true", help=f"do not write {RESULTS}")
    args = parser.parse_args(argv)
    sizes = (
        {"batches": 300, "latencies": 300, "catchup": 100_000}
        if args.quick
        else {"batches": 5000, "latencies": 3000, "catchup": 1_000_000}
    )
    only = set(args.only or TARGETS)
    ctx = multiprocessing.get_context("spawn")
    report = report_start("rados_bench", argv, sizes=sizes, in_flight=IN_FLIGHT, set_size=SET_SIZE)
    directory = tempfile.mkdtemp(prefix="hedwig-rados-bench-")
    figures = {}
    cluster = CephCluster(os.path.join(directory, "ceph"))
    try:
        cluster.start()
        if "publish_many" in only:
            raw = raw_aio_appends(cluster, sizes["batches"])
            with rados_hub(cluster, directory, "publish-many") as hub:
                [hubbed] = run_processes(
                    ctx,
                    hubs=[hub],
                    targets=[(pipelined_publish_worker, (hub.address, "pm", sizes["batches"]))],
                )
            assert hubbed["error"] is None, hubbed
            hub_rate = hubbed["messages"] / hubbed["seconds"]
            figures["publish_many"] = ratio(
                "publish_many", hub_rate, raw["msg_per_s"], hub_msg_per_s=round(hub_rate),
                raw_msg_per_s=round(raw["msg_per_s"]),
            )  # fmt: skip
        if "blocking_publish" in only:
            raw = raw_sync_appends(cluster, sizes["latencies"])
            with rados_hub(cluster, directory, "blocking") as hub:
                [hubbed] = run_processes(
                    ctx,
                    hubs=[hub],
                    targets=[(blocking_latency_worker, (hub.address, "bp", sizes["latencies"]))],
                )
            figures["blocking_publish"] = ratio(
                "blocking_publish", hubbed["p50_us"], raw["p50_us"], hub_p50_us=round(hubbed["p50_us"], 1),
                raw_p50_us=round(raw["p50_us"], 1), hub_p99_us=round(hubbed["p99_us"], 1),
                raw_p99_us=round(raw["p99_us"], 1),
            )  # fmt: skip
        if "catchup" in only:
            with rados_hub(cluster, directory, "catchup") as hub:
                on_rados = catchup(ctx, hub, sizes["catchup"])
            with HubProcess(os.path.join(directory, "mmap-data")) as hub:
                on_mmap = catchup(ctx, hub, sizes["catchup"])
            figures["catchup"] = ratio(
                "catchup", on_rados["msg_per_s"], on_mmap["msg_per_s"], rados=on_rados, mmap=on_mmap
            )
    finally:
        cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)
    report["figures"] = figures
    report["load_after"] = load()
    emit(report, RESULTS, save=not (args.quick or args.no_save))
    return 0 if all(f["meets"] for f in figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
