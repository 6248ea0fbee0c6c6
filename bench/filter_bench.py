"""Server-side filters' throughput, library level (no sockets): the cache and the delivery
manager over the real topic log, a real mmap ledger store and a real SQLite metadata
store, as bench/delivery_bench.py runs them, with each subscription's filter selecting
1% or 100% of the messages, and without a filter, in one run.

Every message set is 1000 x 100 B, each message with one typed property n = its index
modulo 100 (so "n = 7" selects 1%, "n >= 0" all of them); the sets are the same in every
case, so the cases differ by the filter alone.

fan-out:  a publisher appends sets while K = 10 subscribers of one filter are caught up;
          each consumes what it was delivered every 10 entries.
catch-up: one subscriber starts at the earliest seq-id of a backlog of 1,000,000 messages
          in the ledger and not in the cache, and goes through all of it.

Figures: `topic_messages_per_s` (seq-ids gone through: delivered or passed over, summed
over the subscribers) and `messages_per_s` (delivered). Time is wall-clock around the
work alone. Ratios to the case without a filter, measured in the same run, are in
`ratios` (the machine's speed moves from day to day: only they mean something).

Usage: python bench/filter_bench.py [--quick] [--repeat N] [--no-save]
Prints JSON and writes bench/results/filter_bench.json.
"""

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.delivery_bench import MESSAGES, PAYLOAD, CountingChannel, Stack
from bench.figures import RESULTS_DIR, emit, median
from hedwig.hub.main import tune_allocator
from hedwig.protocol import encode_message_set
from hedwig.protocol.requests import Subscribe
from hedwig.testing.deferreds import fired

FILTERS = {"none": None, "1%": "n = 7", "100%": "n >= 0"}
SELECTED = {"none": 1.0, "1%": 0.01, "100%": 1.0}
SUBSCRIBERS = 10


def message_set() -> bytes:
    return encode_message_set([b"p" * PAYLOAD] * MESSAGES, [{"n": i % 100} for i in range(MESSAGES)])


def _subscribe(stack, topic_log, channel, handle, subscriber_id, start, selector):
    request = Subscribe(
        topic_log.topic, subscriber_id, "create_or_attach", start, None, False, filter=selector
    )
    fired(stack.manager.subscribe(topic_log, channel, handle, request))


def bench_fan_out(case: str, entries: int) -> dict:
    selector = FILTERS[case]
    with tempfile.TemporaryDirectory(prefix="hedwig-bench-") as directory:
        stack = Stack(directory, "mmap")
        topic_log = stack.cache.wrap(stack.open("fan-out"))
        channels = [CountingChannel() for _ in range(SUBSCRIBERS)]
        ids = [f"s{i}" for i in range(SUBSCRIBERS)]
        for i, (sid, channel) in enumerate(zip(ids, channels, strict=True)):
            _subscribe(stack, topic_log, channel, i + 1, sid, None, selector)
        stack.clock.advance(0)
        payload = message_set()
        publish = topic_log.append
        clock = stack.clock
        consume = stack.manager.consume
        gc.collect()
        started = time.perf_counter()
        for n in range(1, entries + 1):
            publish(payload, MESSAGES)
            clock.advance(0.0002)
            if n % 10 == 0:
                for sid, channel in zip(ids, channels, strict=True):
                    if channel.last_seq:
                        consume("fan-out", sid, channel.last_seq)
        elapsed = time.perf_counter() - started
        delivered = sum(c.delivered for c in channels)
        expected = round(SUBSCRIBERS * entries * MESSAGES * SELECTED[case])
        if delivered != expected:
            raise AssertionError(f"{case}: delivered {delivered}, expected {expected}")
        stack.close()
    gone_through = SUBSCRIBERS * entries * MESSAGES
    return {
        "subscribers": SUBSCRIBERS,
        "entries_published": entries,
        "messages_delivered": delivered,
        "seconds": round(elapsed, 4),
        "topic_messages_per_s": round(gone_through / elapsed),
        "messages_per_s": round(delivered / elapsed),
    }


def bench_catch_up(case: str, backlog_messages: int) -> dict:
    selector = FILTERS[case]
    entries = backlog_messages // MESSAGES
    with tempfile.TemporaryDirectory(prefix="hedwig-bench-") as directory:
        stack = Stack(directory, "mmap")
        log = stack.open("backlog")
        payload = message_set()
        for _ in range(entries):
            fired(log.append(payload, MESSAGES))
        channel = CountingChannel()
        _subscribe(stack, stack.cache.wrap(log), channel, 1, "late", "earliest", selector)
        cursor = stack.manager._tables.get("backlog").subscriptions["late"].cursor
        last = log.last_seq
        gc.collect()
        started = time.perf_counter()
        while cursor.next_seq <= last:
            stack.clock.advance(0)
        elapsed = time.perf_counter() - started
        expected = round(entries * MESSAGES * SELECTED[case])
        if channel.delivered != expected:
            raise AssertionError(f"{case}: delivered {channel.delivered}, expected {expected}")
        stack.close()
    return {
        "backlog_messages": entries * MESSAGES,
        "messages_delivered": channel.delivered,
        "seconds": round(elapsed, 4),
        "topic_messages_per_s": round(entries * MESSAGES / elapsed),
        "messages_per_s": round(channel.delivered / elapsed),
    }


def summarise(runs: list) -> dict:
    middle = dict(median(runs, key=lambda r: r["topic_messages_per_s"]))
    middle["runs_topic_messages_per_s"] = [r["topic_messages_per_s"] for r in runs]
    return middle


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs (a smoke test; not saved)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (the median is reported)")
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/filter_bench.json")
    args = parser.parse_args()
    allocator_tuned = tune_allocator()
    scale = 10 if args.quick else 1
    fan_out = {case: [] for case in FILTERS}
    catch_up = {case: [] for case in FILTERS}
    for _ in range(args.repeat):  # the cases alternate, so the machine's drift touches each alike
        for case in FILTERS:
            fan_out[case].append(bench_fan_out(case, 1000 // scale))
            catch_up[case].append(bench_catch_up(case, 1_000_000 // scale))
    fan_out = {case: summarise(runs) for case, runs in fan_out.items()}
    catch_up = {case: summarise(runs) for case, runs in catch_up.items()}
    ratios = {}
    for name, section in (("fan_out", fan_out), ("catch_up", catch_up)):
        floor = section["none"]["topic_messages_per_s"]
        for case in ("1%", "100%"):
            ratios[f"{name}_{case}_vs_no_filter"] = round(section[case]["topic_messages_per_s"] / floor, 3)
    result = {
        "benchmark": "filter_bench",
        "message_set": f"{MESSAGES} x {PAYLOAD} B, one int property each",
        "filters": FILTERS,
        "repeat": args.repeat,
        "python": sys.version.split()[0],
        "allocator": "hub thresholds" if allocator_tuned else "as found",
        "load_average": os.getloadavg(),
        "fan_out": fan_out,
        "catch_up": catch_up,
        "ratios": ratios,
    }
    emit(result, RESULTS_DIR / "filter_bench.json", save=not (args.quick or args.no_save))


if __name__ == "__main__":
    main()
