"""MemoryLedgerStore: ledger semantics and the failures it scripts for the log's tests."""

import pytest
from twisted.python.failure import Failure
from zope.interface.verify import verifyObject

from hedwig.ledger import ILedgerStore, LedgerClosed, LedgerError, NoSuchLedger, StorageFull
from hedwig.ledger.memory_store import MemoryLedgerStore


def outcome(d):
    """What `d` holds now ("pending" if it has not fired), leaving it there."""
    out = []

    def look(result):
        out.append(result)
        return result

    d.addBoth(look)
    if out and isinstance(out[0], Failure):
        d.addErrback(lambda _f: None)  # seen here: not an unhandled error
    return out[0] if out else "pending"


@pytest.fixture
def store():
    return MemoryLedgerStore()


def test_provides_the_interface(store):
    assert verifyObject(ILedgerStore, store)


def test_entries_are_dense_from_zero_and_read_back(store):
    ledger = store.create()
    assert store.last_entry_id(ledger) == -1
    assert [outcome(store.append(ledger, b"e%d" % i, 10 + i)) for i in range(3)] == [0, 1, 2]
    assert outcome(store.append(ledger, [b"ab", memoryview(b"cd")], 20)) == 3
    assert store.read(ledger, 0, 3) == [b"e0", b"e1", b"e2", b"abcd"]
    assert store.read(ledger, 1, 3, max_bytes=4) == [b"e1", b"e2"]  # stops once reached
    assert store.read(ledger, 3, 3, max_bytes=1) == [b"abcd"]
    assert store.ledger_bytes(ledger) == 10
    assert (store.entry_time(ledger, 2), store.find_by_time(ledger, 11), store.find_by_time(ledger, 21)) == (
        12,
        1,
        None,
    )


def test_out_of_range_reads_and_unknown_ledgers_are_errors(store):
    ledger = store.create()
    store.append(ledger, b"x", 1)
    with pytest.raises(LedgerError, match="outside"):
        store.read(ledger, 0, 1)
    with pytest.raises(NoSuchLedger):
        store.read(99, 0, 0)
    assert outcome(store.append(99, b"x", 1)).check(NoSuchLedger)


def test_closed_ledgers_refuse_appends_and_deleted_ones_vanish(store):
    a, b = store.create(), store.create()
    store.append(a, b"x", 1)
    assert outcome(store.close_ledger(a)) is None
    assert store.is_closed(a) and not store.is_closed(b)
    assert outcome(store.append(a, b"y", 2)).check(LedgerClosed)
    store.delete(a)
    assert store.list_ledgers() == [b]
    assert store.used_bytes == 0


def test_capacity_refuses_what_does_not_fit_and_delete_returns_space():
    store = MemoryLedgerStore(capacity_bytes=10)
    ledger = store.create()
    assert outcome(store.append(ledger, b"x" * 8, 1)) == 0
    failure = outcome(store.append(ledger, b"x" * 3, 2))
    assert failure.check(StorageFull) and "do not fit" in str(failure.value)
    assert store.last_entry_id(ledger) == 0  # nothing stored
    other = store.create()
    store.delete(ledger)
    assert outcome(store.append(other, b"x" * 3, 2)) == 0


def test_scripted_refusals_store_nothing(store):
    ledger = store.create()
    store.fail_appends(LedgerError("boom"), count=2)
    assert outcome(store.append(ledger, b"x", 1)).check(LedgerError)
    assert outcome(store.append(ledger, b"x", 1)).check(LedgerError)
    assert store.last_entry_id(ledger) == -1
    assert outcome(store.append(ledger, b"x", 1)) == 0


def test_scripted_failures_after_storing_fail_at_release(store):
    ledger = store.create()
    store.fail_appends(LedgerError("fsync failed"), after_storing=True)
    d = store.append(ledger, b"x", 1)
    assert outcome(d) == "pending" and store.last_entry_id(ledger) == 0
    store.release_acks()
    failure = outcome(d)
    assert isinstance(failure, Failure) and failure.check(LedgerError)


def test_held_acks_fire_in_order_on_release_and_close_waits_for_them(store):
    ledger = store.create()
    store.hold_acks()
    ds = [store.append(ledger, b"x", i) for i in range(3)]
    assert store.read(ledger, 0, 2) == [b"x"] * 3  # stored and readable before acknowledged
    closing = store.close_ledger(ledger)
    assert [outcome(d) for d in ds] == ["pending"] * 3 and outcome(closing) == "pending"
    fired = []
    for d in ds:
        d.addCallback(fired.append)
    assert store.release_acks(1, keep_holding=True) == 1
    assert fired == [0] and outcome(closing) == "pending"
    store.release_acks()
    assert fired == [0, 1, 2] and outcome(closing) is None
    assert outcome(store.append(store.create(), b"y", 1)) == 0  # no longer holding


def test_a_closed_store_refuses_everything(store):
    ledger = store.create()
    store.close()
    with pytest.raises(LedgerError, match="closed"):
        store.create()
    assert outcome(store.append(ledger, b"x", 1)).check(LedgerError)
    with pytest.raises(LedgerError):
        store.list_ledgers()


def test_held_closes_refuse_appends_at_once_and_fire_on_release(store):
    ledger = store.create()
    store.hold_closes()
    closing = store.close_ledger(ledger)
    assert outcome(closing) == "pending" and store.is_closed(ledger)
    assert outcome(store.append(ledger, b"x", 1)).check(LedgerClosed)
    assert store.release_closes() == 1
    assert outcome(closing) is None
