"""Moments a SIGKILL of the writer can land on, reached on purpose rather than by chance
(test_crash.py finds them at random): the writer's store is abandoned there, with its
thread work (page preparation, fsyncs, a closing ledger's cut) still queued and never
run, as a killed process leaves it; the page cache keeps every store it made. The next
writer opens the directory, recovers and goes on; every acknowledged entry is still
there, entry by entry, whichever fsync policy acknowledged it.
"""

import os

from twisted.logger import capturedLogs

from hedwig.ledger.layout import NEXT_ID_FILE
from hedwig.ledger.mmap_ledger import ID_RESERVATION
from hedwig.ledger.mmap_store import MmapLedgerStore
from hedwig.testing.deferreds import fired as result_of
from hedwig.testing.reactors import InlineThreadsReactor, QueuedThreadsReactor
from tests.ledger.conftest import SMALL
from tests.ledger.test_store import entry


class Writer:
    """A store over `directory` whose thread work waits until the test runs it: what is
    still queued when the test stops using the store is what a kill cut short."""

    def __init__(self, directory, fsync: str):
        self.reactor = QueuedThreadsReactor()
        with capturedLogs() as self.events:
            self.store = MmapLedgerStore(directory, reactor=self.reactor, fsync=fsync, **SMALL)

    def append(self, ledger: int, first: int, count: int) -> list:
        """Append entries first..first+count-1; the Deferreds' outcomes, as they fire."""
        acks = []
        for i in range(first, first + count):
            self.store.append(ledger, entry(i), 1000 + i).addBoth(acks.append)
        return acks

    def run_thread_work(self) -> None:
        self.reactor.run_threads()

    def cuts(self) -> list:
        return [e for e in self.events if "cut back" in e.get("log_format", "")]


def reopened(directory) -> MmapLedgerStore:
    """The store a reader opens after the last kill (closed by the caller)."""
    return MmapLedgerStore(directory, reactor=InlineThreadsReactor(), **SMALL)


def assert_holds(directory, ledger: int, count: int) -> None:
    store = reopened(directory)
    try:
        assert store.last_entry_id(ledger) == count - 1
        assert result_of(store.read(ledger, 0, count - 1)) == [entry(i) for i in range(count)]
    finally:
        result_of(store.close())


def test_writers_killed_at_a_new_ledgers_first_entries_then_mid_round_then_mid_append(tmp_path):
    """The sequence of the crash test's runs 48 to 50: a ledger created and its first two
    entries acknowledged (fsync never) before any preparation ran; a writer (always)
    goes on, killed with a group commit round and preparation queued; a third (never)
    goes on, killed with preparation queued; every acknowledged entry is kept."""
    directory = tmp_path / "ledgers"
    first = Writer(directory, "never")
    ledger = result_of(first.store.create())
    assert first.append(ledger, 0, 2) == [0, 1]
    assert first.reactor.queued  # the new ledger's page preparation, never run

    second = Writer(directory, "always")
    assert not second.cuts()
    assert second.store.last_entry_id(ledger) == 1
    acks = second.append(ledger, 2, 8)
    second.run_thread_work()  # one round: entries 2..9 acknowledged
    assert acks == list(range(2, 10))
    acks = second.append(ledger, 10, 34)
    assert second.reactor.queued and acks == []  # killed while their round is queued

    third = Writer(directory, "never")
    assert not third.cuts()
    assert third.store.last_entry_id(ledger) == 43  # unacknowledged, but whole: kept
    assert third.append(ledger, 44, 12) == list(range(44, 56))
    assert third.reactor.queued

    assert_holds(directory, ledger, 56)


def test_a_writer_killed_while_its_first_store_prepares_pages_ahead(tmp_path):
    """Killed once the preparation of a new ledger's pages has run ahead (later index
    pages created, zeroed): the next writer's appends, over those pages, are all kept."""
    directory = tmp_path / "ledgers"
    first = Writer(directory, "never")
    ledger = result_of(first.store.create())
    assert first.append(ledger, 0, 3) == [0, 1, 2]
    first.run_thread_work()
    path = first.store.ledger_path(ledger)
    assert len([name for name in os.listdir(path) if name.startswith("i")]) > 1

    second = Writer(directory, "never")
    assert second.append(ledger, 3, 40) == list(range(3, 43))
    second.run_thread_work()
    assert_holds(directory, ledger, 43)


def test_a_roll_killed_before_the_closing_ledgers_cut_leaves_it_open_and_whole(tmp_path):
    """Killed after close_ledger was called (appends refused in memory) but before its
    sync and cut ran: on disk the ledger is open and whole; the next writer goes on with
    it, closes it, and a later reader finds every entry."""
    directory = tmp_path / "ledgers"
    first = Writer(directory, "never")
    ledger = result_of(first.store.create())
    assert first.append(ledger, 0, 30) == list(range(30))
    closing = []
    first.store.close_ledger(ledger).addBoth(closing.append)
    assert closing == [] and first.reactor.queued

    second = Writer(directory, "never")
    assert not second.store.is_closed(ledger)
    assert second.append(ledger, 30, 5) == list(range(30, 35))
    done = []
    second.store.close_ledger(ledger).addBoth(done.append)
    second.run_thread_work()
    assert done == [None]
    assert_holds(directory, ledger, 35)


def test_ledger_ids_are_never_handed_out_twice_across_kills(tmp_path):
    """Ids come in blocks reserved (durably) before the first is used: a writer killed
    after creating ledgers, or in the middle of writing the next reservation (its
    staging file left half written), never makes the next writer reuse an id."""
    directory = tmp_path / "ledgers"
    first = Writer(directory, "never")
    handed_out = [result_of(first.store.create()) for _ in range(3)]
    first.append(handed_out[-1], 0, 2)

    second = Writer(directory, "never")
    handed_out.append(result_of(second.store.create()))
    assert handed_out[-1] >= handed_out[0] + ID_RESERVATION  # above the first's whole block
    with open(os.path.join(directory, NEXT_ID_FILE + ".tmp"), "w") as f:
        f.write("1")  # the next reservation, cut short before its rename

    third = Writer(directory, "never")
    handed_out.extend(result_of(third.store.create()) for _ in range(2))
    assert len(set(handed_out)) == len(handed_out)
    assert handed_out[-2] >= handed_out[3] + ID_RESERVATION
    assert sorted(third.store.list_ledgers()) == sorted(handed_out)
