"""Benchmark clients as processes of their own (multiprocessing, spawn context), so that
a client's Python never shares an interpreter with the hub's or another client's.

A worker is a module-level function whose last argument is a queue it puts its one
result dict on; run_processes starts them and collects the results, failing at once
(not at its timeout) when a client process or a hub dies. The workers here are the ones
bench/pubsub_bench.py, bench/round_trip_bench.py and bench/region_bench.py measure with.
"""

import os
import queue
import time
from array import array

from bench.figures import latency_summary, own_cpu_seconds

PAYLOAD_BYTES = 100
PAYLOAD = b"x" * PAYLOAD_BYTES
START_WAIT_S = 300.0


def pin(pid: int, cpus) -> None:
    """Run every thread of process `pid` on `cpus` (threads it starts later inherit it)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(task), cpus)
        except ProcessLookupError:
            pass  # (a thread that ended meanwhile)


def run_processes(ctx, targets, hubs=(), timeout=1800.0, cpus=None) -> list:
    """Start one process per (function, args) with a shared result queue; their results
    (in the order they came). `hubs`: HubProcesses whose exit fails the run; `cpus`: the
    CPUs the processes run on (None: wherever the scheduler puts them)."""
    out = ctx.Queue()
    processes = [
        ctx.Process(target=target, args=(*args, out), name=target.__name__) for target, args in targets
    ]
    for process in processes:
        process.start()
        if cpus is not None:
            pin(process.pid, cpus)
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
                raise RuntimeError(f"{dead[0].name} (pid {dead[0].pid}) exited with {dead[0].exitcode}")
            for hub in hubs:
                if not hub.running:
                    raise RuntimeError(f"the hub at {hub.address} exited with {hub.process.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no result in {timeout} s")
    finally:
        for process in processes:
            process.join(30 if len(results) == len(processes) else 0.1)
            if process.is_alive():
                process.kill()
    return results


def publish_many_worker(address, topic, batches, batch_size, out):
    """One blocking client publishing `batches` message sets of `batch_size` payloads
    (after up to 100 of them on a warm-up topic): messages, seconds, started_ns and
    ended_ns (time.perf_counter_ns, one clock for the machine) and client_cpu_s."""
    from hedwig.client import Client

    payloads = [PAYLOAD] * batch_size
    with Client(address) as client:
        for _ in range(min(100, batches)):
            client.publish_many(topic + "-warm", payloads)
        cpu = own_cpu_seconds()
        started_ns = time.perf_counter_ns()
        for _ in range(batches):
            client.publish_many(topic, payloads)
        ended_ns = time.perf_counter_ns()
    out.put(
        {
            "messages": batches * batch_size,
            "seconds": (ended_ns - started_ns) / 1e9,
            "started_ns": started_ns,
            "ended_ns": ended_ns,
            "client_cpu_s": own_cpu_seconds() - cpu,
        }
    )


def publish_paced(rate: int, seconds: float, publish_one, publish_many) -> int:
    """Publish `rate` messages a second for `seconds` as they fall due: publish_one(payload)
    per message, publish_many(payloads) for the few due at once after a late wake-up, each
    stamped with time.perf_counter_ns when sent in its first 8 bytes. How many were sent."""
    total = int(rate * seconds)
    sent = 0
    pad = b"p" * (PAYLOAD_BYTES - 8)
    clock = time.perf_counter_ns
    started = time.perf_counter()
    while sent < total:
        due = min(total, int((time.perf_counter() - started) * rate)) - sent
        if due <= 0:
            time.sleep(0.00005)  # the pace of publishing: the next one is not due yet
        elif due == 1:
            publish_one(clock().to_bytes(8, "big") + pad)
        else:
            publish_many([clock().to_bytes(8, "big") + pad for _ in range(due)])
        sent += max(due, 0)
    return sent


def latency_publisher(address, topic, rate, seconds, start, out):
    """Once `start` (an Event) is set, publishes `rate` messages a second for `seconds`
    (publish_paced: one publish() per message)."""
    from hedwig.client import Client

    if not start.wait(START_WAIT_S):
        raise RuntimeError(f"not told to start within {START_WAIT_S} s")
    with Client(address) as client:
        sent = publish_paced(
            rate, seconds, lambda p: client.publish(topic, p), lambda ps: client.publish_many(topic, ps)
        )
    out.put({"sent": sent})


def latency_subscriber(address, topic, count, warmup, ready, out):
    """Sets `ready` once subscribed, then receives `count` messages (acknowledging each)
    and times each from the stamp in its first 8 bytes; the first `warmup` are not timed.
    Puts p50_us, p99_us, p999_us and max_us."""
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
    out.put({"messages": len(latencies), **latency_summary(latencies)})
