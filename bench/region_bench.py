"""Region relay benchmark: hub processes on loopback, one region each, linked as a tree.

    .venv/bin/python bench/region_bench.py [--quick] [--no-save]

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
  late) on the root of a chain root <- mid <- leaf, with one subscriber in each region
  measuring stamp -> receive. The latency a hop adds is the difference of the medians:
  (leaf - root) / 2 and mid - root. Target: p50 <= 1 ms per hop.

Prints JSON and writes bench/results/region_bench.json with the load average around each
figure: the machine has 2 cores shared by every hub and client here (and whatever else
runs), so the hops also measure the hubs taking turns on them.
"""

import argparse
import json
import multiprocessing
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from array import array

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

RESULTS = os.path.join(ROOT, "bench", "results", "region_bench.json")
PAYLOAD = b"x" * 100


def load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


class RegionHub:
    """`python -m hedwig hub --conf` for one region, on a free port."""

    def __init__(self, directory, name, parent=None):
        self.name = name
        self.dir = os.path.join(directory, name)
        os.makedirs(self.dir, exist_ok=True)
        self.parent = parent
        self.port = 0
        self.process = None

    def start(self):
        lines = ["[hub]", "host = 127.0.0.1", "port = 0", f"data_dir = {self.dir}/data", "[region]"]
        lines.append(f"name = {self.name}")
        if self.parent is not None:
            lines += [f"parent = {self.parent.name}", f"parent_address = {self.parent.address}"]
        conf = os.path.join(self.dir, "hub.conf")
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        serving = threading.Event()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hedwig", "hub", "--conf", conf],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        log = []

        def read():
            for line in self.process.stderr:
                log.append(line)
                match = re.search(r"hedwig hub \S+:(\d+) .*serving", line)
                if match:
                    self.port = int(match.group(1))
                    serving.set()
            serving.set()

        threading.Thread(target=read, daemon=True).start()
        if not serving.wait(60) or self.process.poll() is not None:
            raise RuntimeError(f"hub {self.name} did not start:\n" + "".join(log[-20:]))
        return self

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(120)

    def client(self):
        from hedwig.client import Client

        return Client(self.address, timeout=30)

    def wait(self, condition, what, timeout=60.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                with self.client() as client:
                    if condition(client):
                        return
            except Exception:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: timed out waiting for {what}")
            time.sleep(0.02)


def linked(client):
    parent = client.stats()["regions"]["parent"]
    return parent["state"] == "relaying" and parent.get("interest_synced")


def relays_to(topic, region):
    def check(client):
        relays = client.describe(topic).get("relays", [])
        return any(r["peer"] == region and r["direction"] == "out" for r in relays)

    return check


# -- client processes ---------------------------------------------------------------------------


def publish_many_worker(address, topic, batches, batch_size, out):
    from hedwig.client import Client

    payloads = [PAYLOAD] * batch_size
    with Client(address) as client:
        for _ in range(min(100, batches)):
            client.publish_many(topic + "-warm", payloads)
        started_ns = time.perf_counter_ns()
        for _ in range(batches):
            client.publish_many(topic, payloads)
        ended_ns = time.perf_counter_ns()
    out.put({"messages": batches * batch_size, "started_ns": started_ns, "ended_ns": ended_ns})


def latency_publisher(address, topic, rate, seconds, ready, count_ready, out):
    from hedwig.client import Client

    for _ in range(count_ready):
        ready.get(timeout=120)
    total = int(rate * seconds)
    sent = 0
    pad = b"p" * (len(PAYLOAD) - 8)
    clock = time.perf_counter_ns
    with Client(address) as client:
        started = time.perf_counter()
        while sent < total:
            due = min(total, int((time.perf_counter() - started) * rate)) - sent
            if due <= 0:
                time.sleep(0.00005)
            elif due == 1:
                client.publish(topic, clock().to_bytes(8, "big") + pad)
            else:
                client.publish_many(topic, [clock().to_bytes(8, "big") + pad] * due)
            sent += max(due, 0)
    out.put({"sent": sent})


def latency_subscriber(address, region, topic, count, warmup, ready, out):
    from hedwig.client import Client

    latencies = array("q")
    clock = time.perf_counter_ns
    with Client(address) as client:
        sub = client.subscribe(topic, f"latency-{region}")
        ready.put(region)
        for i in range(count):
            message = sub.receive(timeout=60)
            now = clock()
            if message is None:
                break
            if i >= warmup:
                latencies.append(now - int.from_bytes(message.payload[:8], "big"))
            sub.ack(message)
    half = sorted(latencies[len(latencies) // 2 :])
    latencies = sorted(latencies)
    n = len(latencies)
    out.put(
        {
            "region": region,
            "messages": n,
            "p50_us_second_half": half[len(half) // 2] / 1000 if half else None,
            "p99_us_second_half": half[int(len(half) * 0.99)] / 1000 if half else None,
            "p50_us": latencies[n // 2] / 1000 if n else None,
            "p99_us": latencies[int(n * 0.99)] / 1000 if n else None,
            "max_us": latencies[-1] / 1000 if n else None,
        }
    )


def run_processes(ctx, targets, hubs, timeout=900):
    out = ctx.Queue()
    processes = [ctx.Process(target=target, args=(*args, out)) for target, args in targets]
    for process in processes:
        process.start()
    results = []
    deadline = time.monotonic() + timeout
    try:
        while len(results) < len(processes):
            try:
                results.append(out.get(timeout=1))
                continue
            except queue.Empty:
                pass
            if any(p.exitcode not in (None, 0) for p in processes):
                raise RuntimeError("a client process failed")
            if any(h.process.poll() is not None for h in hubs):
                raise RuntimeError("a hub exited")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no result in {timeout} s")
    finally:
        for process in processes:
            process.join(30 if len(results) == len(processes) else 0.1)
            if process.is_alive():
                process.kill()
    return results


# -- figures ------------------------------------------------------------------------------------


def bench_single_hub(ctx, directory, batches):
    hub = RegionHub(directory, "alone").start()
    try:
        [result] = run_processes(ctx, [(publish_many_worker, (hub.address, "pm", batches, 1000))], [hub])
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


def bench_hops(ctx, directory, seconds):
    root = RegionHub(directory, "root").start()
    mid = RegionHub(directory, "mid", root).start()
    leaf = RegionHub(directory, "leaf", mid).start()
    hubs = [root, mid, leaf]
    rate = 10_000
    count = int(rate * seconds)
    try:
        for hub in (mid, leaf):
            hub.wait(linked, "its link")
        ready = ctx.Queue()
        subscribers = [
            (latency_subscriber, (hub.address, hub.name, "hops", count, rate, ready)) for hub in hubs
        ]
        # The publisher starts once all three subscribe; interest then takes a moment to
        # reach every region: the first second (the warm-up) is not measured.
        targets = [*subscribers, (latency_publisher, (root.address, "hops", rate, seconds, ready, 3))]
        results = run_processes(ctx, targets, hubs)
    finally:
        for hub in reversed(hubs):
            hub.stop()
    by_region = {r["region"]: r for r in results if "region" in r}
    root_p50 = by_region["root"]["p50_us"]
    return {
        "rate_msg_per_s": rate,
        "seconds": seconds,
        "per_region": by_region,
        "added_p50_us_one_hop": round(by_region["mid"]["p50_us"] - root_p50, 1),
        "added_p50_us_per_hop_over_two": round((by_region["leaf"]["p50_us"] - root_p50) / 2, 1),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, to check the benchmark runs")
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/region_bench.json")
    args = parser.parse_args(argv)
    batches = 300 if args.quick else 2000
    hop_seconds = 3 if args.quick else 8
    ctx = multiprocessing.get_context("spawn")
    directory = tempfile.mkdtemp(prefix="region-bench-")
    report = {
        "benchmark": "region_bench",
        "command": "python bench/region_bench.py" + (" --quick" if args.quick else ""),
        "payload_bytes": len(PAYLOAD),
        "message_set": 1000,
        "cores": os.cpu_count(),
        "load_before": load(),
        "figures": {},
        "load_during": {},
    }
    try:
        for name, run in (
            ("single_hub_publish", lambda: bench_single_hub(ctx, directory, batches)),
            ("relay_throughput", lambda: bench_relay(ctx, directory, batches)),
            ("hop_latency", lambda: bench_hops(ctx, directory, hop_seconds)),
        ):
            before = load()
            report["figures"][name] = run()
            report["load_during"][name] = f"{before} -> {load()}"
            print(json.dumps({name: report["figures"][name]}), file=sys.stderr)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    figures = report["figures"]
    single = figures["single_hub_publish"]["msg_per_s"]
    relay = figures["relay_throughput"]["msg_per_s"]
    figures["single_hub_publish"]["msg_per_s"] = round(single, 1)
    figures["relay_throughput"]["msg_per_s"] = round(relay, 1)
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
    text = json.dumps(report, indent=2)
    print(text)
    if not args.no_save:
        os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
        with open(RESULTS, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
