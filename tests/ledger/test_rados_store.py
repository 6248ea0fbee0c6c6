"""RadosLedgerStore beyond the contract suite (test_contract.py): the layout in the pool
(a head and segments rolled at segment_bytes), group commit and the in-flight bound, a
roll racing a fence, a writer killed mid-write, damage, and a cluster that cannot be
reached. On the session's cluster (tests/conftest.py: ceph), a namespace per test."""

import errno
import itertools
import os
import signal
import subprocess
import sys
import time

import pytest

from hedwig.ledger import rados_layout as layout
from hedwig.ledger.interface import EntryDamaged, LedgerClosed, LedgerError, LedgerFenced
from hedwig.ledger.rados_client import RadosOpError
from hedwig.ledger.rados_store import RadosLedgerStore
from hedwig.testing.reactors import PumpedReactor

_namespaces = itertools.count(1)
CHILD = os.path.join(os.path.dirname(__file__), "rados_crash_child.py")


def entry(i: int, size: int = 3000) -> bytes:
    return (b"%07d|" % i * (size // 8 + 1))[:size]


@pytest.fixture
def namespace():
    return f"store-{os.getpid()}-{next(_namespaces)}"


@pytest.fixture
def open_store(ceph, namespace):
    """open_store(reactor=None, **options) -> a connected RadosLedgerStore (and its
    reactor); closed after the test."""
    opened = []

    def open_(reactor=None, **options):
        reactor = reactor or PumpedReactor()
        store = RadosLedgerStore(
            reactor=reactor, conf_file=ceph.conf_file, pool=ceph.pool, namespace=namespace, **options
        )
        reactor.run_until(store.connect())
        opened.append((store, reactor))
        return store, reactor

    yield open_
    for store, reactor in opened:
        reactor.run_until(store.close())


def test_a_ledger_is_a_head_and_segments_rolled_at_segment_bytes(ceph, namespace, open_store):
    store, reactor = open_store(segment_bytes=16384)
    ledger = reactor.run_until(store.create())
    acked = [reactor.run_until(store.append(ledger, entry(i), 1000 + i)) for i in range(40)]
    assert acked == list(range(40))
    found = ceph.objects(namespace)
    segments = sorted(name for name in found if name.startswith(layout.head_name(ledger) + "."))
    assert layout.head_name(ledger) in found and len(segments) >= 40 * 3000 // 16384
    assert all(0 < found[name] <= 16384 for name in segments)
    head = ceph.omap(layout.head_name(ledger), (layout.SEGMENTS, layout.STATE, layout.EPOCH), namespace)
    assert len(layout.decode_segments(head[layout.SEGMENTS])) == len(segments)
    assert head[layout.STATE] == b"open"
    # every entry is found by its index record, in the segment its head entry names
    last = segments[-1]
    tail = layout.parse_tail(ceph.omap(last, (layout.TAIL,), namespace)[layout.TAIL])
    assert tail[0] == 40 and tail[2] == 1039
    reader, reader_reactor = open_store()
    assert reader_reactor.run_until(reader.read(ledger, 0, 39)) == [entry(i) for i in range(40)]
    assert [reader_reactor.run_until(reader.read(ledger, i, i)) for i in (17, 3, 39)] == [
        [entry(17)],
        [entry(3)],
        [entry(39)],
    ]
    assert reader_reactor.run_until(reader.find_by_time(ledger, 1020)) == 20
    assert "RADOS pool" in reader.location(ledger) and namespace in reader.location(ledger)


def test_entries_that_arrive_together_go_in_one_write(open_store):
    store, reactor = open_store()
    ledger = reactor.run_until(store.create())
    appends = [store.append(ledger, entry(i, 100), i) for i in range(100)]  # within one turn
    assert [reactor.run_until(d) for d in appends] == list(range(100))
    assert store.write_stats.writes == 1 and store.write_stats.entries == 100
    later = [store.append(ledger, entry(i, 100), i) for i in range(100, 150)]
    assert [reactor.run_until(d) for d in later] == list(range(100, 150))
    assert store.write_stats.writes == 2
    assert reactor.run_until(store.read(ledger, 0, 149)) == [entry(i, 100) for i in range(150)]


def test_writes_in_flight_never_exceed_max_in_flight_and_all_complete(open_store):
    store, reactor = open_store(max_in_flight=2)
    ledgers = [reactor.run_until(store.create()) for _ in range(12)]
    appends = [store.append(ledger, entry(n, 200), n) for n, ledger in enumerate(ledgers)]
    assert [reactor.run_until(d) for d in appends] == [0] * 12
    assert store.write_stats.writes == 12
    assert store.writes_in_flight_high_water == 2  # (and not more)


def test_a_roll_racing_a_fence_acknowledges_only_what_the_recovery_keeps(open_store):
    """The writer records a new segment in the head; before its first write to it, another
    hub fences the ledger: the fence creates the segment with its epoch, the writer's
    exclusive create fails, and the entry is never acknowledged; the recovered ledger
    holds exactly what the writer acknowledged."""
    writer, writer_reactor = open_store(segment_bytes=8192)
    taker, taker_reactor = open_store()
    ledger = writer_reactor.run_until(writer.create())
    acked = [writer_reactor.run_until(writer.append(ledger, entry(i), i)) for i in range(2)]
    rolling = writer.append(ledger, entry(2), 2)  # does not fit in segment 0: a roll first
    writer_reactor.advance(0)  # the write turn: the roll's head update goes out
    deadline = time.monotonic() + 30
    while writer_reactor._calls.empty():  # its acknowledgement is back, not yet handled
        assert time.monotonic() < deadline, "the roll was never acknowledged"
        time.sleep(0.01)
    taker_reactor.run_until(taker.fence(ledger))
    assert taker.last_entry_id(ledger) == 1 and taker.is_closed(ledger)
    with pytest.raises(LedgerFenced):
        writer_reactor.run_until(rolling)  # (its create of segment 1 failed: the fence made it)
    with pytest.raises(LedgerClosed):
        writer_reactor.run_until(writer.append(ledger, entry(3), 3))
    assert acked == [0, 1]
    assert taker_reactor.run_until(taker.read(ledger, 0, 1)) == [entry(0), entry(1)]


def test_a_writer_killed_mid_write_is_recovered_with_every_acknowledged_entry(ceph, namespace, open_store):
    child = subprocess.Popen(
        [sys.executable, CHILD, ceph.conf_file, ceph.pool, namespace],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ledger = int(child.stdout.readline())
        acknowledged = []
        while len(acknowledged) < 300:
            line = child.stdout.readline()
            assert line, child.stderr.read()
            acknowledged.append(int(line))
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    taker, reactor = open_store()
    reactor.run_until(taker.fence(ledger))
    last = taker.last_entry_id(ledger)
    assert acknowledged == list(range(len(acknowledged)))
    assert last >= acknowledged[-1]
    assert reactor.run_until(taker.read(ledger, 0, last)) == [entry(i, 500) for i in range(last + 1)]


def test_a_damaged_frame_is_reported_and_the_entries_before_it_are_served(ceph, namespace, open_store):
    store, reactor = open_store()
    ledger = reactor.run_until(store.create())
    for i in range(10):
        reactor.run_until(store.append(ledger, entry(i, 1000), i))
    reactor.run_until(store.close_ledger(ledger))
    # a byte changed inside entry 6
    ceph.write(layout.segment_name(ledger, 0), b"\xff", 6 * (layout.FRAME_BYTES + 1000) + 100, namespace)
    reader, reader_reactor = open_store()
    assert reader_reactor.run_until(reader.read(ledger, 0, 9)) == [entry(i, 1000) for i in range(6)]
    with pytest.raises(EntryDamaged, match="CRC"):
        reader_reactor.run_until(reader.read(ledger, 6, 9))
    assert reader_reactor.run_until(reader.read(ledger, 7, 9)) == [entry(i, 1000) for i in range(7, 10)]


def test_a_cluster_that_cannot_be_reached_fails_the_connect(ceph, tmp_path):
    unreachable = tmp_path / "ceph.conf"
    with open(ceph.conf_file) as conf:
        text = conf.read().replace(f"127.0.0.1:{ceph.port}]", "127.0.0.1:9]")  # nothing listens there
    unreachable.write_text(text)
    reactor = PumpedReactor()
    store = RadosLedgerStore(reactor=reactor, conf_file=str(unreachable), pool=ceph.pool, op_timeout_s=2)
    with pytest.raises(RadosOpError, match="connecting to the Ceph cluster") as raised:
        reactor.run_until(store.connect(), timeout_s=60)  # (an answer, not a hang)
    assert raised.value.errno in (errno.ETIMEDOUT, errno.ENOENT, errno.EIO, errno.ECONNREFUSED)


def test_a_pool_that_does_not_exist_is_named(ceph):
    reactor = PumpedReactor()
    store = RadosLedgerStore(reactor=reactor, conf_file=ceph.conf_file, pool="no-such-pool", op_timeout_s=5)
    with pytest.raises(RadosOpError, match="no pool 'no-such-pool'"):
        reactor.run_until(store.connect())


def test_a_sequential_reader_waits_for_the_pool_once_per_read_ahead_not_per_read(open_store):
    store, reactor = open_store()
    ledger = reactor.run_until(store.create())
    appends = [store.append(ledger, entry(i, 10_000), i) for i in range(300)]  # 3 MB
    [reactor.run_until(d) for d in appends]
    reader, reader_reactor = open_store()
    got = []
    for first in range(0, 300, 10):  # as the cache's read-ahead reads: 10 entries at a time
        got += reader_reactor.run_until(reader.read(ledger, first, first + 9, 4 << 20))
    assert got == [entry(i, 10_000) for i in range(300)]
    assert reader.reads <= 5  # (30 reads asked: the index record, then 2 MiB at a time)


def test_a_reader_at_the_end_of_a_ledger_being_written_reads_on_as_it_grows(open_store):
    """What was read ahead past the end came back short: the entries written since are
    read afresh, not taken for damage."""
    writer, reactor = open_store()
    ledger = reactor.run_until(writer.create())
    for i in range(5):
        reactor.run_until(writer.append(ledger, entry(i, 1000), i))
    # entries 3 and 4 are read with these, and a read ahead of them starts: at the end
    assert reactor.run_until(writer.read(ledger, 0, 2)) == [entry(i, 1000) for i in range(3)]
    reactor.run_until(writer.append(ledger, entry(5, 1000), 5))  # (once that read came back)
    for i in range(6, 12):
        reactor.run_until(writer.append(ledger, entry(i, 1000), i))
    assert reactor.run_until(writer.read(ledger, 3, 11)) == [entry(i, 1000) for i in range(3, 12)]


def test_a_ledger_made_under_a_chosen_id_and_ids_handed_out_above_a_raised_counter(open_store):
    """What `hedwig migrate` needs: a ledger created under the id its metadata names, an
    id taken already refused, and the id counter raised so that later ledgers (of this
    store or another on the namespace) get ids above every one copied."""
    store, reactor = open_store()
    reactor.run_until(store.reserve_ids_from(500))
    reactor.run_until(store.create_as(42))
    assert reactor.run_until(store.append(42, b"copied", 7)) == 0
    reactor.run_until(store.close_ledger(42))
    with pytest.raises(LedgerError, match="exists already"):
        reactor.run_until(store.create_as(42))
    reactor.run_until(store.reserve_ids_from(10))  # (lower than the counter: it stays)
    other, other_reactor = open_store()
    assert other_reactor.run_until(other.create()) >= 500
    assert reactor.run_until(store.create()) >= 500
    assert other_reactor.run_until(other.read(42, 0, 0)) == [b"copied"]
