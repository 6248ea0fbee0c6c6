"""Region relay benchmark: hub processes on loopback, one region each, linked as a tree.

    .venv/bin/python bench/region_bench.py [--quick] [--no-save] [--tls]

Every payload is 100 bytes; every hub runs `python -m hedwig hub --conf` with the
defaults but its [region] (fsync "never"). Clients are processes of their own
(multiprocessing, spawn). Figures, each with its target:

- single_hub_publish: the baseline, measured here the way bench/pubsub_bench.py measures
  publish_many: one blocking client publishing message sets of 1000 to a hub with no
  region link, messages per second.
- relay_throughput: the same publisher on a parent region whose child region relays the
  topic (a durable subscriber there makes the child want it): messages per second from
  the first publish until the child's log holds the last message. Target: >= 50 % of
  single_hub_publish (relay_ratio).
- hop_latency: 10,000 messages a second published one by one (the blocking client, each
  stamped with time.perf_counter_ns when sent, a few per publish when the publisher wakes
  late) on the root of a chain of 0, 1 and 2 links (root; root <- mid; root <- mid <-
  leaf), one chain at a time, with one subscriber in the chain's last region measuring
  stamp -> receive (the first second is a warm-up). The latency a hop adds is the
  difference of the medians: one link - none, and (two links - none) / 2. Target: p50
  <= 1 ms per hop.

With --tls every region link runs over TLS, as a deployment across untrusted networks
would: each hub has a TLS listener and a certificate from one test authority, children
link to their parent's TLS port presenting theirs, and parents require it
(`require_child_certificate`). Clients stay on the plain ports, so the baseline is the
same and the difference is what TLS costs the links. Results: region_bench_tls.json.

Prints JSON and writes bench/results/region_bench.json with the load average around each
figure: the machine has 2 cores shared by every hub and client here (and whatever else
runs), so the hops also measure the hubs taking turns on them.
"""

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from array import array
from itertools import pairwise

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.client_processes import (
    PAYLOAD_BYTES,
    latency_publisher,
    publish_many_worker,
    run_processes,
)
from bench.figures import RESULTS_DIR, emit, load, median, percentile
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.polling import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout
RESULTS = RESULTS_DIR / "region_bench.json"
TLS_RESULTS = RESULTS_DIR / "region_bench_tls.json"
PKI = None  # with --tls: the hedwig.testing.certificates.Authority every hub's certificate comes from


class RegionHub(HubProcess):
    """A hub process for one region, on a free port: its hub.conf holds the [region]
    section alone (every other setting at its default)."""

    def __init__(self, directory, name, parent=None):
        self.name = name
        self.dir = os.path.join(directory, name)
        os.makedirs(self.dir, exist_ok=True)
        self.parent = parent
        self.conf = os.path.join(self.dir, "hub.conf")
        super().__init__(
            os.path.join(self.dir, "data"), 0, "--conf", self.conf, cwd=ROOT, tls=PKI is not None
        )

    def start(self):
        lines = ["[region]", f"name = {self.name}"]
        if self.parent is not None:
            if PKI is None:
                lines += [f"parent = {self.parent.name}", f"parent_address = {self.parent.address}"]
            else:
                address = f"127.0.0.1:{self.parent.tls_port}"
                lines += [f"parent = {self.parent.name}", f"parent_address = {address}", "parent_tls = true"]
        if PKI is not None:
            cert, key = PKI.issue(self.name)
            lines += ["require_child_certificate = true"]
            lines += ["[tls]", "enabled = true", f"port = {self.tls_port or 0}"]  # (0: a free one, then kept)
            lines += [f"cert_file = {cert}", f"key_file = {key}", f"ca_file = {PKI.cert_file}"]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        return super().start()

    def client(self):
        from hedwig.client import Client

        return Client(self.address, timeout=30)

    def wait(self, condition, what, timeout=60.0):
        """Until condition(client) holds, asked of a new client each time."""

        def ask():
            with self.client() as client:
                return condition(client)

        wait_until(ask, f"{self.name}: {what}", timeout=timeout, interval=0.02)


def linked(client):
    parent = client.stats()["regions"]["parent"]
    return parent["state"] == "relaying" and parent.get("interest_synced")


def relays_to(topic, region):
    def check(client):
        relays = client.describe(topic).get("relays", [])
        return any(r["peer"] == region and r["direction"] == "out" for r in relays)

    return check


# -- client processes ---------------------------------------------------------------------------


def latency_subscriber(address, region, topic, count, warmup, ready, out):
    """Receives `count` messages (receive_batch: one call per delivery), measuring each
    from its stamp to the moment its delivery was read; the first `warmup` are not counted."""
    from hedwig.client import Client

    latencies = array("q")
    clock = time.perf_counter_ns
    received = 0
    with Client(address) as client:
        sub = client.subscribe(topic, f"latency-{region}")
        ready.put(region)
        while received < count:
            batch = sub.receive_batch(timeout=60)
            now = clock()
            if not batch:
                break
            for message in batch:
                if received >= warmup:
                    latencies.append(now - int.from_bytes(message.payload[:8], "big"))
                received += 1
            sub.ack(batch[-1])
    half = sorted(latencies[len(latencies) // 2 :])
    latencies = sorted(latencies)
    summary = {"region": region, "messages": len(latencies)}
    for name, values, q in (
        ("p50_us", latencies, 0.5),
        ("p99_us", latencies, 0.99),
        ("max_us", latencies, 1.0),
        ("p50_us_second_half", half, 0.5),
    ):
        value = percentile(values, q)
        summary[name] = value / 1000 if value is not None else None
    out.put(summary)


# -- figures ------------------------------------------------------------------------------------


def bench_single_hub(ctx, directory, batches):
    hub = RegionHub(directory, "alone").start()
    try:
        [result] = run_processes(ctx, [(publish_many_worker, (hub.address, "pm", batches, 1000))], hubs=[hub])
    finally:
        hub.stop()
    seconds = (result["ended_ns"] - result["started_ns"]) / 1e9
    return {
        "messages": result["messages"],
        "seconds": round(seconds, 3),
        "msg_per_s": result["messages"] / seconds,
    }


def bench_relay(ctx, directory, batches):
    parent = RegionHub(directory, "parent").start()
    child = RegionHub(directory, "child", parent).start()
    try:
        child.wait(linked, "the link to parent")
        with child.client() as client:
            client.subscribe("relay", "archive").close()  # durable: the child wants the topic
        parent.wait(relays_to("relay", "child"), "the child's relay subscription")
        out = ctx.Queue()
        publisher = ctx.Process(
            target=publish_many_worker, args=(parent.address, "relay", batches, 1000, out)
        )
        total = batches * 1000
        publisher.start()
        with child.client() as client:  # (the subscription created the topic there)
            while client.describe("relay")["last_seq"] < total:
                if publisher.exitcode not in (None, 0):
                    raise RuntimeError("the publisher failed")
                time.sleep(0.002)  # polling the child's log, the pace of the measurement
            held_ns = time.perf_counter_ns()
        result = out.get(timeout=120)
        publisher.join(30)
        with child.client() as client:
            relay = client.stats()["regions"]["relay"]
    finally:
        child.stop()
        parent.stop()
    seconds = (held_ns - result["started_ns"]) / 1e9
    publish_seconds = (result["ended_ns"] - result["started_ns"]) / 1e9
    return {
        "messages": total,
        "seconds_until_the_child_holds_all": round(seconds, 3),
        "msg_per_s": total / seconds,
        "publish_msg_per_s_at_the_parent_meanwhile": round(total / publish_seconds, 1),
        "child_tail_after_last_publish_ms": round((held_ns - result["ended_ns"]) / 1e6, 2),
        "child_relay_counters": relay,
    }


def bench_chain(ctx, directory, hops, seconds, rate=10_000):
    """Publish on the root of a chain of `hops` links; one subscriber, in the last region."""
    names = ["root", "mid", "leaf", "far"][: hops + 1]
    hubs = []
    try:
        for name in names:
            hubs.append(
                RegionHub(os.path.join(directory, f"chain{hops}"), name, hubs[-1] if hubs else None).start()
            )
        for hub in hubs[1:]:
            hub.wait(linked, "its link")
        ready, go = ctx.Queue(), ctx.Event()
        count = int(rate * seconds)
        last = hubs[-1]
        out = ctx.Queue()
        subscriber = ctx.Process(
            target=latency_subscriber, args=(last.address, last.name, "hops", count, rate, ready, out)
        )
        publisher = ctx.Process(
            target=latency_publisher, args=(hubs[0].address, "hops", rate, seconds, go, out)
        )
        subscriber.start()
        publisher.start()
        ready.get(timeout=120)
        for parent, child in pairwise(hubs):  # interest reached the root
            parent.wait(relays_to("hops", child.name), f"{child.name}'s relay subscription")
        go.set()
        results = [out.get(timeout=seconds + 120) for _ in range(2)]
        for process in (subscriber, publisher):
            process.join(30)
    finally:
        for hub in reversed(hubs):
            hub.stop()
    return next(r for r in results if "region" in r)


def bench_hops(ctx, directory, seconds):
    """The same stream measured through 0, 1 and 2 links, one chain at a time (so that
    only the hubs of that chain, one publisher and one subscriber share the cores)."""
    chains = {hops: bench_chain(ctx, directory, hops, seconds) for hops in (0, 1, 2)}
    base = chains[0]["p50_us"]
    return {
        "rate_msg_per_s": 10_000,
        "seconds": seconds,
        "subscriber_after_0_1_2_hops": {str(h): r for h, r in chains.items()},
        "added_p50_us_one_hop": round(chains[1]["p50_us"] - base, 1),
        "added_p50_us_per_hop_over_two": round((chains[2]["p50_us"] - base) / 2, 1),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, to check it runs (not saved)")
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/region_bench.json")
    parser.add_argument("--tls", action="store_true", help="region links over TLS (region_bench_tls.json)")
    args = parser.parse_args(argv)
    batches = 300 if args.quick else 2000
    hop_seconds = 3 if args.quick else 8
    rounds = 1 if args.quick else 3
    ctx = multiprocessing.get_context("spawn")
    directory = tempfile.mkdtemp(prefix="region-bench-")
    if args.tls:
        global PKI
        from hedwig.testing.certificates import Authority

        PKI = Authority(os.path.join(directory, "pki"))
    report = {
        "benchmark": "region_bench",
        "command": "python bench/region_bench.py"
        + (" --quick" if args.quick else "")
        + (" --tls" if args.tls else ""),
        "links": "TLS, client certificates required" if args.tls else "plain TCP",
        "payload_bytes": PAYLOAD_BYTES,
        "message_set": 1000,
        "cores": os.cpu_count(),
        "load_before": load(),
        "figures": {},
        "load_during": {},
    }
    runs = {"single_hub_publish": [], "relay_throughput": []}
    try:
        # The two throughputs in turns, so that the load of the machine weighs on both.
        for round_ in range(rounds):
            for name, run in (("single_hub_publish", bench_single_hub), ("relay_throughput", bench_relay)):
                before = load()
                result = run(ctx, os.path.join(directory, f"{name}-{round_}"), batches)
                result["load"] = f"{before} -> {load()}"
                runs[name].append(result)
                print(json.dumps({name: result}), file=sys.stderr)
        before = load()
        report["figures"]["hop_latency"] = bench_hops(ctx, directory, hop_seconds)
        report["load_during"]["hop_latency"] = f"{before} -> {load()}"
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    figures = report["figures"]
    for name, results in runs.items():
        rate = median(r["msg_per_s"] for r in results)
        figures[name] = {"msg_per_s": round(rate, 1), "median_of": len(results), "runs": results}
        for result in results:
            result["msg_per_s"] = round(result["msg_per_s"], 1)
    single = figures["single_hub_publish"]["msg_per_s"]
    relay = figures["relay_throughput"]["msg_per_s"]
    figures["relay_ratio"] = {
        "value": round(relay / single, 3),
        "target": ">= 0.5",
        "meets_target": relay / single >= 0.5,
    }
    hop = max(
        figures["hop_latency"]["added_p50_us_one_hop"],
        figures["hop_latency"]["added_p50_us_per_hop_over_two"],
    )
    figures["hop_latency"]["target"] = "p50 <= 1000 us added per hop"
    figures["hop_latency"]["meets_target"] = hop <= 1000
    report["load_after"] = load()
    emit(report, TLS_RESULTS if args.tls else RESULTS, save=not (args.quick or args.no_save))
    return 0


if __name__ == "__main__":
    sys.exit(main())
