"""Topic fixed cost: a real hub's disk, descriptors, memory and creation time for many
one-message topics, and its graceful shutdown afterwards.

    .venv/bin/python bench/topics_bench.py [--topics 10000] [--tree DIR] [--label NAME]
                                           [--dir DIR] [--no-save]

A hub process serves a fresh data directory; one blocking client publishes one 100-byte
message to each of `--topics` new topics, one after another, timing each publish (a
topic's creation: acquiring it, its first ledger, its metadata record, the append).
Then the hub's open descriptors (/proc/PID/fd), resident memory (VmRSS), the disk its
data directory takes (allocated blocks) and its CPU seconds (user and system apart) are
read, and a SIGTERM measures the shutdown (its exit status and seconds).

`--tree` runs the hub of another checkout (a `git worktree add` of an earlier commit) for
before/after figures. Results go to bench/results/topics_bench.json under `--label`
(other labels already there are kept).
"""

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.figures import RESULTS_DIR, emit, load, percentile, proc_stat
from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess

RESULTS = RESULTS_DIR / "topics_bench.json"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TreeHub(HubProcess):
    """A hub of the checkout `tree`, started with the options every version knows."""

    def command(self) -> list:
        return [*self.launcher, "--host", "127.0.0.1", "--port", str(self.port), "--data-dir", self.data_dir]


def disk_bytes(root) -> tuple[int, int]:
    """(allocated bytes, apparent bytes) of every file and directory under root."""
    allocated = apparent = 0
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            st = os.lstat(os.path.join(directory, name))
            allocated += st.st_blocks * 512
            apparent += st.st_size
    return allocated, apparent


def hub_state(pid: int) -> dict:
    fields = proc_stat(pid)
    ticks = os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    with open(f"/proc/{pid}/maps") as f:
        mappings = sum(1 for _ in f)
    return {
        "descriptors": len(os.listdir(f"/proc/{pid}/fd")),
        "mappings": mappings,
        "rss_mb": round(int(status["VmRSS"].split()[0]) / 1024, 1),
        "user_s": int(fields[11]) / ticks,
        "system_s": int(fields[12]) / ticks,
    }


def run(tree: str, topics: int, directory: str) -> dict:
    data_dir = os.path.join(directory, "data")
    env = dict(os.environ, PYTHONPATH=tree)
    hub = TreeHub(data_dir, cwd=tree, env=env, launcher=[sys.executable, "-m", "hedwig", "hub"])
    hub.start()
    try:
        pid = hub.process.pid
        idle = hub_state(pid)
        idle_disk = disk_bytes(data_dir)[0]
        latencies = []
        payload = b"x" * 100
        with Client(hub.address) as client:
            started = time.perf_counter()
            for i in range(topics):
                t0 = time.perf_counter()
                client.publish(f"topic-{i:05d}", payload)
                latencies.append(time.perf_counter() - t0)
            seconds = time.perf_counter() - started
            loaded = hub_state(pid)
        allocated, apparent = disk_bytes(data_dir)
        t0 = time.perf_counter()
        hub.process.send_signal(signal.SIGTERM)
        status = hub.process.wait(300)
        shutdown_s = time.perf_counter() - t0
        hub._join_reader()
    finally:
        hub.stop()
    latencies.sort()
    log = hub.output()
    return {
        "topics": topics,
        "create_s": round(seconds, 2),
        "topics_per_s": round(topics / seconds, 1),
        "create_ms_p50": round(percentile(latencies, 0.5) * 1000, 2),
        "create_ms_p99": round(percentile(latencies, 0.99) * 1000, 2),
        "hub_user_s_per_topic_ms": round((loaded["user_s"] - idle["user_s"]) / topics * 1000, 3),
        "hub_system_s_per_topic_ms": round((loaded["system_s"] - idle["system_s"]) / topics * 1000, 3),
        "disk_allocated_mb": round(allocated / 1e6, 1),
        "disk_allocated_per_topic_kb": round((allocated - idle_disk) / topics / 1e3, 1),
        "disk_apparent_gb": round(apparent / 1e9, 1),
        "descriptors_idle": idle["descriptors"],
        "descriptors": loaded["descriptors"],
        "mappings": loaded["mappings"],
        "rss_mb_idle": idle["rss_mb"],
        "rss_mb": loaded["rss_mb"],
        "rss_kb_per_topic": round((loaded["rss_mb"] - idle["rss_mb"]) * 1024 / topics, 2),
        "shutdown_exit_status": status,
        "shutdown_s": round(shutdown_s, 2),
        "log_errors": sum(1 for line in log.splitlines() if " error " in line or " critical " in line),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--tree", default=HERE, help="the checkout whose hub runs")
    parser.add_argument("--label", default="after")
    parser.add_argument("--dir", default=None, help="where the data directory goes (a temporary one)")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="topics-bench-", dir=args.dir)
    try:
        load_before = load()
        figures = run(os.path.abspath(args.tree), args.topics, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    report = {}
    if RESULTS.exists() and not args.no_save:
        report = json.loads(RESULTS.read_text())
    report.setdefault("runs", {})[args.label] = {
        "tree": os.path.abspath(args.tree),
        "load_before": load_before,
        "load_after": load(),
        **figures,
    }
    emit(report, RESULTS, save=not args.no_save)


if __name__ == "__main__":
    main()
