"""MemoryLedgerStore: the failures it scripts for the log's tests (its ledger semantics
are the contract suite's, tests/ledger/test_contract.py)."""

import pytest
from twisted.python.failure import Failure

from hedwig.ledger import LedgerClosed, LedgerError, LedgerStoreFull
from hedwig.ledger.memory_store import MemoryLedgerStore
from hedwig.testing.deferreds import fired


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


def test_capacity_refuses_what_does_not_fit_and_delete_returns_space():
    store = MemoryLedgerStore(capacity_bytes=10)
    ledger = fired(store.create())
    assert outcome(store.append(ledger, b"x" * 8, 1)) == 0
    failure = outcome(store.append(ledger, b"x" * 3, 2))
    assert failure.check(LedgerStoreFull) and "do not fit" in str(failure.value)
    assert store.last_entry_id(ledger) == 0  # nothing stored
    other = fired(store.create())
    store.delete(ledger)
    assert outcome(store.append(other, b"x" * 3, 2)) == 0


def test_scripted_refusals_store_nothing(store):
    ledger = fired(store.create())
    store.fail_appends(LedgerError("boom"), count=2)
    assert outcome(store.append(ledger, b"x", 1)).check(LedgerError)
    assert outcome(store.append(ledger, b"x", 1)).check(LedgerError)
    assert store.last_entry_id(ledger) == -1
    assert outcome(store.append(ledger, b"x", 1)) == 0


def test_scripted_failures_after_storing_fail_at_release(store):
    ledger = fired(store.create())
    store.fail_appends(LedgerError("fsync failed"), after_storing=True)
    d = store.append(ledger, b"x", 1)
    assert outcome(d) == "pending" and store.last_entry_id(ledger) == 0
    store.release_acks()
    failure = outcome(d)
    assert isinstance(failure, Failure) and failure.check(LedgerError)


def test_held_acks_fire_in_order_on_release_and_close_waits_for_them(store):
    ledger = fired(store.create())
    store.hold_acks()
    ds = [store.append(ledger, b"x", i) for i in range(3)]
    assert fired(store.read(ledger, 0, 2)) == [b"x"] * 3  # stored and readable before acknowledged
    closing = store.close_ledger(ledger)
    assert [outcome(d) for d in ds] == ["pending"] * 3 and outcome(closing) == "pending"
    acked = []
    for d in ds:
        d.addCallback(acked.append)
    assert store.release_acks(1, keep_holding=True) == 1
    assert acked == [0] and outcome(closing) == "pending"
    store.release_acks()
    assert acked == [0, 1, 2] and outcome(closing) is None
    assert outcome(store.append(fired(store.create()), b"y", 1)) == 0  # no longer holding


def test_held_closes_refuse_appends_at_once_and_fire_on_release(store):
    ledger = fired(store.create())
    store.hold_closes()
    closing = store.close_ledger(ledger)
    assert outcome(closing) == "pending" and store.is_closed(ledger)
    assert outcome(store.append(ledger, b"x", 1)).check(LedgerClosed)
    assert store.release_closes() == 1
    assert outcome(closing) is None
