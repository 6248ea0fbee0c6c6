"""A writer process killed with SIGKILL at random moments never loses an acknowledged
entry, and what it leaves is always a valid prefix of what it appended.

The child (crash_child.py) appends with up to 8 appends in flight and reports each
acknowledgement on a pipe; the test kills it after a random number of acknowledgements
(sometimes before the first, while it is still recovering), then reopens the store in
this process and checks every ledger entry by entry. Half the runs use fsync "always",
so kills also land in the middle of group commits and ledger closes.

A failure says what happened: the runs so far and what each writer acknowledged, the
last writer's stderr (its store's log: what its recovery found), what this process's
recovery logged, the data directory (every ledger's files and header) before the last
writer started and after it was killed, and what the kernel logged about file systems.
"""

import functools
import os
import random
import re
import signal
import subprocess
import sys
import time

from twisted.logger import capturedLogs, formatEvent

from hedwig.ledger.layout import (
    HEADER_BYTES,
    HEADER_FILE,
    RECORD,
    RECORD_BYTES,
    STATE_CLOSED,
    HeaderFields,
    current_boot_id,
    index_page_name,
    parse_ledger_dir_name,
)
from hedwig.ledger.mmap_store import MmapLedgerStore
from hedwig.ledger.recovery import recover_tail
from hedwig.testing.deferreds import fired as result_of
from hedwig.testing.reactors import InlineThreadsReactor
from tests.ledger.crash_child import OPTIONS, payload

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crash_child.py")
KILLS = 60


def _run_and_kill(
    directory: str, seed: int, fsync: str, acks_wanted: int, stderr_path: str
) -> list[tuple[int, int]]:
    """Start a writer (its stderr into `stderr_path`), read acknowledgements until
    `acks_wanted`, SIGKILL it; every acknowledgement it wrote before dying."""
    with open(stderr_path, "wb") as stderr:
        child = subprocess.Popen(
            [sys.executable, CHILD, directory, str(seed), fsync], stdout=subprocess.PIPE, stderr=stderr
        )
    acks = []
    try:
        while len(acks) < acks_wanted:
            line = child.stdout.readline()
            if not line:
                with open(stderr_path, errors="replace") as f:
                    error = f.read()
                raise AssertionError(f"the writer exited early ({child.wait()}): {error}")
            ledger, entry = map(int, line.split())
            acks.append((ledger, entry))
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    # Acknowledgements already in the pipe were made before the kill: they count too.
    acks.extend(tuple(map(int, line.split())) for line in child.stdout.read().splitlines())
    child.stdout.close()
    return acks


def _records(path: str, records_per_page: int, entries) -> str:
    """The index records of some entries, as recovery would read them."""
    out = []
    for entry in entries:
        page, slot = divmod(entry, records_per_page)
        try:
            with open(os.path.join(path, index_page_name(page)), "rb") as f:
                f.seek(slot * RECORD_BYTES)
                raw = f.read(RECORD_BYTES)
            got = RECORD.unpack(raw) if len(raw) == RECORD_BYTES else f"{len(raw)} bytes"
        except OSError as e:
            got = f"{index_page_name(page)}: {e.strerror}"
        out.append(f"{entry}: {got}")
    return "; ".join(out)


def _file_sizes(path: str, files) -> str:
    """name:size for each file, runs of pages of one kind and size as first..last:size."""
    runs = []  # [first, last, size]
    for name in files:
        size = os.path.getsize(os.path.join(path, name))
        last = runs[-1] if runs else None
        if (
            last
            and last[2] == size
            and name[0] == last[1][0]
            and name[1:].isdigit()
            and last[1][1:].isdigit()
        ):
            last[1] = name
        else:
            runs.append([name, name, size])
    return " ".join(
        f"{first}:{size}" if first == last else f"{first}..{last}:{size}" for first, last, size in runs
    )


def describe_directory(directory: str) -> str:
    """The data directory as it is on disk: the id reservation, and each ledger's files
    (sizes), header fields and the index records around its counts; for an open ledger,
    how many of its entries are whole, checked from the first."""
    lines = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if not os.path.isdir(path):
            with open(path, "rb") as f:
                lines.append(f"{name} ({os.path.getsize(path)} bytes): {f.read(64)!r}")
            continue
        files = sorted(os.listdir(path))
        lines.append(f"{name}/ " + _file_sizes(path, files))
        if parse_ledger_dir_name(name) is None or HEADER_FILE not in files:
            continue
        try:
            with open(os.path.join(path, HEADER_FILE), "rb") as f:
                header = HeaderFields(f.read(HEADER_BYTES))
        except ValueError as e:
            lines.append(f"  header: {e}")
            continue
        count = header.committed_count
        lines.append(
            f"  header: id {header.ledger_id} count {count} bytes {header.committed_bytes} "
            f"durable {header.durable_count} state {header.state} "
            f"boot {'this' if header.boot_id == current_boot_id() else 'another'}"
        )
        wanted = sorted({0, max(0, count - 1), count, count + 1})
        lines.append("  records " + _records(path, header.index_page_records, wanted))
        if header.state != STATE_CLOSED:
            # Every entry checked from the first (as after a reboot, without rolling
            # forward): what a recovery would keep, and why it would cut.
            kept = recover_tail(
                path,
                count,
                header.committed_bytes,
                0,
                header.page_bytes,
                header.index_page_records,
                same_boot=False,
                roll_forward=False,
            )
            lines.append(f"  checked from entry 0: {kept.count} whole, {kept.problem or 'nothing cut'}")
    return "\n".join(lines) if lines else "(empty)"


KERNEL_TROUBLE = ("EXT4-fs", "XFS", "BTRFS", "I/O error", "Out of memory", "oom-kill", "Killed process")


def _kernel_log(since_s: float) -> str:
    """What the kernel said about file systems, I/O and memory since `since_s` (seconds
    since boot, as its log counts them): a writer's stores live in the page cache, and a
    file system's trouble there is the one thing a kill does not explain. Or why the
    log cannot be read here."""
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return f"(dmesg: {e})"
    lines = []
    for line in out.splitlines():
        stamp = re.match(r"\[\s*(\d+\.\d+)\]", line)
        if stamp and float(stamp.group(1)) < since_s:
            continue
        if any(word in line for word in KERNEL_TROUBLE):
            lines.append(line)
    return "\n".join(lines[-20:]) or "(nothing about file systems, I/O or memory)"


def _evidence(
    history, run: int, stderr_path: str, events, before: str, after_kill: str, started_s: float
) -> str:
    """What a failure's message tells: the runs, the last writer's stderr, this
    process's recovery log, the directory before the last writer and after its kill,
    and the kernel's log."""
    with open(stderr_path, errors="replace") as f:
        stderr = f.read().strip() or "(nothing)"
    logged = "\n".join(formatEvent(e) for e in events) or "(nothing)"
    return (
        "\n--- runs:\n"
        + "\n".join(history)
        + f"\n--- run {run}'s writer's stderr:\n{stderr}"
        + f"\n--- this process's recovery logged:\n{logged}"
        + f"\n--- the directory before run {run}'s writer:\n{before}"
        + f"\n--- after it was killed:\n{after_kill}"
        + f"\n--- the kernel's log (file systems, I/O, memory):\n{_kernel_log(started_s)}"
    )


def test_sigkill_loses_no_acknowledged_entry(tmp_path):
    directory = str(tmp_path / "ledgers")
    rng = random.Random(20240611)
    verified = {}  # ledger -> entries checked in earlier rounds (they may not shrink)
    acknowledged = {}  # ledger -> highest acknowledged entry id
    kills_with_acks = 0
    history = []  # what each run did, for a failure's message
    started_s = time.clock_gettime(time.CLOCK_MONOTONIC)  # (the kernel log's clock)
    for run in range(KILLS):
        fsync = "always" if run % 2 else "never"
        wanted = 0 if run % 15 == 7 else rng.randrange(1, 120)
        seed = rng.randrange(1 << 30)
        before = describe_directory(directory) if os.path.isdir(directory) else "(none yet)"
        stderr_path = str(tmp_path / f"writer-{run}.stderr")
        acks = _run_and_kill(directory, seed, fsync, wanted, stderr_path)
        kills_with_acks += bool(acks)
        this_run = {}
        for ledger, entry in acks:
            acknowledged[ledger] = max(acknowledged.get(ledger, -1), entry)
            low, high = this_run.get(ledger, (entry, entry))
            this_run[ledger] = (min(low, entry), max(high, entry))
        history.append(f"run {run} fsync {fsync} seed {seed} wanted {wanted}: acknowledged {this_run}")
        after_kill = describe_directory(directory)

        with capturedLogs() as events:
            store = MmapLedgerStore(directory, reactor=InlineThreadsReactor(), **OPTIONS)

        evidence = functools.partial(
            _evidence, history, run, stderr_path, events, before, after_kill, started_s
        )

        try:
            ledgers = store.list_ledgers()
            for ledger, highest in acknowledged.items():
                assert ledger in ledgers, (
                    f"run {run}: ledger {ledger} with acknowledged entries is gone{evidence()}"
                )
                assert store.last_entry_id(ledger) >= highest, (
                    f"run {run}: ledger {ledger} ends at {store.last_entry_id(ledger)}, "
                    f"entry {highest} was acknowledged{evidence()}"
                )
            for ledger in ledgers:
                count = store.last_entry_id(ledger) + 1
                assert count >= verified.get(ledger, 0), (
                    f"run {run}: ledger {ledger} shrank from {verified.get(ledger)} to {count}{evidence()}"
                )
                # A valid prefix: the new entries, and a few already seen, are exactly
                # what the writer appended, in order.
                start = max(0, verified.get(ledger, 0) - 3)
                if count > start:
                    got = result_of(store.read(ledger, start, count - 1))
                    assert got == [payload(ledger, e) for e in range(start, count)], (
                        f"run {run}: ledger {ledger} differs from what was appended{evidence()}"
                    )
                verified[ledger] = count
        finally:
            result_of(store.close())
    assert kills_with_acks >= 50
    assert len(verified) > 3  # the writers rolled ledgers along the way
