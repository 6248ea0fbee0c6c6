"""Publish/subscribe benchmark: a hub process and client processes on loopback.

    .venv/bin/python bench/pubsub_bench.py [--quick] [--only NAME ...] [--dir DIR]

Every payload is 100 bytes. The hub runs as `python -m hedwig hub` with its defaults
(fsync "never", 256 MiB cache); each client is a process of its own (multiprocessing,
spawn). The six figures, each with its target:

- publish_many: one producer, message sets of 1000 (blocking client): >= 1,000,000 msg/s
- twisted_publish: the Twisted client, one message per publish() call, 1000 in flight:
  >= 200,000 msg/s
- blocking_publish: the blocking client, one publish at a time (median of three runs):
  >= 10,000 msg/s
- latency: one subscriber, 10,000 msg/s published as they fall due (blocking client: one
  publish() per message, publish_many of those due together after a late wake-up; each
  stamped when sent); the subscriber (blocking client) measures stamp -> receive:
  p50 <= 300 us, p99 <= 3 ms
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
import re
import resource
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

RESULTS = os.path.join(ROOT, "bench", "results", "pubsub_bench.json")
PAYLOAD_BYTES = 100
PAYLOAD = b"x" * PAYLOAD_BYTES

TARGETS = {
    "publish_many": (
        ">=",
        1_000_000,
        "msg/s",
        "Redis pipelined XADD ~77,000/s; Kafka single producer 821,557/s",
    ),
    "twisted_publish": (">=", 200_000, "msg/s", ""),
    "blocking_publish": (">=", 10_000, "msg/s", "Redis one XADD per round trip ~3,300/s"),
    "latency_p50_us": ("<=", 300, "us", "Redis XADD->XREAD ~600 us; raw TCP between processes ~50 us"),
    "latency_p99_us": ("<=", 3000, "us", "Redis ~5 ms; raw TCP ~2 ms"),
    "fanout": (">=", 1_500_000, "msg/s delivered", "Redis ~240,000/s"),
    "catchup": (">=", 1_000_000, "msg/s", "Redis XRANGE ~230,000/s"),
}


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu_seconds(pid) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


# -- the hub ------------------------------------------------------------------------------------


class Hub:
    """`python -m hedwig hub` on a free port; its log is read (and dropped) by a thread."""

    def __init__(self, data_dir):
        self.data_dir = data_dir
        self.port = 0
        self.process = None

    def start(self):
        serving = threading.Event()
        command = [sys.executable, "-m", "hedwig", "hub", "--host", "127.0.0.1", "--port", str(self.port)]
        self.process = subprocess.Popen(
            [*command, "--data-dir", self.data_dir],
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
            raise RuntimeError("the hub did not start:\n" + "".join(log[-20:]))
        return self

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(120)


# -- client processes ---------------------------------------------------------------------------


def publish_many_worker(address, topic, batches, batch_size, out):
    from hedwig.client import Client

    payloads = [PAYLOAD] * batch_size
    with Client(address) as client:
        for _ in range(min(100, batches)):
            client.publish_many(topic + "-warm", payloads)
        cpu = cpu_seconds()
        started = time.perf_counter()
        for _ in range(batches):
            client.publish_many(topic, payloads)
        elapsed = time.perf_counter() - started
    out.put({"messages": batches * batch_size, "seconds": elapsed, "client_cpu_s": cpu_seconds() - cpu})


def blocking_publish_worker(address, topic, count, out):
    """Three runs of `count` publishes after a warm-up on the same topic: the median is
    the figure (one round trip at a time is at the mercy of wake-ups on a shared VM)."""
    from hedwig.client import Client

    runs = []
    with Client(address) as client:
        publish = client.publish
        for _ in range(min(2000, count)):
            publish(topic, PAYLOAD)
        cpu = cpu_seconds()
        for _ in range(3):
            started = time.perf_counter()
            for _ in range(count):
                publish(topic, PAYLOAD)
            runs.append(count / (time.perf_counter() - started))
        cpu = cpu_seconds() - cpu
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
            state["client_cpu_s"] = cpu_seconds() - state["cpu"]
            client.close().addBoth(lambda _: reactor.stop())

    def failed(failure):
        state["error"] = failure.getErrorMessage()
        reactor.stop()

    def run(_client):
        state["cpu"] = cpu_seconds()
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


def latency_publisher(address, topic, rate, seconds, ready, out):
    """Publishes `rate` messages a second as they fall due: one publish() per message
    (publish_many of the few due at once after a late wake-up), each stamped when sent."""
    from hedwig.client import Client

    ready.wait()
    total = int(rate * seconds)
    sent = 0
    pad = b"p" * (PAYLOAD_BYTES - 8)
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


def latency_subscriber(address, topic, count, warmup, ready, out):
    from hedwig.client import Client

    latencies = array("q")
    clock = time.perf_counter_ns
    with Client(address) as client:
        sub = client.subscribe(topic, "latency")
        ready.set()
        for i in range(count):
            message = sub.receive(timeout=60)
            now = clock()
            if message is None:
                break
            if i >= warmup:
                latencies.append(now - int.from_bytes(message.payload[:8], "big"))
            sub.ack(message)
    latencies = sorted(latencies)
    n = len(latencies)
    out.put(
        {
            "messages": n,
            "p50_us": latencies[n // 2] / 1000 if n else None,
            "p99_us": latencies[int(n * 0.99)] / 1000 if n else None,
            "p999_us": latencies[int(n * 0.999)] / 1000 if n else None,
            "max_us": latencies[-1] / 1000 if n else None,
        }
    )


def fanout_subscriber(address, topic, name, total, barrier, out):
    from hedwig.client import Client

    received = 0
    with Client(address) as client:
        sub = client.subscribe(topic, name)
        barrier.wait()
        cpu = cpu_seconds()
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
            "cpu_s": cpu_seconds() - cpu,
        }
    )


def fanout_publisher(address, topic, batches, batch_size, barrier, out):
    from hedwig.client import Client

    payloads = [PAYLOAD] * batch_size
    with Client(address) as client:
        barrier.wait()
        cpu = cpu_seconds()
        started = time.perf_counter()
        for _ in range(batches):
            client.publish_many(topic, payloads)
        finished = time.perf_counter()
    out.put({"started": started, "finished": finished, "cpu_s": cpu_seconds() - cpu})


def catchup_subscriber(address, topic, total, out):
    from hedwig.client import Client

    received = 0
    with Client(address) as client:
        sub = client.subscribe(topic, "catchup", start="earliest")
        cpu = cpu_seconds()
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
    out.put({"received": received, "seconds": elapsed, "client_cpu_s": cpu_seconds() - cpu})


# -- figures ------------------------------------------------------------------------------------


def run_processes(ctx, targets, hub=None, timeout=1800):
    """Start one process per (function, args) with a shared result queue; their results.
    Fails at once (not at the timeout) when a process or the hub dies without a result."""
    import queue

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
            dead = [p for p in processes if p.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(
                    f"{dead[0].name} ({dead[0]._target.__name__}) exited with {dead[0].exitcode}"
                )
            if hub is not None and hub.process.poll() is not None:
                raise RuntimeError(f"the hub exited with {hub.process.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no result in {timeout} s")
    finally:
        for process in processes:
            process.join(30 if len(results) == len(processes) else 0.1)
            if process.is_alive():
                process.kill()
    return results


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


def bench_publish_many(ctx, hub, sizes):
    [result] = run_processes(
        ctx, hub=hub, targets=[(publish_many_worker, (hub.address, "pm", sizes["pm_batches"], 1000))]
    )
    return {"publish_many": figure("publish_many", result["messages"] / result["seconds"], **result)}


def bench_twisted(ctx, hub, sizes):
    [result] = run_processes(
        ctx, hub=hub, targets=[(twisted_publish_worker, (hub.address, "tw", sizes["tw_count"], 1000))]
    )
    if result["error"]:
        raise RuntimeError(result["error"])
    return {"twisted_publish": figure("twisted_publish", result["messages"] / result["seconds"], **result)}


def bench_blocking(ctx, hub, sizes):
    [result] = run_processes(
        ctx, hub=hub, targets=[(blocking_publish_worker, (hub.address, "bp", sizes["bp_count"]))]
    )
    median = sorted(result["runs_msg_per_s"])[1]
    return {"blocking_publish": figure("blocking_publish", median, **result)}


def bench_latency(ctx, hub, sizes):
    rate, seconds = 10_000, sizes["lat_seconds"]
    count = int(rate * seconds)
    ready = ctx.Event()
    results = run_processes(
        ctx,
        hub=hub,
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
    results = run_processes(ctx, targets, hub=hub)
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
        ctx, hub=hub, targets=[(publish_many_worker, (hub.address, "catchup", batches, 1000))]
    )
    hub.stop()  # the restart empties the cache: every entry is read from the ledger
    hub.start()
    hub_cpu = process_cpu_seconds(hub.process.pid)
    [result] = run_processes(ctx, hub=hub, targets=[(catchup_subscriber, (hub.address, "catchup", total))])
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
    "publish_many": bench_publish_many,
    "twisted_publish": bench_twisted,
    "blocking_publish": bench_blocking,
    "latency": bench_latency,
    "fanout": bench_fanout,
    "catchup": bench_catchup,
}

FULL = dict(
    pm_batches=3000,
    tw_count=500_000,
    bp_count=10_000,
    lat_seconds=6,
    fan_batches=500,
    catchup_messages=10_000_000,
)
QUICK = dict(
    pm_batches=300, tw_count=50_000, bp_count=3000, lat_seconds=2, fan_batches=50, catchup_messages=500_000
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, to check the benchmark runs")
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHES), help="run only these figures")
    parser.add_argument("--dir", help="where the hub keeps its data (default: a temporary directory)")
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/pubsub_bench.json")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    ctx = multiprocessing.get_context("spawn")
    directory = tempfile.mkdtemp(prefix="pubsub-bench-", dir=args.dir)
    hub = Hub(os.path.join(directory, "data")).start()
    report = {
        "benchmark": "pubsub_bench",
        "command": "python bench/pubsub_bench.py" + (" --quick" if args.quick else ""),
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
            if hub.process.poll() is None and name != "catchup":
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
        hub.stop()
        shutil.rmtree(directory, ignore_errors=True)
    report["load_after"] = load()
    report["all_targets_met"] = all(f["meets_target"] for f in report["figures"].values())
    text = json.dumps(report, indent=2)
    print(text)
    if not args.no_save:
        os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
        with open(RESULTS, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
