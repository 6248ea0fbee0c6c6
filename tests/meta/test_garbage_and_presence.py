"""The metadata's part in never losing a ledger: garbage recorded positively (with the
ranges that drop it, in one transaction), databases from before that record still
working, a missing or empty database refused when the caller holds data, and integers
beyond SQLite's refused as bad records rather than failing inside the driver."""

import sqlite3

import pytest

from hedwig.meta import (
    NEW,
    BadRecord,
    BadVersion,
    LedgerRange,
    MetadataMissing,
    SqliteMetadataStore,
    SubscriptionState,
    Versioned,
)
from tests.meta.test_store_contract import result, store  # noqa: F401 - the contract's fixture

# -- garbage --------------------------------------------------------------------------------


def test_ranges_and_their_garbage_commit_together(store):  # noqa: F811
    result(store.put_topic("t", [LedgerRange(1, 1, 5), LedgerRange(2, 6, 9), LedgerRange(3, 10, None)], NEW))
    assert result(store.list_garbage()) == {}
    assert result(store.put_topic("t", [LedgerRange(3, 10, None)], 0, [1, 2])) == 1
    assert result(store.list_garbage()) == {1: "t", 2: "t"}
    result(store.forget_garbage([1, 99]))  # an unknown id is ignored
    assert result(store.list_garbage()) == {2: "t"}


def test_a_lost_compare_and_set_records_no_garbage(store):  # noqa: F811
    result(store.put_topic("t", [LedgerRange(1, 1, 5), LedgerRange(2, 6, None)], NEW))
    with pytest.raises(BadVersion):
        result(store.put_topic("t", [LedgerRange(2, 6, None)], 7, [1]))
    assert result(store.list_garbage()) == {}
    assert result(store.get_topic("t")).version == 0


def test_a_ledger_the_ranges_still_name_is_never_garbage(store):  # noqa: F811
    result(store.put_topic("t", [LedgerRange(1, 1, None)], NEW))
    with pytest.raises(BadRecord, match="named by the ranges"):
        result(store.put_topic("t", [LedgerRange(1, 1, None)], 0, [1]))
    with pytest.raises(BadRecord):
        result(store.put_topic("t", [LedgerRange(1, 1, None)], 0, [-1]))
    assert result(store.list_garbage()) == {}
    assert result(store.get_topic("t")) == Versioned([LedgerRange(1, 1, None)], 0)


def test_a_schema_1_database_keeps_working_and_gains_the_garbage_record(tmp_path):
    path = tmp_path / "m.db"
    db = sqlite3.connect(path)  # as hedwig's schema 1 left it
    db.executescript(
        """
        CREATE TABLE topics (topic TEXT PRIMARY KEY, ranges TEXT NOT NULL, version INTEGER NOT NULL)
            WITHOUT ROWID;
        CREATE TABLE subscriptions (topic TEXT NOT NULL, subscriber_id TEXT NOT NULL,
            consumed_seq INTEGER NOT NULL, preferences TEXT NOT NULL, version INTEGER NOT NULL,
            PRIMARY KEY (topic, subscriber_id)) WITHOUT ROWID;
        INSERT INTO topics VALUES ('t', '[[4,1,3],[5,4,null]]', 2);
        INSERT INTO subscriptions VALUES ('t', 's', 2, '{}', 0);
        PRAGMA user_version=1;
        """
    )
    db.close()
    opened = SqliteMetadataStore(path, expect_records=True)
    try:
        assert result(opened.get_topic("t")) == Versioned([LedgerRange(4, 1, 3), LedgerRange(5, 4, None)], 2)
        assert result(opened.get_subscription("t", "s")).value.consumed_seq == 2
        assert result(opened.list_garbage()) == {}
        assert result(opened.put_topic("t", [LedgerRange(5, 4, None)], 2, [4])) == 3
        assert result(opened.list_garbage()) == {4: "t"}
        # Schema 3's acked column came with it: empty for the old record, and writable.
        assert result(opened.get_subscription("t", "s")).value.acked == b""
        result(opened.put_subscription("t", "s", SubscriptionState(3, {}, b"\x01\x05\x00"), 0))
        assert result(opened.list_subscriptions("t"))["s"].value.acked == b"\x01\x05\x00"
    finally:
        result(opened.close())
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 3


# -- a database that cannot describe the caller's data ------------------------------------------


def test_a_missing_database_is_refused_and_not_created(tmp_path):
    path = tmp_path / "m.db"
    with pytest.raises(MetadataMissing, match="is missing"):
        SqliteMetadataStore(path, expect_records=True)
    assert not path.exists()


def test_a_zero_byte_database_is_refused_and_left_as_it_is(tmp_path):
    path = tmp_path / "m.db"
    path.write_bytes(b"")
    with pytest.raises(MetadataMissing, match=r"is empty \(0 bytes\)"):
        SqliteMetadataStore(path, expect_records=True)
    assert path.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.db"]


def test_a_database_that_records_nothing_is_refused(tmp_path):
    path = tmp_path / "m.db"
    result(SqliteMetadataStore(path).close())  # a valid database, with no record
    with pytest.raises(MetadataMissing, match="records nothing"):
        SqliteMetadataStore(path, expect_records=True)


@pytest.mark.parametrize("record", ["topic", "subscription", "garbage"])
def test_any_record_is_enough(tmp_path, record):
    path = tmp_path / "m.db"
    first = SqliteMetadataStore(path)
    if record == "subscription":
        result(first.put_subscription("t", "s", SubscriptionState(0, {}), NEW))
    else:
        result(first.put_topic("t", [LedgerRange(1, 1, 2), LedgerRange(2, 3, None)], NEW))
        if record == "garbage":
            result(first.put_topic("t", [LedgerRange(2, 3, None)], 0, [1]))
            result(first.delete_topic("t", 1))
    result(first.close())
    result(SqliteMetadataStore(path, expect_records=True).close())


def test_without_expectations_a_new_database_is_created(tmp_path):
    path = tmp_path / "new" / "m.db"
    result(SqliteMetadataStore(path).close())
    assert path.stat().st_size > 0


# -- integers SQLite cannot hold --------------------------------------------------------------


def test_a_consumed_seq_id_beyond_64_bits_is_a_bad_record_not_an_overflow(store):  # noqa: F811
    with pytest.raises(BadRecord, match="consumed seq-id"):
        result(store.put_subscription("t", "s", SubscriptionState(2**64 - 2, {}), NEW))
    with pytest.raises(BadRecord):
        result(store.put_topic("t", [LedgerRange(1, 2**63, None)], NEW))
    assert result(store.get_subscription("t", "s")) is None
    result(store.put_subscription("t", "s", SubscriptionState(2**63 - 1, {}), NEW))


def test_a_deleted_topic_and_its_garbage_commit_together(store):  # noqa: F811
    result(store.put_topic("t", [LedgerRange(1, 1, 5), LedgerRange(2, 6, None)], NEW))
    with pytest.raises(BadVersion):  # a lost compare-and-set deletes and records nothing
        result(store.delete_topic("t", 3, [1, 2]))
    assert result(store.list_garbage()) == {}
    result(store.delete_topic("t", 0, [1, 2]))
    assert result(store.get_topic("t")) is None
    assert result(store.list_garbage()) == {1: "t", 2: "t"}
    with pytest.raises(BadRecord):
        result(store.delete_topic("u", NEW, [-1]))
