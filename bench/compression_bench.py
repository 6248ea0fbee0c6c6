"""Compressed message sets on realistic log lines: bytes on disk, publish and catch-up
rates for each codec against none, in one run.

    .venv/bin/python bench/compression_bench.py [--quick] [--messages N] [--no-save]

The data are generated JSON log records (a web service's access and application log:
timestamps, levels, services, hosts, request ids, paths, statuses, latencies, user
agents, messages), the same records for every codec, never random bytes. For each of
none, gzip, lz4 and zstd: a hub process on a fresh data directory (its defaults: fsync
"never"); one blocking client publishes every record in message sets of --set-size with
that compression (publish msg/s); the ledger bytes the topic holds (DESCRIBE_TOPIC) and
the data directory's allocated bytes on disk are read; the hub is restarted, so the
cache is empty and every entry comes from the ledger, and one blocking subscriber
receives every message from the earliest, decompressing, each batch acknowledged
(catch-up msg/s). The codecs run in turn, --rounds times, and each figure is the median
of its rounds, so that the machine's load (2 shared cores) weighs on every codec alike.

Prints JSON and writes bench/results/compression_bench.json.
"""

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.figures import RESULTS_DIR, emit, load, own_cpu_seconds, process_cpu_seconds
from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess

RESULTS = RESULTS_DIR / "compression_bench.json"
CODECS = ("none", "gzip", "lz4", "zstd")
TOPIC = "logs"

_SERVICES = ("checkout", "search", "billing", "auth", "catalog", "inventory", "gateway")
_PATHS = ("/api/v1/orders", "/api/v1/orders/{id}", "/api/v1/search", "/api/v1/cart", "/login", "/health")
_AGENTS = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
    "okhttp/4.12.0",
    "python-requests/2.31.0",
)
_MESSAGES = (
    "request completed",
    "cache miss, loading from database",
    "payment authorised",
    "retrying upstream call after timeout",
    "user session refreshed",
    "rate limit exceeded for client",
)


def log_records(count: int, seed: int = 18) -> list[bytes]:
    """`count` JSON log lines of a few services, deterministic for a seed."""
    rng = random.Random(seed)
    started = 1_764_000_000.0
    records = []
    for n in range(count):
        status = rng.choices((200, 201, 204, 301, 400, 404, 500, 503), (70, 5, 5, 2, 6, 7, 3, 2))[0]
        level = "error" if status >= 500 else "warn" if status >= 400 else "info"
        path = rng.choice(_PATHS).replace("{id}", str(rng.randrange(10_000, 99_999)))
        record = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(started + n * 0.004)) + f".{n % 1000:03d}Z",
            "level": level,
            "service": rng.choice(_SERVICES),
            "host": f"web-{rng.randrange(1, 25):02d}.eu-west-1.internal",
            "request_id": f"{rng.getrandbits(64):016x}",
            "method": rng.choice(("GET", "GET", "GET", "POST", "PUT", "DELETE")),
            "path": path,
            "status": status,
            "latency_ms": round(rng.lognormvariate(3, 0.8), 2),
            "bytes": rng.randrange(120, 48_000),
            "user_agent": rng.choice(_AGENTS),
            "msg": rng.choice(_MESSAGES),
        }
        records.append(json.dumps(record, separators=(",", ":")).encode())
    return records


def allocated_bytes(directory) -> int:
    """Bytes the files under `directory` occupy on disk (allocated blocks)."""
    total = 0
    for root, _dirs, files in os.walk(directory):
        for name in files:
            total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def run_codec(codec: str, records: list[bytes], set_size: int) -> dict:
    """One codec's figures, on a hub of its own."""
    directory = tempfile.mkdtemp(prefix=f"hedwig-compression-{codec}-")
    hub = HubProcess(os.path.join(directory, "data"))
    try:
        hub.start()
        empty = allocated_bytes(directory)
        compression = None if codec == "none" else codec
        with Client(hub.address, compression=compression) as client:
            cpu = own_cpu_seconds()
            hub_cpu = process_cpu_seconds(hub.process.pid)
            started = time.perf_counter()
            for at in range(0, len(records), set_size):
                client.publish_many(TOPIC, records[at : at + set_size])
            publish_s = time.perf_counter() - started
            publish_client_cpu = own_cpu_seconds() - cpu
            publish_hub_cpu = process_cpu_seconds(hub.process.pid) - hub_cpu
            ledger_bytes = sum(ledger["bytes"] for ledger in client.describe(TOPIC)["ledgers"])
        hub.stop(timeout=120)  # the restart empties the cache: catch-up reads the ledger
        disk_bytes = allocated_bytes(directory) - empty
        hub.start()
        received = 0
        with Client(hub.address) as client:
            subscription = client.subscribe(TOPIC, "catchup", start="earliest")
            cpu = own_cpu_seconds()
            started = time.perf_counter()
            while received < len(records):
                batch = subscription.receive_batch(timeout=60)
                if not batch:
                    raise RuntimeError(f"{codec}: catch-up stopped at {received} of {len(records)}")
                if (
                    batch[0].payload != records[received]
                    or batch[-1].payload != records[received + len(batch) - 1]
                ):
                    raise AssertionError(f"{codec}: message {received} is not what was published")
                received += len(batch)
                subscription.ack(batch[-1])
            catchup_s = time.perf_counter() - started
            catchup_client_cpu = own_cpu_seconds() - cpu
        return {
            "ledger_bytes": ledger_bytes,
            "disk_bytes": disk_bytes,
            "publish_msg_per_s": len(records) / publish_s,
            "publish_client_cpu_s": publish_client_cpu,
            "publish_hub_cpu_s": publish_hub_cpu,
            "catchup_msg_per_s": received / catchup_s,
            "catchup_client_cpu_s": catchup_client_cpu,
        }
    finally:
        hub.stop()
        shutil.rmtree(directory, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20,000 messages, one round (not saved)")
    parser.add_argument(
        "--messages", type=int, default=300_000, help="log records per codec (default 300,000)"
    )
    parser.add_argument("--set-size", type=int, default=1000, help="messages per publish (default 1000)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of every codec, in turn (default 3)")
    parser.add_argument(
        "--no-save", action="store_true", help="do not write bench/results/compression_bench.json"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.messages, args.rounds, args.no_save = 20_000, 1, True
    records = log_records(args.messages)
    plain_bytes = sum(map(len, records))
    load_before = load()
    rounds = {codec: [] for codec in CODECS}
    for _ in range(args.rounds):
        for codec in CODECS:
            rounds[codec].append(run_codec(codec, records, args.set_size))
    figures = {}
    for codec in CODECS:
        runs = rounds[codec]
        figures[codec] = {
            key: round(statistics.median(run[key] for run in runs), 2 if key.endswith("cpu_s") else 0)
            for key in runs[0]
        }
    none = figures["none"]
    for codec in CODECS:
        entry = figures[codec]
        entry["disk_ratio_vs_none"] = round(none["disk_bytes"] / entry["disk_bytes"], 2)
        entry["ledger_ratio_vs_none"] = round(none["ledger_bytes"] / entry["ledger_bytes"], 2)
        entry["publish_vs_none"] = round(entry["publish_msg_per_s"] / none["publish_msg_per_s"], 2)
        entry["catchup_vs_none"] = round(entry["catchup_msg_per_s"] / none["catchup_msg_per_s"], 2)
    report = {
        "benchmark": "compression_bench",
        "command": "python bench/compression_bench.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "data": "generated JSON log records (access and application log fields), the same for every codec",
        "messages": args.messages,
        "mean_record_bytes": round(plain_bytes / args.messages, 1),
        "plain_payload_bytes": plain_bytes,
        "set_size": args.set_size,
        "rounds": args.rounds,
        "figure": "median of the rounds; codecs run in turn within each round",
        "load_before": load_before,
        "load_after": load(),
        "codecs": figures,
    }
    emit(report, RESULTS, save=not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
