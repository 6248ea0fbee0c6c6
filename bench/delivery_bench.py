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
(the hub's channel would add a header and a writeSequence per delivery).

Usage: python bench/delivery_bench.py [--store mmap|memory] [--quick] [--profile]
Prints JSON and writes bench/results/delivery.json.
"""

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

from twisted.internet.task import Clock
from zope.interface import implementer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hedwig.cache import ReadAheadCache
from hedwig.config import CacheSettings, DeliverySettings, LogSettings
from hedwig.delivery import DeliveryManager, IDeliveryChannel
from hedwig.ledger.memory_store import MemoryLedgerStore
from hedwig.log import TopicLogManager
from hedwig.meta.sqlite_store import SqliteMetadataStore
from hedwig.protocol import encode_message_set

MESSAGES = 1000
PAYLOAD = 100
RESULTS = Path(__file__).resolve().parent / "results"


class InlineThreadsClock(Clock):
    """The mmap store's thread work (page preparation, syncs) runs inline."""

    def callInThread(self, f, *args, **kwargs):
        f(*args, **kwargs)

    def callFromThread(self, f, *args, **kwargs):
        f(*args, **kwargs)


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
    def __init__(self, directory, store_kind):
        self.clock = InlineThreadsClock()
        self.clock.advance(1_700_000_000)
        self.metadata = SqliteMetadataStore(os.path.join(directory, "meta.db"), synchronous="NORMAL")
        if store_kind == "mmap":
            from hedwig.ledger.mmap_store import MmapLedgerStore

            self.ledgers = MmapLedgerStore(os.path.join(directory, "ledgers"), reactor=self.clock)
        else:
            self.ledgers = MemoryLedgerStore()
        self.logs = TopicLogManager(self.ledgers, self.metadata, LogSettings(), "standalone", self.clock)
        self.cache = ReadAheadCache(self.clock, CacheSettings())
        self.manager = DeliveryManager(self.cache, self.metadata, self.clock, DeliverySettings())

    def open(self, topic):
        return fired(self.logs.open(topic))

    def close(self):
        fired(self.manager.stop())
        fired(self.logs.close())
        fired(self.ledgers.close())
        fired(self.metadata.close())


def fired(d):
    out = []
    d.addBoth(out.append)
    if not out:
        raise RuntimeError("a Deferred did not fire synchronously")
    if hasattr(out[0], "raiseException"):
        out[0].raiseException()
    return out[0]


def message_set():
    return encode_message_set([b"p" * PAYLOAD] * MESSAGES)


def bench_push(store_kind, subscribers, entries, consume_every, profile=None):
    with tempfile.TemporaryDirectory(prefix="hedwig-bench-") as directory:
        stack = Stack(directory, store_kind)
        log = stack.open("push")
        channels = [CountingChannel() for _ in range(subscribers)]
        for i, channel in enumerate(channels):
            fired(stack.manager.subscribe(log, f"s{i}", channel, i + 1))
        stack.clock.advance(0)  # cursors start on the next turn
        payload = message_set()
        publish = stack.cache.publish
        consume = stack.manager.consume
        ids = [f"s{i}" for i in range(subscribers)]
        gc.collect()
        if profile:
            profile.enable()
        started = time.perf_counter()
        for n in range(1, entries + 1):
            publish(log, payload, MESSAGES)
            if n % consume_every == 0:
                for sid, channel in zip(ids, channels, strict=True):
                    consume("push", sid, channel.last_seq)
        elapsed = time.perf_counter() - started
        if profile:
            profile.disable()
        delivered = sum(c.delivered for c in channels)
        expected = subscribers * entries * MESSAGES
        if delivered != expected:
            raise AssertionError(f"delivered {delivered}, expected {expected}")
        cache_stats = stack.cache.stats()
        stack.close()
    return {
        "subscribers": subscribers,
        "entries_published": entries,
        "messages_delivered": delivered,
        "seconds": round(elapsed, 4),
        "messages_per_s": round(delivered / elapsed),
        "deliveries_per_s": round(subscribers * entries / elapsed),
        "publishes_per_s": round(entries / elapsed),
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
        fired(stack.manager.subscribe(log, "late", channel, 1, start="earliest"))
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


def top(profile, limit=15):
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(limit)
    return [line for line in out.getvalue().splitlines() if line.strip()][-limit - 1 :]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["mmap", "memory"], default="mmap")
    parser.add_argument("--quick", action="store_true", help="smaller runs (a smoke test)")
    parser.add_argument("--consume-every", type=int, default=10, help="entries between consumes")
    parser.add_argument("--profile", action="store_true", help="add the top functions by own time")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    push = []
    profiles = {}
    for k, entries in ((1, 4000), (10, 4000), (100, 1000)):
        profile = cProfile.Profile() if args.profile and k == 10 else None
        push.append(bench_push(args.store, k, entries // scale, args.consume_every, profile))
        if profile:
            profiles["push_k10"] = top(profile)
    profile = cProfile.Profile() if args.profile else None
    catch_up = bench_catch_up(args.store, 10_000_000 // scale, profile)
    if profile:
        profiles["catch_up"] = top(profile)
    k10 = next(r for r in push if r["subscribers"] == 10)
    result = {
        "benchmark": "delivery",
        "store": args.store,
        "message_set": f"{MESSAGES} x {PAYLOAD} B",
        "consume_every_entries": args.consume_every,
        "python": sys.version.split()[0],
        "load_average": os.getloadavg(),
        "push": push,
        "catch_up": catch_up,
        "targets": {
            "push_k10_messages_per_s": {"target": 5_000_000, "measured": k10["messages_per_s"]},
            "catch_up_messages_per_s": {"target": 2_000_000, "measured": catch_up["messages_per_s"]},
        },
    }
    if profiles:
        result["profiles"] = profiles
    text = json.dumps(result, indent=2)
    print(text)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        name = "delivery.json" if args.store == "mmap" else f"delivery_{args.store}.json"
        (RESULTS / name).write_text(text + "\n")


if __name__ == "__main__":
    main()
