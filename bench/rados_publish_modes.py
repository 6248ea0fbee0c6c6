"""What one publish per call costs on RADOS, and what batching, pipelining and the store's
max_in_flight give back: the same publishers against a hub over mmap ledgers and hubs
over a Ceph pool, in one run on one throw-away cluster (hedwig.testing.ceph: 1 monitor,
3 bluestore OSDs, pool size 3), every figure also a ratio to the mmap hub's.

    .venv/bin/python bench/rados_publish_modes.py [--quick] [--no-save]

- blocking_one: the blocking client, one 100-byte message per call (each waits for its
  acknowledgement: on RADOS a write replicated on 3 OSDs);
- blocking_sets: the blocking client, sets of 100 messages per call (publish_many);
- pipelined_one: the Twisted client, one message per publish() call, 256 outstanding
  (it batches the messages of a reactor turn into one set);
- pipelined_sets: the Twisted client, sets of 100, 64 outstanding, on a RADOS hub with
  [rados] max_in_flight = 64 (the default) and = 1 (one write at a time).

Prints JSON and writes bench/results/rados_publish_modes.json (docs/operations.md,
"What a publish costs on RADOS", quotes it).
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
from bench.figures import RESULTS_DIR, emit, load, report_start
from bench.rados_bench import pipelined_publish_worker
from hedwig.testing.ceph import CephCluster
from hedwig.testing.hubprocess import HubProcess

RESULTS = RESULTS_DIR / "rados_publish_modes.json"
OUTSTANDING_ONE = 256


def blocking_one_worker(address, topic, count, out):
    """`count` publishes of one message, one at a time (after 100 on a warm-up topic)."""
    from hedwig.client import Client

    with Client(address) as client:
        for _ in range(100):
            client.publish(topic + "-warm", PAYLOAD)
        started = time.perf_counter()
        for _ in range(count):
            client.publish(topic, PAYLOAD)
        seconds = time.perf_counter() - started
    out.put({"messages": count, "seconds": seconds, "error": None})


def pipelined_one_worker(address, topic, count, out):
    """`count` one-message publish() calls of the Twisted client, OUTSTANDING_ONE unanswered."""
    pipelined_publish_worker(address, topic, count, out, set_size=1, in_flight=OUTSTANDING_ONE)


def measure(ctx, hub, worker, *args) -> float:
    [result] = run_processes(ctx, hubs=[hub], targets=[(worker, (hub.address, *args))])
    assert result.get("error") is None, result
    return result["messages"] / result["seconds"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, to check it runs (not saved)")
    parser.add_argument("--no-save", action="store_true", help=f"do not write {RESULTS}")
    args = parser.parse_args(argv)
    sizes = (
        {"one": 200, "sets": 50, "pipelined_one": 2000, "pipelined_sets": 100}
        if args.quick
        else {"one": 1000, "sets": 300, "pipelined_one": 30_000, "pipelined_sets": 600}
    )
    ctx = multiprocessing.get_context("spawn")
    report = report_start("rados_publish_modes", argv, sizes=sizes, payload_bytes=len(PAYLOAD))
    directory = tempfile.mkdtemp(prefix="hedwig-rados-modes-")
    rates = {}
    cluster = CephCluster(os.path.join(directory, "ceph"))
    try:
        cluster.start()
        hubs = {"mmap": HubProcess(os.path.join(directory, "mmap-data"))}
        for name, in_flight in (("rados", 64), ("rados_max_in_flight_1", 1)):
            conf = os.path.join(directory, f"{name}.conf")
            cluster.hub_conf(conf, name, max_in_flight=in_flight)
            hubs[name] = HubProcess(os.path.join(directory, f"{name}-data"), 0, "--conf", conf)
        for name, hub in hubs.items():
            with hub:
                row = rates[name] = {}
                if name != "rados_max_in_flight_1":
                    row["blocking_one"] = measure(ctx, hub, blocking_one_worker, "one", sizes["one"])
                    row["blocking_sets"] = measure(ctx, hub, publish_many_worker, "sets", sizes["sets"], 100)
                    row["pipelined_one"] = measure(
                        ctx, hub, pipelined_one_worker, "p1", sizes["pipelined_one"]
                    )
                row["pipelined_sets"] = measure(
                    ctx, hub, pipelined_publish_worker, "ps", sizes["pipelined_sets"]
                )
    finally:
        cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)
    mmap = rates["mmap"]
    report["msg_per_s"] = {name: {mode: round(v) for mode, v in row.items()} for name, row in rates.items()}
    report["ratio_to_mmap"] = {
        name: {mode: round(v / mmap[mode], 3) for mode, v in row.items()}
        for name, row in rates.items()
        if name != "mmap"
    }
    rados = rates["rados"]
    report["ratio_to_rados_blocking_one"] = {
        mode: round(v / rados["blocking_one"], 1) for mode, v in rados.items()
    }
    report["load_after"] = load()
    emit(report, RESULTS, save=not (args.quick or args.no_save))
    return 0


if __name__ == "__main__":
    sys.exit(main())
