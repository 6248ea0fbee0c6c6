"""Delivery throughput, library level (no sockets): the cache and the delivery manager over
the real topic log, a real ledger store and a real SQLite metadata store.

push:     a publisher appends message sets of 1000 x 100 B while K subscribers (K = 1, 10,
          100) are caught up; each consumes every `--consume-every` entries it receives.
          Figure: messages delivered per second, in total over the K subscribers.
catch-up: a subscriber starts at the earliest seq-id of a 10,000,000-message backlog that
          is in the ledger and not in the cache. Figure: messages delivered per second.

Targets (issue 3): push >= 5,000,000 msg/s at K = 10; catch-up >= 2,000,000 msg/s.
Time is wall-clock around the work alone (building the backlog is not timed). The reactor
is a twisted Clock whose "thread" work runs inline, so the figures are the Python cost of
the path: what a hub's reactor thread would spend. The channel counts what it is given
(the hub's channel would add a header and a writeSequence per delivery). The Clock moves
0.2 ms per publish so that pointer timers see time pass.

pointer cost: K = 10 consuming every entry with the metadata store at its default
(synchronous=FULL), with consume_write_gap_ms 0 and 100: what consume-pointer writes cost.

Allocator: the process runs with the C heap thresholds a hub sets at start
(hedwig.hub.main.tune_allocator), since these figures stand for a hub's reactor thread;
--allocator glibc leaves glibc's defaults, whose heap trimming after each cache prune
depends on the process's allocation history (fresh pages for every entry's copy or not).

Usage: python bench/delivery_bench.py [--store mmap|memory] [--allocator hub|glibc] [--quick]
       [--profile] [--no-save]
Prints JSON and writes bench/results/delivery.json.
"""

import argparse
import cProfile
import gc
import io
import os
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path

from zope.interface import implementer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import RESULTS_DIR, emit, median
from hedwig.cache import ReadAheadCache
from hedwig.config.settings import CacheSettings, DeliverySettings, LogSettings
from hedwig.delivery import DeliveryManager, IDeliveryChannel
from hedwig.hub.main import tune_allocator
from hedwig.ledger.memory_store import MemoryLedgerStore
from hedwig.meta.sqlite_store import SqliteMetadataStore
from hedwig.protocol import encode_message_set
from hedwig.protocol.requests import Subscribe
from hedwig.testing.deferreds import fired
from hedwig.testing.reactors import InlineThreadsReactor
from hedwig.topiclog import TopicLogManager

MESSAGES = 1000
PAYLOAD = 100


@implementer(IDeliveryChannel)
class CountingChannel:
    __slots__ = ("delivered", "entries", "last_seq")

    def __init__(self):
        self.delivered = 0
        self.entries = 0
        self.last_seq = 0

    def deliver(self, handle, entry, start, stop):
        self.delivered += stop - start
        self.entries += 1
        self.last_seq = entry.first_seq + stop - 1

    def subscription_ended(self, handle, event):
        pass


class Stack:
    def __init__(self, directory, store_kind, synchronous="NORMAL", write_gap_ms=0):
        self.clock = InlineThreadsReactor()  # the mmap store's thread work runs inline
        self.clock.advance(1_700_000_000)
        self.metadata = SqliteMetadataStore(os.path.join(directory, "meta.db"), synchronous=synchronous)
        if store_kind == "mmap":
            from hedwig.ledger.mmap_store import MmapLedgerStore

            self.ledgers = MmapLedgerStore(os.path.join(directory, "ledgers"), reactor=self.clock)
        else:
            self.ledgers = MemoryLedgerStore()
        self.logs = TopicLogManager(self.ledgers, self.metadata, LogSettings(), "standalone", self.clock)
        self.cache = ReadAheadCache(self.clock, CacheSettings())
        settings = DeliverySettings(consume_write_gap_ms=write_gap_ms)
        self.manager = DeliveryManager(self.metadata, self.clock, settings)

    def open(self, topic):
        return fired(self.logs.open(topic))

    def close(self):
        fired(self.manager.stop())
        fired(self.logs.close())
        fired(self.ledgers.close())
        fired(self.metadata.close())


def message_set():
    return encode_message_set([b"p" * PAYLOAD] * MESSAGES)


def bench_push(store_kind, subscribers, entries, consume_every, profile=None, **stack_options):
    with tempfile.TemporaryDirectory(prefix="hedwig-bench-") as directory:
        stack = Stack(directory, store_kind, **stack_options)
        topic_log = stack.cache.wrap(stack.open("push"))  # the cache in the log, as a hub has it
        channels = [CountingChannel() for _ in range(subscribers)]
        for i, channel in enumerate(channels):
            request = Subscribe(topic_log.topic, f"s{i}", "create_or_attach", None, None, False)
            fired(stack.manager.subscribe(topic_log, channel, i + 1, request))
        stack.clock.advance(0)  # cursors start on the next turn
        payload = message_set()
        publish = topic_log.append
        clock = stack.clock
        consume = stack.manager.consume
        ids = [f"s{i}" for i in range(subscribers)]
        gc.collect()
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        if profile:
            profile.enable()
        started = time.perf_counter()
        for n in range(1, entries + 1):
            publish(payload, MESSAGES)
            clock.advance(0.0002)  # pointer timers (consume_write_gap_ms) see time pass
            if n % consume_every == 0:
                for sid, channel in zip(ids, channels, strict=True):
                    consume("push", sid, channel.last_seq)
        elapsed = time.perf_counter() - started
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        if profile:
            profile.disable()
        delivered = sum(c.delivered for c in channels)
        expected = subscribers * entries * MESSAGES
        if delivered != expected:
            raise AssertionError(f"delivered {delivered}, expected {expected}")
        cache_stats = stack.cache.stats()
        pointer_writes = stack.manager.stats()["pointer_writes"]
        stack.close()
    return {
        "subscribers": subscribers,
        "pointer_writes": pointer_writes,
        "entries_published": entries,
        "messages_delivered": delivered,
        "seconds": round(elapsed, 4),
        "messages_per_s": round(delivered / elapsed),
        "deliveries_per_s": round(subscribers * entries / elapsed),
        "publishes_per_s": round(entries / elapsed),
        # Pages first touched while timed: fresh heap pages for entries show up here.
        "minor_page_faults": faults,
        "ledger_reads": cache_stats["range_reads"],
        "cache_bytes_at_end": cache_stats["bytes"],
    }


def bench_catch_up(store_kind, backlog_messages, profile=None):
    entries = backlog_messages // MESSAGES
    with tempfile.TemporaryDirectory(prefix="hedwig-bench-") as directory:
        stack = Stack(directory, store_kind)
        log = stack.open("backlog")
        payload = message_set()
        build = time.perf_counter()
        for _ in range(entries):  # straight into the log: the cache never sees them
            fired(log.append(payload, MESSAGES))
        build = time.perf_counter() - build
        channel = CountingChannel()
        request = Subscribe(log.topic, "late", "create_or_attach", "earliest", None, False)
        fired(stack.manager.subscribe(stack.cache.wrap(log), channel, 1, request))
        gc.collect()
        if profile:
            profile.enable()
        started = time.perf_counter()
        while channel.last_seq < log.last_seq:
            stack.clock.advance(0)  # runs every burst the cursor schedules
        elapsed = time.perf_counter() - started
        if profile:
            profile.disable()
        cache_stats = stack.cache.stats()
        stack.close()
    return {
        "backlog_messages": entries * MESSAGES,
        "backlog_bytes": entries * len(payload),
        "build_seconds": round(build, 3),
        "seconds": round(elapsed, 4),
        "messages_per_s": round(channel.delivered / elapsed),
        "entries_per_s": round(channel.entries / elapsed),
        "range_reads": cache_stats["range_reads"],
        "entries_read": cache_stats["entries_read"],
        "cache_hits": cache_stats["hits"],
        "cache_bytes_at_end": cache_stats["bytes"],
        "evicted_fifo": cache_stats["evicted_fifo"],
    }


def summarise(runs):
    """The median run (by messages/s), with every run's figure beside it."""
    middle = dict(median(runs, key=lambda r: r["messages_per_s"]))
    middle["runs_messages_per_s"] = [r["messages_per_s"] for r in runs]
    return middle


def top(profile, limit=15):
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(limit)
    return [line for line in out.getvalue().splitlines() if line.strip()][-limit - 1 :]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["mmap", "memory"], default="mmap")
    parser.add_argument("--quick", action="store_true", help="smaller runs (a smoke test; not saved)")
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/delivery*.json")
    parser.add_argument("--consume-every", type=int, default=10, help="entries between consumes")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (the median is reported)")
    parser.add_argument("--profile", action="store_true", help="add the top functions by own time")
    parser.add_argument(
        "--allocator",
        choices=["hub", "glibc"],
        default="hub",
        help="C heap thresholds: as a hub sets them (default), or glibc's defaults",
    )
    args = parser.parse_args()
    allocator_tuned = args.allocator == "hub" and tune_allocator()
    scale = 10 if args.quick else 1
    push = []
    profiles = {}
    for k, entries in ((1, 4000), (10, 4000), (100, 1000)):
        runs = [bench_push(args.store, k, entries // scale, args.consume_every) for _ in range(args.repeat)]
        push.append(summarise(runs))
        if args.profile:
            profile = cProfile.Profile()
            bench_push(args.store, k, entries // scale, args.consume_every, profile)
            profiles[f"push_k{k}"] = top(profile)
    runs = [bench_catch_up(args.store, 10_000_000 // scale) for _ in range(args.repeat)]
    catch_up = summarise(runs)
    if args.profile:
        profile = cProfile.Profile()
        bench_catch_up(args.store, 10_000_000 // scale, profile)
        profiles["catch_up"] = top(profile)
    # What consume-pointer writes cost with the metadata store's default (synchronous=FULL)
    # when every subscriber consumes every entry: K = 10, with and without a write gap.
    pointer_cost = []
    for gap_ms in (0, 100):
        run = bench_push(args.store, 10, 1000 // scale, 1, synchronous="FULL", write_gap_ms=gap_ms)
        run["consume_write_gap_ms"] = gap_ms
        pointer_cost.append(run)
    k10 = next(r for r in push if r["subscribers"] == 10)
    result = {
        "benchmark": "delivery",
        "store": args.store,
        "message_set": f"{MESSAGES} x {PAYLOAD} B",
        "consume_every_entries": args.consume_every,
        "repeat": args.repeat,
        "python": sys.version.split()[0],
        "allocator": "hub thresholds" if allocator_tuned else "as found (glibc defaults or environment)",
        "load_average": os.getloadavg(),
        "push": push,
        "catch_up": catch_up,
        "pointer_cost_sqlite_full_consume_every_entry": pointer_cost,
        "targets": {
            "push_k10_messages_per_s": {"target": 5_000_000, "measured": k10["messages_per_s"]},
            "catch_up_messages_per_s": {"target": 2_000_000, "measured": catch_up["messages_per_s"]},
        },
    }
    if profiles:
        result["profiles"] = profiles
    name = "delivery.json" if args.store == "mmap" else f"delivery_{args.store}.json"
    emit(result, RESULTS_DIR / name, save=not (args.quick or args.no_save))


if __name__ == "__main__":
    main()
