"""Publish latency while a hub compacts a topic of 1M messages, beside the same without a
compaction, in one run (a real hub process, blocking clients).

    .venv/bin/python bench/compaction_bench.py [--messages 1000000] [--keys 10000,250000]

The hub's compacted topic gets `--messages` keyed messages (sets of `--set-size`, so its
ledgers roll every `--ledger-entries` entries), then a publisher sends one message per
request to another topic of the hub and times each: first for as long as the compaction will
take (the baseline, measured just before), then while COMPACT runs (from another
connection), then once more without. Prints JSON (bench/results/compaction_bench.json):
the p50/p99/max latencies of each phase, p99 during over p99 without (both baselines),
the compaction's wall time, messages read and entries written, and the machine's load;
one such report per number of keys (10k: 1% of the messages stay, rewritten; 250k: 25%,
whole entries copied), each on a hub of its own.

    .venv/bin/python bench/compaction_bench.py --flood 1000000 [--flood-set 500000]

A key flood instead (issue 41): `--flood` distinct 3-byte keys, sets of `--flood-set`
messages (each one stored entry), then COMPACT while another client publishes: the hub's
resident memory sampled during the compaction (its growth over the resident size just
before), the other client's publish p50/p99/max during it and without it, and the
compaction's passes and wall time. Its "figures" are what bench/before_after.py compares:

    .venv/bin/python bench/before_after.py --before DIR --after . --rounds 1 \
        --out compaction_flood_before_after -- bench/compaction_bench.py --flood 1000000
"""

import argparse
import tempfile
import threading
import time
from pathlib import Path

from bench.figures import RESULTS_DIR, emit, latency_summary, load
from hedwig.client import Client
from hedwig.protocol.messageset import encode_message_set
from hedwig.testing.hubprocess import HubProcess

TOPIC = "bench-table"
TAIL = "bench-tail"  # the timed publishes' (a topic of its own: the compacted span stays --messages)


def fill(client, messages: int, keys: int, set_size: int, payload: bytes) -> None:
    sent = 0
    while sent < messages:
        n = min(set_size, messages - sent)
        names = [f"key-{(sent + i) % keys}".encode() for i in range(n)]
        client.publish_set(TOPIC, encode_message_set([payload] * n, None, names))
        sent += n


def publish_for(client, seconds: float, payload: bytes, until=None) -> list:
    """Latencies (ns) of one-message publishes (to TAIL) for `seconds`, or until `until` is set."""
    samples = []
    one = encode_message_set([payload], None, [b"tail-key"])
    deadline = time.monotonic() + seconds
    while (until is None and time.monotonic() < deadline) or (until is not None and not until.is_set()):
        started = time.perf_counter_ns()
        client.publish_set(TAIL, one)
        samples.append(time.perf_counter_ns() - started)
    return samples


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--keys", default="10000,250000", help="numbers of keys, one run each")
    parser.add_argument("--set-size", type=int, default=100)
    parser.add_argument("--payload-bytes", type=int, default=100)
    parser.add_argument("--ledger-entries", type=int, default=1000)  # 1M in sets of 100: 10 ledgers
    parser.add_argument("--flood", type=int, default=0, help="a key flood of this many distinct keys")
    parser.add_argument("--flood-set", type=int, default=500_000, help="messages per set of the flood")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    if args.flood:
        emit(flood_run(args), RESULTS_DIR / "compaction_flood_bench.json", save=not args.no_save)
        return 0
    runs = [run(args, int(keys)) for keys in args.keys.split(",")]
    figures = {}  # (what bench/before_after.py compares)
    for summary in runs:
        name = f"keys_{summary['keys']}"
        figures[f"{name}_compaction_wall_s"] = {"value": summary["compaction"]["wall_s"]}
        figures[f"{name}_publish_latency_during"] = summary["publish_during_compaction"]
        figures[f"{name}_publish_latency_without"] = summary["publish_without_compaction"]
        figures[f"{name}_p99_during_over_without"] = {"value": summary["p99_during_over_without"]}
    emit({"runs": runs, "figures": figures}, RESULTS_DIR / "compaction_bench.json", save=not args.no_save)
    return 0


def compact_into(admin, report: dict, done: threading.Event) -> None:
    """COMPACT the table: its reply and wall time into `report`, then `done` set."""
    began = time.monotonic()
    report.update(admin.compact(TOPIC))
    report["wall_s"] = round(time.monotonic() - began, 3)
    done.set()


def run(args, keys: int) -> dict:
    """One hub, `keys` keys: the report of its phases."""
    payload = b"v" * args.payload_bytes
    with tempfile.TemporaryDirectory() as directory:
        conf = Path(directory) / "hub.conf"
        conf.write_text(f"[log]\nmax_ledger_entries = {args.ledger_entries}\ncompaction_interval_s = 0\n")
        with (
            HubProcess(Path(directory) / "data", 0, "--conf", str(conf)) as hub,
            Client(hub.address) as filler,
            Client(hub.address) as publisher,
            Client(hub.address, timeout=600) as admin,
        ):
            filler.create_topic(TOPIC, compaction=True)
            started = time.monotonic()
            fill(filler, args.messages, keys, args.set_size, payload)
            fill_s = time.monotonic() - started
            filler.publish_set(TOPIC, encode_message_set([payload], None, [b"roll"]))  # (the last set sealed)
            ledgers_before = len(admin.describe(TOPIC)["ledgers"])
            publish_for(publisher, 2.0, payload)  # (warm: connection, caches)
            done = threading.Event()
            report = {}
            baseline_before = publish_for(publisher, 10.0, payload)
            load_before = load()
            thread = threading.Thread(target=compact_into, args=(admin, report, done))
            thread.start()
            during = publish_for(publisher, 0, payload, until=done)
            thread.join()
            load_during = load()
            baseline_after = publish_for(publisher, max(report["wall_s"], 5.0), payload)
            ledgers_after = len(admin.describe(TOPIC)["ledgers"])
    without = baseline_before + baseline_after
    summary = {
        "messages": args.messages,
        "keys": keys,
        "set_size": args.set_size,
        "fill_s": round(fill_s, 1),
        "ledgers_before": ledgers_before,
        "ledgers_after": ledgers_after,
        "compaction": {k: report[k] for k in ("wall_s", "messages", "entries", "span")},
        "publish_without_compaction": {"count": len(without), **latency_summary(without)},
        "publish_before": {"count": len(baseline_before), **latency_summary(baseline_before)},
        "publish_during_compaction": {"count": len(during), **latency_summary(during)},
        "publish_after": {"count": len(baseline_after), **latency_summary(baseline_after)},
        "load_before": load_before,
        "load_during": load_during,
    }
    without_p99 = summary["publish_without_compaction"]["p99_us"]
    during_p99 = summary["publish_during_compaction"]["p99_us"]
    # (None: the compaction ended before a publish did: too small a topic to measure)
    summary["p99_during_over_without"] = None if during_p99 is None else round(during_p99 / without_p99, 2)
    return summary


def resident_kib(pid: int) -> int:
    """The process's resident memory now (VmRSS, KiB)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def flood_run(args) -> dict:
    """One hub: a flood of distinct 3-byte keys, then COMPACT while another client
    publishes, the hub's memory sampled meanwhile."""
    payload = b"v" * 8
    with tempfile.TemporaryDirectory() as directory:
        conf = Path(directory) / "hub.conf"
        conf.write_text("[log]\nmax_ledger_entries = 2\ncompaction_interval_s = 0\n")
        with (
            HubProcess(Path(directory) / "data", 0, "--conf", str(conf)) as hub,
            Client(hub.address, timeout=120) as filler,
            Client(hub.address) as publisher,
            Client(hub.address, timeout=1200) as admin,
        ):
            filler.create_topic(TOPIC, compaction=True)
            started = time.monotonic()
            for start in range(0, args.flood, args.flood_set):
                names = [i.to_bytes(3, "big") for i in range(start, min(args.flood, start + args.flood_set))]
                filler.publish_set(TOPIC, encode_message_set([b"f"] * len(names), None, names))
            filler.publish_set(TOPIC, encode_message_set([payload], None, [b"roll"]))  # (the flood sealed)
            fill_s = time.monotonic() - started
            publish_for(publisher, 2.0, payload)  # (warm: connection, caches)
            baseline_before = publish_for(publisher, 5.0, payload)
            pid = hub.process.pid
            resident_before = resident_kib(pid)
            peak = [resident_before]
            done = threading.Event()
            report = {}

            def sample():
                while not done.wait(0.05):
                    peak[0] = max(peak[0], resident_kib(pid))

            threads = [
                threading.Thread(target=compact_into, args=(admin, report, done)),
                threading.Thread(target=sample),
            ]
            for thread in threads:
                thread.start()
            during = publish_for(publisher, 0, payload, until=done)
            for thread in threads:
                thread.join()
            baseline_after = publish_for(publisher, 5.0, payload)
    without = latency_summary(baseline_before + baseline_after)
    while_compacting = latency_summary(during)
    growth_mb = round((peak[0] - resident_before) / 1024, 1)
    ratio = (
        None
        if while_compacting["p99_us"] is None
        else round(while_compacting["p99_us"] / without["p99_us"], 2)
    )
    return {
        "benchmark": "compaction_flood",
        "keys": args.flood,
        "set_size": args.flood_set,
        "fill_s": round(fill_s, 1),
        "compaction": {k: report.get(k) for k in ("wall_s", "span", "messages", "kept", "entries", "passes")},
        "resident_mb_before": round(resident_before / 1024, 1),
        "figures": {
            "resident_growth_mb": {"value": growth_mb},
            "compaction_wall_s": {"value": report["wall_s"]},
            "publish_latency_without": without,
            "publish_latency_during": {"count": len(during), **while_compacting},
            "publish_max_stall_ms": {
                "value": None if not during else round(while_compacting["max_us"] / 1000, 1)
            },
            "p99_during_over_without": {"value": ratio},
        },
        "load": load(),
    }


if __name__ == "__main__":
    raise SystemExit(main())
