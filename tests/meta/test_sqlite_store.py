"""SQLite specifics: WAL mode, persistence across reopen and process death, bad files."""

import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from hedwig.meta import NEW, LedgerRange, MetadataError, SqliteMetadataStore, SubscriptionState, Versioned
from tests.meta.test_store_contract import result


def test_runs_in_wal_mode(tmp_path):
    store = SqliteMetadataStore(tmp_path / "m.db")
    try:
        assert store.journal_mode == "wal"
    finally:
        result(store.close())


def test_topic_records_commit_fsynced_and_consume_pointers_cheaper(tmp_path):
    """Each write commits under the durability its record needs: FULL (fsynced) for
    ledger ranges and unsubscribes, NORMAL for consume pointers."""
    store = SqliteMetadataStore(tmp_path / "m.db")
    statements = []
    store._db.set_trace_callback(statements.append)

    def sync_of(write):
        """The synchronous level in force when the statement starting with `write` ran."""
        level, found = "FULL", None  # FULL: as the store opened
        for statement in statements:
            if statement.startswith("PRAGMA synchronous="):
                level = statement.split("=")[1]
            elif statement.startswith(write):
                found = level
        return found

    try:
        result(store.put_topic("t", [LedgerRange(1, 1, None)], NEW))
        result(store.put_subscription("t", "s", SubscriptionState(1, {}), NEW))
        result(store.put_topic("t", [LedgerRange(2, 1, None)], 0))
        result(store.put_subscription("t", "s", SubscriptionState(2, {}), 0))
        result(store.delete_subscription("t", "s", 1))
        assert sync_of("INSERT INTO topics") == "FULL"
        assert sync_of("UPDATE topics") == "FULL"
        assert sync_of("INSERT INTO subscriptions") == "NORMAL"
        assert sync_of("UPDATE subscriptions") == "NORMAL"
        assert sync_of("DELETE FROM subscriptions") == "FULL"
        switches = [s for s in statements if s.startswith("PRAGMA synchronous")]
        assert len(switches) == 4  # switched only when the level changes
    finally:
        result(store.close())


def test_durability_levels_are_configurable(tmp_path):
    store = SqliteMetadataStore(tmp_path / "m.db", synchronous="EXTRA", subscription_synchronous="full")
    try:
        assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 3  # EXTRA, for topic writes
        result(store.put_subscription("t", "s", SubscriptionState(1, {}), NEW))
        assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    finally:
        result(store.close())


def test_records_and_versions_survive_reopen(tmp_path):
    path = tmp_path / "m.db"
    store = SqliteMetadataStore(path)
    result(store.put_topic("t", [LedgerRange(1, 1, 5), LedgerRange(2, 6, None)], NEW))
    result(store.put_topic("t", [LedgerRange(2, 6, None)], 0))
    result(store.put_subscription("t", "s", SubscriptionState(7, {"window": 3}), NEW))
    result(store.close())

    reopened = SqliteMetadataStore(path)
    try:
        assert result(reopened.get_topic("t")) == Versioned([LedgerRange(2, 6, None)], 1)
        assert result(reopened.get_subscription("t", "s")) == Versioned(
            SubscriptionState(7, {"window": 3}), 0
        )
        # compare-and-set continues from the persisted version
        assert result(reopened.put_topic("t", [LedgerRange(3, 6, None)], 1)) == 2
    finally:
        result(reopened.close())


def test_a_commit_survives_sigkill_of_the_writer(tmp_path):
    """Each write is committed before its Deferred fires: a process killed right after
    (no close, no checkpoint) leaves it in the database."""
    path = tmp_path / "m.db"
    child = textwrap.dedent(
        f"""
        import os, signal, sys
        from hedwig.meta import NEW, LedgerRange, SqliteMetadataStore, SubscriptionState
        store = SqliteMetadataStore({str(path)!r})
        store.put_topic("t", [LedgerRange(4, 1, None)], NEW)
        store.put_subscription("t", "s", SubscriptionState(3, {{}}), NEW)
        store.put_subscription("t", "s", SubscriptionState(9, {{}}), 0)
        sys.stdout.write("written\\n"); sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout == "written\n"
    store = SqliteMetadataStore(path)
    try:
        assert result(store.get_topic("t")) == Versioned([LedgerRange(4, 1, None)], 0)
        assert result(store.get_subscription("t", "s")) == Versioned(SubscriptionState(9, {}), 1)
    finally:
        result(store.close())


def test_creates_missing_directories(tmp_path):
    store = SqliteMetadataStore(tmp_path / "a" / "b" / "m.db")
    result(store.close())
    assert (tmp_path / "a" / "b" / "m.db").is_file()


def test_a_path_that_cannot_hold_a_database_is_a_clear_error(tmp_path):
    blocker = tmp_path / "data"
    blocker.write_text("a file where the data directory should be")
    with pytest.raises(MetadataError, match="cannot open the metadata database"):
        SqliteMetadataStore(blocker / "m.db")


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path):
    path = tmp_path / "m.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(MetadataError, match="metadata database"):
        SqliteMetadataStore(path)
    assert path.read_bytes() == b"this is not sqlite" * 100


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "m.db"
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version=99")
    db.commit()
    db.close()
    with pytest.raises(MetadataError, match="schema version 99"):
        SqliteMetadataStore(path)


def test_corrupt_stored_record_is_reported_not_returned(tmp_path):
    path = tmp_path / "m.db"
    store = SqliteMetadataStore(path)
    try:
        result(store.put_topic("t", [LedgerRange(1, 1, None)], NEW))
        store._db.execute("UPDATE topics SET ranges = '[[1, 1' WHERE topic = 't'")
        with pytest.raises(MetadataError, match="unreadable"):
            result(store.get_topic("t"))
    finally:
        result(store.close())


def test_bad_synchronous_settings_are_refused(tmp_path):
    with pytest.raises(ValueError, match="synchronous"):
        SqliteMetadataStore(tmp_path / "m.db", synchronous="sometimes")
    with pytest.raises(ValueError, match="subscription_synchronous"):
        SqliteMetadataStore(tmp_path / "m.db", subscription_synchronous=None)
