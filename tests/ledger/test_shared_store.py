"""SharedLedgerStore: several hubs' stores over one storage root (here: several stores in
one process, each as a hub would hold it): ids never shared, ledgers of others loaded
when used, and fencing: a writer whose ledger another store took over acknowledges
nothing more, and nothing it acknowledged before is lost."""

import os

import pytest
from zope.interface.verify import verifyObject

from hedwig.ledger.fencing import read_closed
from hedwig.ledger.interface import ILedgerStore, LedgerClosed, LedgerFenced, NoSuchLedger
from hedwig.ledger.layout import CLOSED_FILE, FENCE_FILE, ledger_dir_name
from hedwig.ledger.mmap_ledger import ID_RESERVATION
from hedwig.ledger.shared_store import SharedLedgerStore
from hedwig.testing.deferreds import fired
from hedwig.testing.reactors import InlineThreadsReactor, QueuedThreadsReactor
from tests.ledger.conftest import SMALL


@pytest.fixture
def hubs(tmp_path):
    """hubs(name, **options) -> a SharedLedgerStore over tmp_path/root, as hub `name`."""
    stores = []

    def open_(name, reactor=None, **options):
        settings = dict(SMALL, **options)
        store = SharedLedgerStore(
            tmp_path / "root", reactor=reactor or InlineThreadsReactor(), writer=name, **settings
        )
        stores.append(store)
        return store

    yield open_
    for store in stores:
        store.close()


def entry(i: int) -> bytes:
    return b"entry %06d " % i * (1 + i % 7)


def append(store, ledger, i):
    return fired(store.append(ledger, entry(i), 1000 + i))


def test_provides_the_interface(hubs):
    assert verifyObject(ILedgerStore, hubs("a:1"))


def test_ids_are_reserved_in_blocks_no_two_stores_share(hubs):
    a, b = hubs("a:1"), hubs("b:2")
    first_a, first_b, second_a = fired(a.create()), fired(b.create()), fired(a.create())
    assert len({first_a, first_b, second_a}) == 3
    assert second_a == first_a + 1  # within a's block
    assert abs(first_b - first_a) >= ID_RESERVATION  # b reserved the next block
    c = hubs("c:3")  # a store opened later reserves after both
    assert fired(c.create()) >= max(first_a, first_b) + ID_RESERVATION


def test_another_hubs_ledger_is_loaded_when_used_and_never_writable(hubs):
    a, b = hubs("a:1"), hubs("b:2")
    ledger = fired(a.create())
    for i in range(5):
        assert append(a, ledger, i) == i
    assert b.list_ledgers() == []  # nothing loaded at start
    assert fired(b.read(ledger, 0, 4)) == [entry(i) for i in range(5)]
    assert not b.is_closed(ledger)
    with pytest.raises(LedgerClosed):  # LedgerClosed: not b's to write
        fired(b.append(ledger, b"x", 1))
    with pytest.raises(NoSuchLedger):
        fired(b.read(ledger + 100, 0, 0))


def test_a_fenced_writer_acknowledges_nothing_more_and_loses_nothing_it_acknowledged(hubs):
    a, b = hubs("a:1"), hubs("b:2")
    ledger = fired(a.create())
    acknowledged = [append(a, ledger, i) for i in range(20)]
    assert acknowledged == list(range(20))
    fired(b.fence(ledger))  # b takes the topic over
    assert b.is_closed(ledger) and b.last_entry_id(ledger) == 19
    assert fired(b.read(ledger, 0, 19)) == [entry(i) for i in range(20)]
    # a wakes: its next append is stored in its mapping but never acknowledged
    with pytest.raises(LedgerFenced, match="fenced"):
        fired(a.append(ledger, entry(20), 2000))
    with pytest.raises(LedgerClosed):  # and it takes no more
        fired(a.append(ledger, entry(21), 2001))
    fired(a.close_ledger(ledger))  # its close neither cuts the ledger nor moves its end
    closed = read_closed(b.ledger_path(ledger))
    held = sum(len(entry(i)) for i in range(20))
    assert (closed.count, closed.data_bytes, closed.fenced_by) == (20, held, "b:2")
    c = hubs("c:3")  # any hub loading it later stops where the recovery did
    assert c.is_closed(ledger) and c.last_entry_id(ledger) == 19
    assert fired(c.read(ledger, 19, 19)) == [entry(19)]


def test_a_cleanly_closed_ledger_is_taken_over_at_its_count(hubs):
    a, b = hubs("a:1"), hubs("b:2")
    ledger = fired(a.create())
    for i in range(3):
        append(a, ledger, i)
    fired(a.close_ledger(ledger))
    fired(b.fence(ledger))
    assert b.last_entry_id(ledger) == 2
    assert os.path.exists(os.path.join(b.ledger_path(ledger), FENCE_FILE))


def test_fencing_twice_keeps_the_first_recovery(hubs):
    a, b, c = hubs("a:1"), hubs("b:2"), hubs("c:3")
    ledger = fired(a.create())
    for i in range(4):
        append(a, ledger, i)
    fired(b.fence(ledger))
    fired(c.fence(ledger))
    assert read_closed(b.ledger_path(ledger)).fenced_by == "b:2"
    assert c.last_entry_id(ledger) == 3


def test_fencing_a_missing_ledger_says_so(hubs):
    with pytest.raises(NoSuchLedger):
        fired(hubs("b:2").fence(12345))


def test_under_fsync_always_the_fence_file_alone_stops_acknowledgements(hubs):
    """Across machines a writer's mapping does not see the header word another machine
    wrote: the fence file, checked by every group commit round after its fsyncs, does."""
    reactor = QueuedThreadsReactor()
    a = hubs("a:1", reactor=reactor, fsync="always")
    ledger = fired(a.create())
    reactor.run_threads()
    first = a.append(ledger, entry(0), 1000)
    reactor.run_threads()
    assert fired(first) == 0
    directory = os.path.join(a._dir, ledger_dir_name(ledger))
    with open(os.path.join(directory, FENCE_FILE), "w") as fence:  # a remote recoverer's mark
        fence.write("{}")
    second = a.append(ledger, entry(1), 1001)
    reactor.run_threads()
    with pytest.raises(LedgerFenced):
        fired(second)
    assert not os.path.exists(os.path.join(directory, CLOSED_FILE))


def test_append_now_reads_the_fence_word_as_append_does(hubs):
    """(The topic log's common append asks append_now: a fenced ledger refuses it too.)"""
    a, b = hubs("a:1"), hubs("b:2")
    ledger = fired(a.create())
    assert fired(a.append_now(ledger, entry(0), 1000)) == 0  # (append's Deferred: the fence is read)
    fired(b.fence(ledger))
    with pytest.raises(LedgerFenced, match="fenced"):
        fired(a.append_now(ledger, entry(1), 1001))
    with pytest.raises(LedgerClosed):
        fired(a.append_now(ledger, entry(2), 1002))
