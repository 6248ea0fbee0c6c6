"""Topic log benchmark: what the log adds on top of the ledger store, and metadata writes.

    .venv/bin/python bench/log_bench.py [--quick] [--dir DIR] [--no-save]

Cases:
- append: entries of one 100-byte message, and message sets of 1000 x 100 bytes
  (~100 KB entries), through TopicLog.append, on the mmap store (fsync "never", default
  1 GiB ledgers, so the 2 GB case rolls) and on the in-memory store (the log's own cost;
  its reads hand back the stored bytes objects without copying, so its read GB/s only
  says the log's per-entry cost is small);
- sequential read of everything back through TopicLog.read (1000 entries / 4 MiB a call);
- group commit: fsync "always", 8 publishers each keeping 16 appends in flight;
- after a restart: random single-entry reads from closed ledgers (entry found by probe
  search, no index in memory) and find_by_time;
- metadata: SQLite compare-and-set writes: topic ranges (FULL, their default) and a
  subscription's consumed seq-id (NORMAL, their default; and FULL for comparison).

Runs on the real reactor and its thread pool. Prints JSON and writes it to
bench/results/log_bench.json, with the machine's load average before and after.
"""

import argparse
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from twisted.internet import defer, reactor, task

from bench.figures import RESULTS_DIR, emit, load
from hedwig.config.settings import LogSettings
from hedwig.ledger.memory_store import MemoryLedgerStore
from hedwig.ledger.mmap_store import MmapLedgerStore
from hedwig.meta import NEW, LedgerRange, SqliteMetadataStore, SubscriptionState
from hedwig.protocol import encode_message_set
from hedwig.topiclog.manager import TopicLogManager

RESULTS = RESULTS_DIR / "log_bench.json"
YIELD_EVERY_BYTES = 8 << 20


def pause():
    return task.deferLater(reactor, 0, lambda: None)


def open_stack(directory, backend, fsync="never", settings=None):
    metadata = SqliteMetadataStore(os.path.join(directory, "meta.db"))
    if backend == "memory":
        ledgers = MemoryLedgerStore()
    else:
        ledgers = MmapLedgerStore(os.path.join(directory, "ledgers"), reactor=reactor, fsync=fsync)
    manager = TopicLogManager(ledgers, metadata, settings or LogSettings(), "bench", reactor)
    return metadata, ledgers, manager


@defer.inlineCallbacks
def close_stack(metadata, ledgers, manager):
    yield manager.close()
    yield ledgers.close()
    yield metadata.close()


@defer.inlineCallbacks
def append_and_read(directory, backend, count, messages, message_bytes):
    metadata, ledgers, manager = open_stack(directory, backend)
    topic_log = yield manager.open("t")
    body = encode_message_set([os.urandom(message_bytes)] * messages)
    per_turn = max(1, YIELD_EVERY_BYTES // len(body))
    append = topic_log.append
    started = time.perf_counter()
    for first in range(0, count, per_turn):
        for _ in range(min(per_turn, count - first)):
            last = append(body, messages)
        yield pause()
    yield last  # acknowledgements come in order: the last one means all (rolls included)
    append_s = time.perf_counter() - started
    assert topic_log.last_seq == count * messages, topic_log.last_seq
    entry_bytes = sum(ledgers.ledger_bytes(r.ledger_id) for r in topic_log.ranges) / count

    started = time.perf_counter()
    seq = 1
    entries = 0
    total = 0
    read = topic_log.read
    while seq <= topic_log.last_seq:
        got = []
        read(seq, 1000, 4 << 20).addCallback(got.extend)
        entries += len(got)
        total += sum(e.size for e in got)
        seq = got[-1].last_seq + 1
    read_s = time.perf_counter() - started
    assert entries == count
    yield close_stack(metadata, ledgers, manager)
    return {
        "backend": backend,
        "entries": count,
        "messages_per_entry": messages,
        "entry_bytes": round(entry_bytes),
        "append_entries_per_s": round(count / append_s),
        "append_messages_per_s": round(count * messages / append_s),
        "append_gb_per_s": round(total / append_s / 1e9, 3),
        "append_us_per_entry": round(append_s / count * 1e6, 2),
        "read_entries_per_s": round(entries / read_s),
        "read_gb_per_s": round(total / read_s / 1e9, 3),
    }


@defer.inlineCallbacks
def group_commit(directory, seconds, publishers=8, in_flight=16):
    metadata, ledgers, manager = open_stack(directory, "mmap", fsync="always")
    topic_log = yield manager.open("t")
    body = encode_message_set([os.urandom(100)])
    done = defer.Deferred()
    state = {"acked": 0, "stop": time.perf_counter() + seconds, "open": publishers * in_flight}

    def publish(_=None):
        if time.perf_counter() >= state["stop"]:
            state["open"] -= 1
            if not state["open"]:
                done.callback(None)
            return
        topic_log.append(body, 1).addCallback(acked)

    def acked(_entry):
        state["acked"] += 1
        publish()

    started = time.perf_counter()
    for _ in range(publishers * in_flight):
        publish()
    yield done
    elapsed = time.perf_counter() - started
    single = yield one_fsync_per_append(topic_log, body, max(1.0, seconds / 3))
    yield close_stack(metadata, ledgers, manager)
    return {
        "publishers": publishers,
        "in_flight_each": in_flight,
        "appends_per_s": round(state["acked"] / elapsed),
        "one_at_a_time_appends_per_s": round(single),
        "ratio": round(state["acked"] / elapsed / single, 1),
    }


@defer.inlineCallbacks
def one_fsync_per_append(topic_log, body, seconds):
    n = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        yield topic_log.append(body, 1)
        n += 1
    return n / (time.perf_counter() - started)


@defer.inlineCallbacks
def closed_ledger_lookups(directory, count, lookups):
    """Many 100-byte entries over closed ledgers; after a restart, random reads and
    find_by_time against ledgers whose entry index is not in memory."""
    settings = LogSettings(max_ledger_entries=count // 4)
    metadata, ledgers, manager = open_stack(directory, "mmap", settings=settings)
    topic_log = yield manager.open("t")
    body = encode_message_set([os.urandom(100)] * 3)
    for first in range(0, count, 50_000):
        for _ in range(min(50_000, count - first)):
            appended = topic_log.append(body, 3)
        yield pause()
    yield appended
    last = topic_log.last_seq
    yield close_stack(metadata, ledgers, manager)

    metadata, ledgers, manager = open_stack(directory, "mmap", settings=settings)
    topic_log = yield manager.open("t")
    rng = random.Random(1)
    seqs = [rng.randint(1, last) for _ in range(lookups)]
    started = time.perf_counter()
    for seq in seqs:
        got = []
        topic_log.read(seq, 1, 1 << 20).addCallback(got.extend)
        assert got[0].first_seq <= seq <= got[0].last_seq
    read_s = time.perf_counter() - started
    probes = manager.locator.probes
    first_time = yield ledgers.entry_time(topic_log.ranges[0].ledger_id, 0)
    last_time = yield ledgers.entry_time(
        topic_log.ranges[-2].ledger_id, ledgers.last_entry_id(topic_log.ranges[-2].ledger_id)
    )
    times = [rng.randint(first_time, last_time) for _ in range(lookups)]
    started = time.perf_counter()
    for t in times:
        topic_log.find_by_time(t)
    find_s = time.perf_counter() - started
    yield close_stack(metadata, ledgers, manager)
    return {
        "entries": count,
        "ledgers": 4,
        "random_read_us": round(read_s / lookups * 1e6, 1),
        "probes_per_read": round(probes / lookups, 1),
        "find_by_time_us": round(find_s / lookups * 1e6, 1),
    }


def metadata_writes(directory, record, synchronous, count):
    """Compare-and-set writes of one record, each its own committed transaction."""
    store = SqliteMetadataStore(
        os.path.join(directory, f"meta-{record}-{synchronous}.db"),
        synchronous=synchronous,
        subscription_synchronous=synchronous,
    )
    version = NEW
    started = time.perf_counter()
    for i in range(count):
        outcome = []
        if record == "topic":
            ranges = [LedgerRange(1, 1, 100), LedgerRange(2, 101, 100 + i), LedgerRange(3, 101 + i, None)]
            d = store.put_topic("t", ranges if i else [LedgerRange(3, 1, None)], version)
        else:
            d = store.put_subscription("t", "s", SubscriptionState(i, {"window": 10}), version)
        d.addCallback(outcome.append)
        version = outcome[0]
    elapsed = time.perf_counter() - started
    store.close()
    return {
        "record": record,
        "synchronous": synchronous,
        "cas_writes_per_s": round(count / elapsed),
        "us_per_write": round(elapsed / count * 1e6, 1),
    }


@defer.inlineCallbacks
def main(_reactor, args):
    base = args.dir or tempfile.mkdtemp(prefix="hedwig-log-bench-")
    quick = args.quick
    results = {"load_before": load(), "cases": {}}

    def fresh(name):
        path = os.path.join(base, name)
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        return path

    try:
        small = 100_000 if quick else 1_000_000
        large = 2_000 if quick else 20_000
        for backend in ("mmap", "memory"):
            results["cases"][f"append_read_100B_{backend}"] = yield append_and_read(
                fresh("a"), backend, small, 1, 100
            )
            results["cases"][f"append_read_100KB_{backend}"] = yield append_and_read(
                fresh("b"), backend, large, 1000, 100
            )
        results["cases"]["group_commit_always"] = yield group_commit(fresh("c"), 2.0 if quick else 5.0)
        results["cases"]["closed_ledger_lookups"] = yield closed_ledger_lookups(
            fresh("d"), 100_000 if quick else 1_000_000, 2_000 if quick else 10_000
        )
        writes = 300 if quick else 2000
        for record, synchronous in (("topic", "FULL"), ("subscription", "NORMAL"), ("subscription", "FULL")):
            results["cases"][f"metadata_{record}_cas_{synchronous}"] = metadata_writes(
                fresh("e"), record, synchronous, writes
            )
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    results["load_after"] = load()
    emit(results, RESULTS, save=not (quick or args.no_save))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts, for a smoke run (not saved)")
    parser.add_argument("--dir", help="work directory (default: a temporary one, removed after)")
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/log_bench.json")
    task.react(main, [parser.parse_args()])
