"""What every benchmark's figures are made of: the machine's load around them, CPU
seconds, percentiles and medians, and the JSON report printed and kept in bench/results/.

The machine has 2 cores that hubs, clients and whatever else runs share, so a figure
goes out with the load it was measured under, and with CPU seconds, which vary less
than wall seconds on a shared machine.
"""

import json
import os
import resource
import sys
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def load() -> str:
    """The 1, 5 and 15 minute load averages, as /proc/loadavg gives them ("0.52 1.10 1.43")."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def own_cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (all its threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def proc_stat(pid) -> list:
    """/proc/PID/stat's fields after the command name: [0] is the state, [1] the parent,
    [11] and [12] user and system ticks, [13] and [14] those of waited-for children."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def process_cpu_seconds(pid) -> float:
    """User + system CPU seconds of another process (a hub) so far."""
    fields = proc_stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu(pid) -> dict:
    """CPU of a process split by thread: {"main": (user s, system s), "threads": (user s,
    system s) of all its other threads, "minor_faults": its minor page faults so far}."""
    tick = os.sysconf("SC_CLK_TCK")
    main = proc_stat(pid)
    others_user = others_system = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        if int(task) == int(pid):
            continue
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue  # (a thread that ended meanwhile: its time is in the process's)
        others_user += int(fields[11])
        others_system += int(fields[12])
    # The process's own line counts every thread (and ended ones): main = process - others.
    user, system = int(main[11]), int(main[12])
    return {
        "main": ((user - others_user) / tick, (system - others_system) / tick),
        "threads": (others_user / tick, others_system / tick),
        "minor_faults": int(main[7]),
    }


def thread_cpu_delta(before: dict, after: dict) -> dict:
    """What a process's thread_cpu moved by between two readings (rounded for a report)."""
    return {
        "main_user_s": round(after["main"][0] - before["main"][0], 2),
        "main_system_s": round(after["main"][1] - before["main"][1], 2),
        "threads_user_s": round(after["threads"][0] - before["threads"][0], 2),
        "threads_system_s": round(after["threads"][1] - before["threads"][1], 2),
        "minor_faults": after["minor_faults"] - before["minor_faults"],
    }


def machine_cpu_seconds() -> float:
    """Busy CPU seconds of the whole machine so far (every process, the kernel's own
    work included): /proc/stat's first line less idle and iowait."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def percentile(ordered, q: float):
    """The value at quantile `q` (0..1) of sorted values, by rank (the one at index
    int(n * q), the last for q = 1); None when there are none."""
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def latency_summary(samples_ns) -> dict:
    """p50_us, p99_us, p999_us and max_us (None when there are none) of latencies in
    nanoseconds."""
    ordered = sorted(samples_ns)
    summary = {}
    for name, q in (("p50_us", 0.5), ("p99_us", 0.99), ("p999_us", 0.999), ("max_us", 1.0)):
        value = percentile(ordered, q)
        summary[name] = value / 1000 if value is not None else None
    return summary


def median(values, key=None):
    """The middle one of `values` (the upper middle one of an even count): one of the
    runs as it was measured, not an average of two."""
    return percentile(sorted(values, key=key), 0.5)


def emit(report: dict, path, save: bool = True) -> str:
    """Print the report as JSON and, when `save`, write it to `path` (most often
    RESULTS_DIR / "<benchmark>.json"); the JSON text."""
    text = json.dumps(report, indent=2)
    print(text)
    if save:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return text


def report_start(benchmark: str, argv, **fields) -> dict:
    """A report's first fields: the benchmark's name, the command that ran it (`argv`:
    main's own, None for the command line's), `fields`, and the load before it."""
    arguments = sys.argv[1:] if argv is None else argv
    command = " ".join([f"python bench/{benchmark}.py", *arguments])
    return {"benchmark": benchmark, "command": command, **fields, "load_before": load()}
