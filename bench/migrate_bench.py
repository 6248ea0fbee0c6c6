"""`hedwig migrate`: a stopped hub's page-file ledgers copied into a RADOS pool (each
ledger written, closed, read back and compared), against raw librados doing the same
work in the same run: appending the same entries to objects with 64 appends in flight,
then reading every object back. One throw-away cluster (hedwig.testing.ceph: 1 monitor,
3 bluestore OSDs, pool size 3 / min_size 2).

    .venv/bin/python bench/migrate_bench.py [--quick] [--no-save]

- migrate: 4,000,000 messages of 100 B (sets of 100: 40,000 entries of about 10 KB)
  published to 4 topics through an embedded hub on mmap ledgers, the hub stopped, then
  `hedwig migrate` timed from start to exit (the process's start-up included), MB/s
  of entries moved; peer: raw aio_appends of as many batches of the entries' mean size
  into as many objects as there were ledgers, 64 in flight, then a read of every object
  back, MB/s; and the same with the entries joined 256 at a time into one append (what
  the migration's writes carry, group-committed). Floor: >= 0.5x of the latter.

Prints JSON and writes bench/results/migrate_bench.json.
"""

import argparse
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.client_processes import PAYLOAD, publish_many_worker, run_processes
from bench.figures import RESULTS_DIR, emit, load, report_start
from hedwig.testing.ceph import CephCluster
from hedwig.testing.hubprocess import HubProcess, hub_environment

RESULTS = RESULTS_DIR / "migrate_bench.json"
IN_FLIGHT = 64
SET_SIZE = 100
TOPICS = 4
FLOOR = 0.5
CHUNK = 256  # entries the migration reads and appends at a time (hedwig.ledger.migration)


def raw_copy(cluster, batches: int, batch_bytes: int, objects: int) -> dict:
    """`batches` appends of `batch_bytes` spread over `objects` objects (one after
    another, as ledgers are copied), IN_FLIGHT in flight, then each object read back."""
    batch = (PAYLOAD * (batch_bytes // len(PAYLOAD) + 1))[:batch_bytes]
    with cluster.admin().open_ioctx(cluster.pool) as ioctx:
        ioctx.set_namespace("raw-copy")
        names = [f"raw-{i}" for i in range(objects)]
        started = time.perf_counter()
        for name in names:
            in_flight = []
            for _ in range(batches // objects):
                if len(in_flight) >= IN_FLIGHT:
                    in_flight.pop(0).wait_for_complete()
                in_flight.append(ioctx.aio_append(name, batch))
            for completion in in_flight:
                completion.wait_for_complete()
            size = ioctx.stat(name)[0]
            offset = 0
            while offset < size:
                offset += len(ioctx.read(name, 4 << 20, offset))
        seconds = time.perf_counter() - started
        moved = sum(ioctx.stat(name)[0] for name in names)
        for name in names:
            ioctx.remove_object(name)
    return {"mb_per_s": moved / seconds / 1e6, "seconds": round(seconds, 2), "bytes": moved}


def hub_data(ctx, directory: str, batches: int) -> str:
    """An embedded hub's data directory holding `batches` sets over TOPICS topics."""
    data = os.path.join(directory, "data")
    with HubProcess(data) as hub:
        run_processes(
            ctx,
            hubs=[hub],
            targets=[
                (publish_many_worker, (hub.address, f"topic-{t}", batches // TOPICS, SET_SIZE))
                for t in range(TOPICS)
            ],
        )
    return data


def migrate(cluster, directory: str, data: str) -> dict:
    conf = os.path.join(directory, "rados.conf")
    cluster.hub_conf(conf, "migrated", max_in_flight=IN_FLIGHT)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "hedwig", "migrate", "--conf", conf, "--data-dir", data],
        capture_output=True,
        text=True,
        env=hub_environment(),
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"hedwig migrate failed: {done.stderr}")
    summary = re.search(r"(\d+) ledger\(s\), (\d+) entries, (\d+) bytes", done.stderr)
    ledgers, entries, moved = (int(n) for n in summary.groups())
    return {
        "mb_per_s": moved / seconds / 1e6,
        "seconds": round(seconds, 2),
        "bytes": moved,
        "entries": entries,
        "ledgers": ledgers,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, to check it runs (not saved)")
    parser.add_argument("--no-save", action="store_true", help=f"do not write {RESULTS}")
    args = parser.parse_args(argv)
    batches = 400 if args.quick else 40_000
    ctx = multiprocessing.get_context("spawn")
    report = report_start("migrate_bench", argv, batches=batches, set_size=SET_SIZE, in_flight=IN_FLIGHT)
    directory = tempfile.mkdtemp(prefix="hedwig-migrate-bench-")
    cluster = CephCluster(os.path.join(directory, "ceph"))
    try:
        cluster.start()
        data = hub_data(ctx, directory, batches)
        migrated = migrate(cluster, directory, data)
        entry_bytes = migrated["bytes"] // migrated["entries"]  # (the same entries, in as many objects)
        raw = raw_copy(cluster, migrated["entries"], entry_bytes, migrated["ledgers"])
        chunks = -(-migrated["entries"] // CHUNK)
        grouped = raw_copy(cluster, chunks, entry_bytes * CHUNK, migrated["ledgers"])
    finally:
        cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)
    ratio = migrated["mb_per_s"] / grouped["mb_per_s"]
    report["figures"] = {
        "migrate": {
            "ratio": round(ratio, 3),
            "target": f">= {FLOOR} of raw appends of {CHUNK} entries at a time",
            "meets": ratio >= FLOOR,
            "ratio_to_appends_per_entry": round(migrated["mb_per_s"] / raw["mb_per_s"], 3),
            "migrate": {**migrated, "mb_per_s": round(migrated["mb_per_s"], 1)},
            "raw_grouped": {**grouped, "mb_per_s": round(grouped["mb_per_s"], 1)},
            "raw_per_entry": {**raw, "mb_per_s": round(raw["mb_per_s"], 1)},
            "load": load(),
        }
    }
    report["load_after"] = load()
    emit(report, RESULTS, save=not (args.quick or args.no_save))
    return 0 if ratio >= FLOOR else 1


if __name__ == "__main__":
    sys.exit(main())
