"""A full file system fails appends with LedgerStoreFull: nothing stored is lost or damaged,
the process never dies of SIGBUS, and appends succeed again once space returns.

Two ways to run out: a small tmpfs (needs root to mount; skipped otherwise), and a file
size limit (RLIMIT_FSIZE) in a child process, which runs anywhere."""

import json
import os
import subprocess
import sys

import pytest
from twisted.logger import capturedLogs

from hedwig.ledger.interface import LedgerError, LedgerStoreFull
from hedwig.ledger.mmap_store import MmapLedgerStore
from hedwig.testing.deferreds import fired as result_of
from hedwig.testing.reactors import InlineThreadsReactor

HERE = os.path.dirname(os.path.abspath(__file__))


def mounted_tmpfs(mount, options):
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)], capture_output=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()}); RLIMIT_FSIZE stands in")
    return mount


@pytest.fixture
def small_tmpfs(tmp_path):
    mount = mounted_tmpfs(tmp_path / "fs", "size=2m")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def read_only_tmpfs(tmp_path):
    mount = mounted_tmpfs(tmp_path / "ro", "size=1m,ro")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_an_unwritable_directory_fails_creates_clearly(read_only_tmpfs):
    store = MmapLedgerStore(read_only_tmpfs, reactor=InlineThreadsReactor())
    with pytest.raises(LedgerError, match=r"creating a ledger: .*: Read-only file system") as raised:
        result_of(store.create())
    assert not isinstance(raised.value, LedgerStoreFull)
    assert store.list_ledgers() == []
    result_of(store.close())


def test_a_full_tmpfs_fails_appends_cleanly_and_recovers(open_store, small_tmpfs):
    ballast = small_tmpfs / "ballast"
    ballast.write_bytes(b"\1" * (512 * 1024))
    options = {"page_bytes": 64 * 1024, "index_page_records": 64, "max_mapped_pages": 4}
    store = open_store(small_tmpfs / "ledgers", **options)
    ledger = result_of(store.create())
    entries = [bytes([i % 251]) * 10_000 for i in range(400)]
    acked = 0
    with pytest.raises(LedgerStoreFull, match="no space left") as raised:
        while acked < len(entries):
            result_of(store.append(ledger, entries[acked], acked))
            acked += 1
    assert acked > 50  # about 1.4 MiB went in before the disk was full
    assert "ledger" in str(raised.value)
    # Nothing stored is lost, nothing half-stored is counted.
    assert store.last_entry_id(ledger) == acked - 1
    assert result_of(store.read(ledger, 0, acked - 1)) == entries[:acked]
    with pytest.raises(LedgerStoreFull):  # still full: the same clean failure
        result_of(store.append(ledger, entries[acked], acked))
    # Take the last free blocks too: then not even a ledger header fits.
    top_up = small_tmpfs / "top-up"
    with open(top_up, "wb", buffering=0) as f, pytest.raises(OSError):
        while True:
            f.write(b"\1" * 4096)
    with pytest.raises(LedgerStoreFull, match="creating ledger"):
        result_of(store.create())
    assert store.list_ledgers() == [ledger]
    # A reopen finds nothing to repair.
    result_of(store.close())
    with capturedLogs() as events:
        store = open_store(small_tmpfs / "ledgers", **options)
    assert not [e for e in events if "cut back" in e.get("log_format", "")]
    assert result_of(store.read(ledger, 0, acked - 1)) == entries[:acked]
    # Space returns: appends go on where they stopped.
    ballast.unlink()
    top_up.unlink()
    for i in range(acked, acked + 30):
        assert result_of(store.append(ledger, entries[i], i)) == i
    assert result_of(store.read(ledger, 0, acked + 29)) == entries[: acked + 30]
    other = result_of(store.create())
    assert result_of(store.append(other, b"fits again", 0)) == 0
    # Deleting a ledger gives its space back to the file system.
    free_before = os.statvfs(small_tmpfs).f_bfree
    result_of(store.delete(ledger))
    assert (
        os.statvfs(small_tmpfs).f_bfree - free_before >= (acked * 10_000) // os.statvfs(small_tmpfs).f_bsize
    )


def test_a_file_size_limit_fails_appends_cleanly_and_recovers(tmp_path):
    done = subprocess.run(
        [sys.executable, os.path.join(HERE, "fsize_child.py"), str(tmp_path / "ledgers")],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    seen = json.loads(done.stdout)
    assert seen["error"] is not None and "no space left" in seen["error"], seen
    assert 5 <= seen["acked"] < 64
    assert seen["last_entry_id"] == seen["acked"] - 1
    assert seen["intact"] and seen["reopened_intact"]
    assert seen["after"] == seen["acked"] and seen["after_intact"]


def test_ledgers_on_a_read_only_file_system_stay_readable(small_tmpfs):
    options = {"page_bytes": 64 * 1024, "index_page_records": 64}
    store = MmapLedgerStore(small_tmpfs / "ledgers", reactor=InlineThreadsReactor(), **options)
    ledger = result_of(store.create())
    for i in range(5):
        result_of(store.append(ledger, b"entry %d" % i, i))
    result_of(store.close())
    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    try:
        with capturedLogs() as events:
            store = MmapLedgerStore(small_tmpfs / "ledgers", reactor=InlineThreadsReactor(), **options)
        assert any("served read-only" in e.get("log_format", "") for e in events)
        assert result_of(store.read(ledger, 0, 4)) == [b"entry %d" % i for i in range(5)]
        with pytest.raises(LedgerError, match=r"takes no more appends.*Read-only file system"):
            result_of(store.append(ledger, b"more", 5))
        result_of(store.close())
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_tmpfs)], check=True)
