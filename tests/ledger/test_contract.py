"""The ILedgerStore contract (hedwig/ledger/interface.py), run over every store: in memory,
memory-mapped, memory-mapped on shared storage, and RADOS.

Each test states one promise of the interface's docstring and checks it through the
interface alone (and the harness's restart and second writer, tests/ledger/stores.py),
so a store passes by keeping the contract, whatever it is made of. Store-specific
behaviour (pages, fsyncs, fence files, segments) is tested beside each store.
"""

import pytest
from zope.interface.verify import verifyObject

from hedwig.ledger.interface import (
    ILedgerStore,
    LedgerClosed,
    LedgerError,
    LedgerFenced,
    NoSuchLedger,
)
from tests.ledger.stores import MAX_ENTRY_BYTES


def entry(i: int, size: int | None = None) -> bytes:
    """Entry i's bytes: sizes from 0 to MAX_ENTRY_BYTES, content a function of i."""
    size = (i * 379) % MAX_ENTRY_BYTES if size is None else size
    return (b"%07d|" % i * (size // 8 + 1))[:size]


def fill(harness, store, ledger, count, start=0, time_us=1000):
    appends = [store.append(ledger, entry(i), time_us + i) for i in range(start, start + count)]
    return [harness.settle(d) for d in appends]


@pytest.fixture
def h(ledger_store):
    """The harness of the store under test (tests/ledger/conftest.py: every store)."""
    return ledger_store


@pytest.fixture
def durable(durable_ledger_store):
    """... of the stores that keep what they acknowledged across a restart."""
    return durable_ledger_store


@pytest.fixture
def shared(shared_ledger_store):
    """... of the stores whose storage several writers share."""
    return shared_ledger_store


def test_provides_the_interface(h):
    assert verifyObject(ILedgerStore, h.open())


def test_ids_are_distinct_ascending_and_listed(h):
    store = h.open()
    ids = [h.settle(store.create()) for _ in range(3)]
    assert len(set(ids)) == 3
    assert sorted(ids) == ids
    assert store.list_ledgers() == ids
    assert all(store.last_entry_id(i) == -1 and store.ledger_bytes(i) == 0 for i in ids)
    assert not any(store.is_closed(i) for i in ids)


def test_entries_are_dense_from_zero_acknowledged_in_order_and_read_back(h):
    store = h.open()
    ledger = h.settle(store.create())
    order = []
    appends = [store.append(ledger, entry(i), 1000 + i) for i in range(40)]
    for d in appends:
        d.addCallback(lambda entry_id: order.append(entry_id) or entry_id)
    assert [h.settle(d) for d in appends] == list(range(40))
    assert order == list(range(40))
    assert store.last_entry_id(ledger) == 39
    assert store.ledger_bytes(ledger) == sum(len(entry(i)) for i in range(40))
    assert h.settle(store.read(ledger, 0, 39)) == [entry(i) for i in range(40)]
    assert h.settle(store.read(ledger, 17, 17)) == [entry(17)]
    assert h.settle(store.read(ledger, 30, 39)) == [entry(i) for i in range(30, 40)]


def test_reads_are_bytes(h):
    store = h.open()
    ledger = h.settle(store.create())
    fill(h, store, ledger, 3)
    assert all(type(data) is bytes for data in h.settle(store.read(ledger, 0, 2)))


def test_chunked_and_empty_entries(h):
    store = h.open()
    ledger = h.settle(store.create())
    appends = [
        store.append(ledger, b"", 1),
        store.append(ledger, [b"ab", memoryview(b"cd"), bytearray(b"ef")], 2),
        store.append(ledger, (), 3),
        store.append(ledger, [b"", b""], 4),
    ]
    assert [h.settle(d) for d in appends] == [0, 1, 2, 3]
    assert h.settle(store.read(ledger, 0, 3)) == [b"", b"abcdef", b"", b""]
    assert store.ledger_bytes(ledger) == 6


def test_max_bytes_stops_once_reached_but_returns_one_entry(h):
    store = h.open()
    ledger = h.settle(store.create())
    for i in range(5):
        h.settle(store.append(ledger, b"x" * 100, i))
    assert len(h.settle(store.read(ledger, 0, 4, max_bytes=1))) == 1
    assert len(h.settle(store.read(ledger, 0, 4, max_bytes=200))) == 2
    assert len(h.settle(store.read(ledger, 0, 4, max_bytes=201))) == 3
    assert len(h.settle(store.read(ledger, 0, 4))) == 5
    h.settle(store.append(ledger, b"y" * 5000, 5))
    assert h.settle(store.read(ledger, 5, 5, max_bytes=10)) == [b"y" * 5000]


def test_reads_outside_the_ledger_or_of_no_ledger_fail_clearly(h):
    store = h.open()
    ledger = h.settle(store.create())
    fill(h, store, ledger, 2)
    with pytest.raises(LedgerError, match=r"outside 0\.\.1"):
        h.settle(store.read(ledger, 1, 2))
    with pytest.raises(LedgerError):
        h.settle(store.read(ledger, 1, 0))
    with pytest.raises(NoSuchLedger):
        h.settle(store.read(ledger + 1000, 0, 0))
    with pytest.raises(LedgerError, match="no entry 5"):
        h.settle(store.entry_time(ledger, 5))
    with pytest.raises(NoSuchLedger):
        h.settle(store.append(ledger + 1000, b"x", 0))
    with pytest.raises(NoSuchLedger):
        store.last_entry_id(ledger + 1000)
    with pytest.raises(NoSuchLedger):
        h.settle(store.load(ledger + 1000))


def test_a_refused_append_stores_nothing(h):
    store = h.open()
    ledger = h.settle(store.create())
    fill(h, store, ledger, 2)
    with pytest.raises(LedgerError, match="bad entry"):
        h.settle(store.append(ledger, "text", 0))
    with pytest.raises(LedgerError, match="bad entry or publish time"):
        h.settle(store.append(ledger, b"x", -1))
    assert store.last_entry_id(ledger) == 1
    assert h.settle(store.append(ledger, b"after", 5)) == 2
    assert h.settle(store.read(ledger, 0, 2)) == [entry(0), entry(1), b"after"]


def test_publish_times_and_find_by_time(h):
    store = h.open()
    ledger = h.settle(store.create())
    times = [10, 20, 20, 30, 45, 45, 45, 60]
    for i, t in enumerate(times):
        h.settle(store.append(ledger, entry(i), t))
    assert [h.settle(store.entry_time(ledger, i)) for i in range(len(times))] == times
    assert h.settle(store.find_by_time(ledger, 0)) == 0
    assert h.settle(store.find_by_time(ledger, 20)) == 1
    assert h.settle(store.find_by_time(ledger, 21)) == 3
    assert h.settle(store.find_by_time(ledger, 45)) == 4
    assert h.settle(store.find_by_time(ledger, 60)) == 7
    assert h.settle(store.find_by_time(ledger, 61)) is None
    assert h.settle(store.find_by_time(h.settle(store.create()), 0)) is None


def test_closed_ledgers_refuse_appends_and_stay_readable(h):
    store = h.open()
    ledger = h.settle(store.create())
    fill(h, store, ledger, 5)
    closing = store.close_ledger(ledger)
    assert store.is_closed(ledger)  # refused at once, whatever the close still waits for
    with pytest.raises(LedgerClosed):
        h.settle(store.append(ledger, b"late", 0))
    h.settle(closing)
    h.settle(store.close_ledger(ledger))  # closing again: done already
    assert store.last_entry_id(ledger) == 4
    assert h.settle(store.read(ledger, 0, 4)) == [entry(i) for i in range(5)]
    assert h.settle(store.entry_time(ledger, 4)) == 1004


def test_fence_closes_the_ledger_at_its_last_entry(h):
    store = h.open()
    ledger = h.settle(store.create())
    fill(h, store, ledger, 7)
    h.settle(store.fence(ledger))
    assert store.is_closed(ledger) and store.last_entry_id(ledger) == 6
    with pytest.raises(LedgerClosed):
        h.settle(store.append(ledger, b"late", 0))
    assert h.settle(store.read(ledger, 0, 6)) == [entry(i) for i in range(7)]


def test_deleted_ledgers_are_gone(h):
    store = h.open()
    kept, gone = h.settle(store.create()), h.settle(store.create())
    fill(h, store, gone, 3)
    h.settle(store.delete(gone))
    assert store.list_ledgers() == [kept]
    with pytest.raises(NoSuchLedger):
        store.last_entry_id(gone)
    with pytest.raises(NoSuchLedger):
        h.settle(store.read(gone, 0, 0))
    with pytest.raises(NoSuchLedger):
        h.settle(store.delete(gone))
    with pytest.raises(NoSuchLedger):
        h.settle(store.load(gone))


def test_location_names_where_a_ledger_lives(h):
    store = h.open()
    ledger = h.settle(store.create())
    assert isinstance(store.location(ledger), str) and store.location(ledger)
    with pytest.raises(NoSuchLedger):
        store.location(ledger + 1000)


def test_a_closed_store_refuses_everything(h):
    store = h.open()
    ledger = h.settle(store.create())
    h.settle(store.close())
    with pytest.raises(LedgerError, match="closed"):
        h.settle(store.create())
    with pytest.raises(LedgerError, match="closed"):
        h.settle(store.append(ledger, b"x", 1))
    with pytest.raises(LedgerError, match="closed"):
        h.settle(store.read(ledger, 0, 0))
    with pytest.raises(LedgerError, match="closed"):
        store.list_ledgers()
    h.settle(store.close())  # closing again is harmless


# -- durable stores: what was acknowledged is there after a restart --------------------------


def test_acknowledged_entries_and_closes_survive_a_restart(durable):
    h = durable
    store = h.open()
    closed, open_ = h.settle(store.create()), h.settle(store.create())
    fill(h, store, closed, 6)
    h.settle(store.close_ledger(closed))
    fill(h, store, open_, 4, time_us=5000)
    store = h.reopen(store)
    for ledger in (closed, open_):
        h.settle(store.load(ledger))
    assert store.is_closed(closed) and store.last_entry_id(closed) == 5
    assert store.last_entry_id(open_) == 3
    assert store.ledger_bytes(closed) == sum(len(entry(i)) for i in range(6))
    assert h.settle(store.read(closed, 0, 5)) == [entry(i) for i in range(6)]
    assert h.settle(store.read(open_, 0, 3)) == [entry(i) for i in range(4)]
    assert h.settle(store.entry_time(open_, 3)) == 5003
    # a ledger left open is fenced by whoever takes it over, at its last entry
    h.settle(store.fence(open_))
    assert store.is_closed(open_) and store.last_entry_id(open_) == 3


def test_ids_are_never_reused_after_a_restart(durable):
    h = durable
    store = h.open()
    ids = [h.settle(store.create()) for _ in range(3)]
    h.settle(store.delete(ids[2]))
    store = h.reopen(store)
    assert h.settle(store.create()) > ids[2]


# -- stores shared by several writers: fencing ---------------------------------------------


def test_a_fenced_writer_acknowledges_nothing_more_and_loses_nothing_it_acknowledged(shared):
    h = shared
    writer, taker = h.open(), h.open()
    ledger = h.settle(writer.create())
    assert fill(h, writer, ledger, 20) == list(range(20))
    h.settle(taker.fence(ledger))
    assert taker.is_closed(ledger) and taker.last_entry_id(ledger) == 19
    assert h.settle(taker.read(ledger, 0, 19)) == [entry(i) for i in range(20)]
    with pytest.raises(LedgerFenced):
        h.settle(writer.append(ledger, entry(20), 2000))
    with pytest.raises(LedgerClosed):  # and it takes no more
        h.settle(writer.append(ledger, entry(21), 2001))
    late = h.open()  # whoever loads it later finds it where the recovery closed it
    h.settle(late.load(ledger))
    assert late.is_closed(ledger) and late.last_entry_id(ledger) == 19
    assert h.settle(late.read(ledger, 19, 19)) == [entry(19)]


def test_another_writers_ledger_is_readable_and_never_writable_here(shared):
    h = shared
    writer, reader = h.open(), h.open()
    ledger = h.settle(writer.create())
    fill(h, writer, ledger, 5)
    assert reader.list_ledgers() == []  # nothing known at start
    h.settle(reader.load(ledger))
    assert not reader.is_closed(ledger) and reader.last_entry_id(ledger) == 4
    assert h.settle(reader.read(ledger, 0, 4)) == [entry(i) for i in range(5)]
    with pytest.raises(LedgerClosed):
        h.settle(reader.append(ledger, b"x", 1))


def test_ids_of_writers_sharing_storage_never_collide(shared):
    h = shared
    a, b = h.open(), h.open()
    ids = [h.settle(s.create()) for s in (a, b, a, b, a)]
    assert len(set(ids)) == 5


def test_fencing_twice_keeps_the_first_recovery(shared):
    h = shared
    writer, first, second = h.open(), h.open(), h.open()
    ledger = h.settle(writer.create())
    fill(h, writer, ledger, 4)
    h.settle(first.fence(ledger))
    h.settle(second.fence(ledger))
    assert second.is_closed(ledger) and second.last_entry_id(ledger) == 3


def test_fencing_a_missing_ledger_says_so(h):
    store = h.open()
    with pytest.raises(NoSuchLedger):
        h.settle(store.fence(12345678))
