"""Ledger store benchmark: append and sequential read throughput of MmapLedgerStore.

    .venv/bin/python bench/ledger_bench.py [--quick] [--dir DIR] [--no-save]

Cases (as issue 2 sets them):
- 1,000,000 entries of 100 bytes, fsync "never": appends/s, then reads/s;
- 20,000 entries of 100 KB (a message set of 1000 messages), fsync "never": GB/s both ways;
- fsync "always" with 100-byte entries: one appender waiting for each acknowledgement
  (one fsync per append), against 8 concurrent appenders (group commit) on one ledger
  and on eight, each keeping 1 and then 16 appends in flight (a publisher pipelining
  its publishes).

Runs on the real reactor and its thread pool (fsyncs and page preparation happen there).
Prints JSON and writes it to bench/results/ledger_bench.json. Figures depend on the
machine and its load, which is recorded with them; process CPU seconds (all threads)
are recorded next to wall seconds, since on a shared machine they vary less.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections import deque

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from twisted.internet import defer, reactor, task

from bench.figures import RESULTS_DIR, emit, load, percentile
from hedwig.ledger.mmap_store import MmapLedgerStore

RESULTS = RESULTS_DIR / "ledger_bench.json"
YIELD_EVERY_BYTES = 8 << 20  # give the reactor a turn (preparer results) this often


def pause():
    return task.deferLater(reactor, 0, lambda: None)


@defer.inlineCallbacks
def append_and_read(directory: str, count: int, size: int, read_batch: int):
    """Append `count` entries of `size` bytes with fsync never, then read them all back."""
    store = MmapLedgerStore(directory, reactor=reactor, fsync="never")
    ledger = yield store.create()
    data = os.urandom(size)
    per_turn = max(1, YIELD_EVERY_BYTES // size)
    append = store.append
    started, cpu_started = time.perf_counter(), time.process_time()
    for first in range(0, count, per_turn):
        for i in range(first, min(count, first + per_turn)):
            append(ledger, data, i)
        yield pause()
    append_s = time.perf_counter() - started
    append_cpu_s = time.process_time() - cpu_started
    assert store.last_entry_id(ledger) == count - 1
    read = store.read
    total = 0
    started, cpu_started = time.perf_counter(), time.process_time()
    for first in range(0, count, read_batch):
        for entry in read(ledger, first, min(count, first + read_batch) - 1).result:  # (fired)
            total += len(entry)
    read_s = time.perf_counter() - started
    read_cpu_s = time.process_time() - cpu_started
    assert total == count * size
    yield store.close()
    return {
        "entries": count,
        "entry_bytes": size,
        "append_s": round(append_s, 3),
        "append_cpu_s": round(append_cpu_s, 3),
        "appends_per_s": round(count / append_s),
        "append_gb_per_s": round(count * size / append_s / 1e9, 3),
        "read_batch": read_batch,
        "read_s": round(read_s, 3),
        "read_cpu_s": round(read_cpu_s, 3),
        "reads_per_s": round(count / read_s),
        "read_gb_per_s": round(total / read_s / 1e9, 3),
    }


@defer.inlineCallbacks
def always(directory: str, appenders: int, in_flight: int, count: int, ledgers: int, size: int = 100):
    """fsync "always": `appenders` writers spread over `ledgers` ledgers, each keeping
    `in_flight` appends outstanding (sending the next as an acknowledgement comes back),
    `count` appends in all."""
    store = MmapLedgerStore(directory, reactor=reactor, fsync="always")
    ledger_ids = []
    for _ in range(ledgers):
        ledger_ids.append((yield store.create()))
    data = os.urandom(size)
    per_appender = count // appenders
    latencies = []

    def writer(ledger) -> defer.Deferred:
        finished = defer.Deferred()
        sent_at = deque()
        counts = [0, 0]  # sent, acknowledged

        def send():
            while counts[0] < per_appender and counts[0] - counts[1] < in_flight:
                counts[0] += 1
                sent_at.append(time.perf_counter())
                store.append(ledger, data, counts[0]).addCallbacks(acked, finished.errback)

        def acked(_entry):
            latencies.append(time.perf_counter() - sent_at.popleft())
            counts[1] += 1
            if counts[1] == per_appender:
                finished.callback(None)
            else:
                send()

        send()
        return finished

    syncs_before = store.syncs
    started, cpu_started = time.perf_counter(), time.process_time()
    yield defer.gatherResults([writer(ledger_ids[i % ledgers]) for i in range(appenders)])
    elapsed = time.perf_counter() - started
    cpu_s = time.process_time() - cpu_started
    syncs = store.syncs - syncs_before
    yield store.close()
    latencies.sort()
    return {
        "appenders": appenders,
        "ledgers": ledgers,
        "in_flight_per_appender": in_flight,
        "entries": per_appender * appenders,
        "entry_bytes": size,
        "seconds": round(elapsed, 3),
        "cpu_s": round(cpu_s, 3),
        "appends_per_s": round(per_appender * appenders / elapsed),
        "fsync_rounds": syncs,
        "appends_per_round": round(per_appender * appenders / max(1, syncs), 1),
        "ack_latency_p50_ms": round(percentile(latencies, 0.5) * 1e3, 3),
        "ack_latency_p99_ms": round(percentile(latencies, 0.99) * 1e3, 3),
    }


@defer.inlineCallbacks
def main(args):
    root = tempfile.mkdtemp(prefix="ledger-bench-", dir=args.dir)
    quick = args.quick
    results = {"load_before": load(), "cores": os.cpu_count(), "quick": quick}
    cases = {}

    def fresh(name):
        path = os.path.join(root, name)
        shutil.rmtree(path, ignore_errors=True)
        return path

    try:
        cases["small_100B_never"] = yield append_and_read(
            fresh("small"), 100_000 if quick else 1_000_000, 100, 1000
        )
        shutil.rmtree(os.path.join(root, "small"))
        cases["large_100KB_never"] = yield append_and_read(
            fresh("large"), 2_000 if quick else 20_000, 100_000, 100
        )
        shutil.rmtree(os.path.join(root, "large"))
        scale = 1 if quick else 8
        single = yield always(fresh("always-1"), 1, 1, 250 * scale, 1)
        cases["always_1_appender_1_in_flight"] = single
        for appenders, in_flight, ledgers in ((8, 1, 1), (8, 1, 8), (8, 16, 1), (8, 16, 8)):
            name = f"always_{appenders}_appenders_{in_flight}_in_flight_{ledgers}_ledgers"
            count = 2_000 * in_flight**0.5 * scale
            cases[name] = yield always(fresh(name), appenders, in_flight, int(count), ledgers)
            cases[name]["speedup_over_one_fsync_per_append"] = round(
                cases[name]["appends_per_s"] / single["appends_per_s"], 1
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    results["cases"] = cases
    results["load_after"] = load()
    emit(results, RESULTS, save=not (quick or args.no_save))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the work; results not written")
    parser.add_argument("--dir", default=None, help="where the ledgers go (default: the temp directory)")
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/ledger_bench.json")
    task.react(lambda _reactor, args: main(args), [parser.parse_args()])
