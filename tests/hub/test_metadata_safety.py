"""A damaged metadata database never costs the ledgers: real hub processes on real files.

A hub whose ledgers hold messages refuses to start on a missing, zero-byte or recordless
metadata database (one line saying what is wrong and how to recover, exit status 1, the
files untouched), so it never hands out a seq-id twice; and its start-up sweep deletes
only what the metadata records as garbage, keeping (and reporting) every other ledger."""

import json
import shutil
import sqlite3
import subprocess
import sys

import pytest

from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess

HUB = [sys.executable, "-m", "hedwig", "hub", "--host", "127.0.0.1", "--port", "0", "--http-port", "0"]


def ledger_files(data_dir) -> dict:
    """Every file under the ledger directory with its bytes: what must survive unchanged."""
    root = data_dir / "ledgers"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def served(tmp_path):
    """A data directory a hub has served and left: two topics, messages in each."""
    data_dir = tmp_path / "data"
    with HubProcess(data_dir) as process, Client(process.address) as client:
        assert client.publish_many("orders", [b"o1", b"o2", b"o3"]) == [1, 2, 3]
        assert client.publish("audit", b"a1") == 1
    return data_dir


def damage(data_dir, how: str) -> None:
    metadata = data_dir / "metadata.sqlite3"
    for suffix in ("-wal", "-shm"):
        metadata.with_name(metadata.name + suffix).unlink(missing_ok=True)
    if how == "zero-byte":
        metadata.write_bytes(b"")
    elif how == "missing":
        metadata.unlink()
    else:  # a valid database that records nothing (as a hub once made of a zero-byte file)
        metadata.unlink()
        db = sqlite3.connect(metadata)
        db.execute("CREATE TABLE topics (topic TEXT PRIMARY KEY, ranges TEXT NOT NULL, version INTEGER)")
        db.execute(
            "CREATE TABLE subscriptions (topic TEXT, subscriber_id TEXT, consumed_seq INTEGER,"
            " preferences TEXT, version INTEGER, PRIMARY KEY (topic, subscriber_id))"
        )
        db.execute("PRAGMA user_version=1")
        db.commit()
        db.close()


@pytest.mark.parametrize("how", ["zero-byte", "missing", "recordless"])
def test_lost_metadata_beside_ledgers_stops_the_hub_and_touches_nothing(served, tmp_path, how):
    backup = tmp_path / "backup.sqlite3"
    shutil.copyfile(served / "metadata.sqlite3", backup)
    damage(served, how)
    ledgers_before = ledger_files(served)
    metadata = served / "metadata.sqlite3"
    metadata_before = metadata.read_bytes() if metadata.exists() else None

    run = subprocess.run([*HUB, "--data-dir", str(served)], capture_output=True, text=True, timeout=60)

    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    [line] = [line for line in run.stderr.splitlines() if " critical " in line]
    assert "could not start" in line and "metadata.sqlite3" in line, line
    assert "2 ledger(s) with messages" in line and "Restore metadata.sqlite3 from a backup" in line, line
    assert "docs/operations.md" in line, line
    assert ledger_files(served) == ledgers_before, "no ledger may be deleted or changed"
    assert (metadata.read_bytes() if metadata.exists() else None) == metadata_before

    # The documented recovery: the backup back in place, the hub serves the old data and
    # goes on from the topics' last seq-ids (none given out twice).
    shutil.copyfile(backup, metadata)
    with HubProcess(served) as process, Client(process.address) as client:
        assert [m.payload for m in client.read("orders", 1, 3)] == [b"o1", b"o2", b"o3"]
        assert client.publish("orders", b"o4") == 4
        assert client.publish("audit", b"a2") == 2
        assert "kept" not in process.output()


def test_a_fresh_data_directory_still_starts(tmp_path):
    with HubProcess(tmp_path / "fresh") as process, Client(process.address) as client:
        assert client.publish("first", b"x") == 1


def test_a_ledger_the_metadata_does_not_know_is_kept_and_reported(served):
    """A topic's record lost (an older metadata backup, a damaged row): its ledger holds
    messages the metadata cannot place; the sweep keeps it and says so at warn level."""
    db = sqlite3.connect(served / "metadata.sqlite3")
    [(ranges,)] = db.execute("SELECT ranges FROM topics WHERE topic = 'orders'")
    db.execute("DELETE FROM topics WHERE topic = 'orders'")
    db.commit()
    db.close()
    ledger_ids = [int(r[0]) for r in json.loads(ranges)]
    before = ledger_files(served)

    with HubProcess(served) as process, Client(process.address) as client:
        assert [m.payload for m in client.read("audit", 1, 1)] == [b"a1"]
        [warning] = [line for line in process.output().splitlines() if " warn " in line]
    assert "kept 1 ledger(s)" in warning and "seq-ids 1..3" in warning, warning
    assert str(ledger_ids[0]) in warning and "Unknown ledgers" in warning, warning
    after = ledger_files(served)
    assert {name for name in before if name.startswith("L")} <= set(after)
    for name, data in before.items():
        if name.startswith(f"L{ledger_ids[0]:012d}"):
            assert after[name] == data
