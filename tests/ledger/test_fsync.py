"""The fsync policies: group commit for "always", a timer for "interval", nothing for
"never"; acknowledgements in append order; a failed fsync fails what it covered.

Thread work is queued (QueuedThreadsReactor) so a test can hold an fsync "running" and
append meanwhile; the fsyncs themselves are real. One test runs on the real reactor with
its thread pool."""

import errno
import os

import pytest
from twisted.internet import defer

from hedwig.ledger import mmap_syncing
from hedwig.ledger.interface import LedgerError
from hedwig.ledger.layout import HEADER_BYTES, HeaderFields
from hedwig.ledger.mmap_store import MmapLedgerStore
from hedwig.ledger.mmap_syncing import LedgerSyncer
from hedwig.testing.deferreds import fired as result_of
from hedwig.testing.reactors import QueuedThreadsReactor
from tests import trial as unittest
from tests.ledger.conftest import SMALL
from tests.ledger.test_store import entry


def fired(d):
    box = []
    d.addBoth(box.append)
    return box


def is_sync(work) -> bool:
    """Whether queued thread work is one file's fsync of a group commit round."""
    target = getattr(work[0], "target", None)
    return target is LedgerSyncer._sync_one


def queued_syncs(reactor) -> int:
    return sum(1 for w in reactor.queued if is_sync(w))


def run_syncs(reactor, rounds=None) -> int:
    """Run queued group commit rounds (the first `rounds`, or all, including the rounds
    they start): a round is every file fsync queued at once."""
    ran = 0
    while rounds is None or ran < rounds:
        round_ = [w for w in reactor.queued if is_sync(w)]
        if not round_:
            break
        for work in round_:
            reactor.queued.remove(work)
            f, args, kwargs = work
            f(*args, **kwargs)
        ran += 1
    return ran


@pytest.fixture
def synced_paths(monkeypatch):
    """Every path the store fsyncs for appends, in order (the fsyncs still happen)."""
    paths = []
    real = mmap_syncing.sync_path

    def recording(path):
        paths.append(path)
        real(path)

    monkeypatch.setattr(mmap_syncing, "sync_path", recording)
    return paths


def test_always_acknowledges_after_the_fsync_and_groups_what_came_meanwhile(open_store, synced_paths):
    reactor = QueuedThreadsReactor()
    store = open_store(reactor=reactor, fsync="always")
    ledger = result_of(store.create())
    first = fired(store.append(ledger, entry(0), 1))
    assert first == []  # stored, readable, but not acknowledged before its fsync
    assert result_of(store.read(ledger, 0, 0)) == [entry(0)]
    # While that fsync runs, more appends arrive: they wait for the next one, together.
    later = [fired(store.append(ledger, entry(i), i)) for i in range(1, 6)]
    assert run_syncs(reactor, 1) == 1
    assert first == [0]
    assert all(box == [] for box in later)
    assert queued_syncs(reactor) >= 2  # their data and index pages ...
    assert run_syncs(reactor) == 1  # ... in one round for all five
    assert [box for box in later] == [[1], [2], [3], [4], [5]]
    assert store.syncs == 2
    path = store.ledger_path(ledger)
    # The first sync covered the new ledger's directory entry, its pages and header.
    for name in ("d000000", "i000000", "header"):
        assert os.path.join(path, name) in synced_paths
    assert path in synced_paths and os.path.dirname(path) in synced_paths


def test_acknowledgements_keep_append_order_across_ledgers(open_store):
    reactor = QueuedThreadsReactor()
    store = open_store(reactor=reactor, fsync="always")
    a, b = result_of(store.create()), result_of(store.create())
    order = []
    for i in range(6):
        ledger = (a, b)[i % 2]
        store.append(ledger, entry(i), i).addCallback(lambda e, tag=(ledger, i): order.append(tag))
    run_syncs(reactor)
    assert [i for _ledger, i in order] == list(range(6))


def test_close_ledger_waits_for_the_appends_before_it(open_store):
    reactor = QueuedThreadsReactor()
    store = open_store(reactor=reactor, fsync="always")
    ledger = result_of(store.create())
    events = []
    store.append(ledger, entry(0), 0).addCallback(lambda _: events.append("append"))
    store.close_ledger(ledger).addCallback(lambda _: events.append("closed"))
    assert store.is_closed(ledger)  # refuses appends at once ...
    assert events == []  # ... but is durable only after the fsync and the cut
    reactor.run_threads()
    assert events == ["append", "closed"]


def test_a_second_close_fires_with_the_first(open_store):
    reactor = QueuedThreadsReactor()
    store = open_store(reactor=reactor, fsync="never")
    ledger = result_of(store.create())
    store.append(ledger, entry(0), 0)
    first = fired(store.close_ledger(ledger))
    second = fired(store.close_ledger(ledger))
    assert first == second == []
    reactor.run_threads()
    assert first == second == [None]
    assert fired(store.close_ledger(ledger)) == [None]


def test_a_failed_fsync_fails_what_it_covered_and_stops_the_ledger(open_store, monkeypatch):
    reactor = QueuedThreadsReactor()
    store = open_store(reactor=reactor, fsync="always")
    ledger = result_of(store.create())
    result = fired(store.append(ledger, entry(0), 0))

    def broken_disk(path):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(mmap_syncing, "sync_path", broken_disk)
    run_syncs(reactor)
    (failure,) = result
    assert failure.check(LedgerError) and "fsync failed" in str(failure.value)
    with pytest.raises(LedgerError, match="takes no more appends"):
        result_of(store.append(ledger, entry(1), 1))
    monkeypatch.undo()
    # Reopening recovers the ledger (the entry is there: only its durability was unknown).
    reactor.run_threads()
    store.close()
    reactor.run_threads()
    reopened = open_store(reactor=QueuedThreadsReactor(), fsync="never")
    assert result_of(reopened.read(ledger, 0, 0)) == [entry(0)]
    assert result_of(reopened.append(ledger, entry(1), 1)) == 1


def test_interval_acknowledges_at_once_and_syncs_on_the_timer(open_store, synced_paths):
    reactor = QueuedThreadsReactor()
    store = open_store(reactor=reactor, fsync="interval", fsync_interval_ms=250)
    ledger = result_of(store.create())
    assert result_of(store.append(ledger, entry(0), 0)) == 0
    reactor.advance(0.2)
    assert not queued_syncs(reactor)
    reactor.advance(0.05)
    assert run_syncs(reactor) == 1
    assert os.path.join(store.ledger_path(ledger), "d000000") in synced_paths
    reactor.advance(0.25)  # nothing stored since: no sync
    assert not queued_syncs(reactor)
    store.append(ledger, entry(1), 1)
    reactor.advance(0.25)
    assert run_syncs(reactor) == 1
    assert store.syncs == 2


def test_never_syncs_nothing_for_appends_but_closes_durably(open_store, synced_paths):
    reactor = QueuedThreadsReactor()
    store = open_store(reactor=reactor, fsync="never")
    ledger = result_of(store.create())
    for i in range(20):
        assert result_of(store.append(ledger, entry(i), i)) == i
    reactor.advance(10)
    assert not queued_syncs(reactor)
    closed = fired(store.close_ledger(ledger))
    reactor.run_threads()
    assert closed == [None]
    assert os.path.join(store.ledger_path(ledger), "d000000") in synced_paths


class RealThreadsGroupCommit(unittest.TestCase):
    """Eight appenders on the real reactor and thread pool, fsync "always"."""

    @defer.inlineCallbacks
    def test_concurrent_appenders_share_fsyncs(self):
        from twisted.internet import reactor

        directory = self.mktemp()
        store = MmapLedgerStore(directory, reactor=reactor, fsync="always", **SMALL)
        ledgers = [result_of(store.create()) for _ in range(2)]
        acked = []

        @defer.inlineCallbacks
        def appender(n):
            for i in range(25):
                ledger = ledgers[n % 2]
                entry_id = yield store.append(ledger, b"%d:%d" % (n, i), i)
                acked.append((ledger, entry_id))

        yield defer.gatherResults([appender(n) for n in range(8)])
        assert len(acked) == 200
        # The first append's fsync starts alone; after it, the others wait in groups.
        assert store.syncs <= 200 // 2
        yield store.close()
        reopened = MmapLedgerStore(directory, reactor=reactor, **SMALL)
        try:
            for ledger in ledgers:
                assert reopened.last_entry_id(ledger) == 99
                got = sorted(result_of(reopened.read(ledger, 0, 99)))
                assert len(set(got)) == 100
        finally:
            yield reopened.close()


def test_closing_the_store_leaves_final_counts_in_the_headers(open_store):
    store = open_store(fsync="never")
    ledgers = [result_of(store.create()) for _ in range(2)]
    for i in range(30):
        result_of(store.append(ledgers[i % 2], entry(i), i))
    paths = [store.ledger_path(ledger) for ledger in ledgers]
    result_of(store.close())
    for path in paths:
        with open(os.path.join(path, "header"), "rb") as f:
            header = HeaderFields(f.read(HEADER_BYTES))
        assert header.committed_count == header.durable_count == 15
