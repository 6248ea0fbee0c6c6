"""A ledger's fixed cost is small: pages are allocated as they fill (a one-entry ledger
holds a block of data and a block of index, not megabytes), and the headers of idle
writable ledgers are unmapped beyond max_open_ledgers, so thousands of ledgers do not
hold a descriptor each. Appends to an unmapped ledger map its header again."""

import os

from hedwig.config.settings import MIB
from hedwig.ledger.layout import HEADER_FILE, data_page_name, index_page_name
from hedwig.ledger.mmap_ledger import MAX_DATA_LOOKAHEAD
from hedwig.ledger.mmap_store import MmapLedgerStore
from hedwig.testing.deferreds import fired as result_of
from hedwig.testing.reactors import InlineThreadsReactor


def allocated(path) -> int:
    return os.stat(path).st_blocks * 512


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_one_entry_ledger_allocates_a_block_of_each_kind(tmp_path):
    store = MmapLedgerStore(tmp_path, reactor=InlineThreadsReactor(), page_bytes=64 * MIB)
    ledger = result_of(store.create())
    result_of(store.append(ledger, b"x" * 100, 1))
    path = store.ledger_path(ledger)
    data = allocated(os.path.join(path, data_page_name(0)))
    index = allocated(os.path.join(path, index_page_name(0)))
    assert 0 < data <= 8192 and 0 < index <= 8192, (data, index)
    assert allocated(os.path.join(path, HEADER_FILE)) <= 4096
    result_of(store.close())


def test_allocation_grows_with_the_ledger_and_stays_ahead_of_the_writer(tmp_path):
    store = MmapLedgerStore(tmp_path, reactor=InlineThreadsReactor(), page_bytes=64 * MIB)
    ledger = result_of(store.create())
    payload = os.urandom(10_000)
    for i in range(400):  # 4 MB
        result_of(store.append(ledger, payload, i))
    data = allocated(os.path.join(store.ledger_path(ledger), data_page_name(0)))
    assert 4_000_000 <= data <= 4_000_000 + MAX_DATA_LOOKAHEAD + MIB, data
    assert result_of(store.read(ledger, 399, 399)) == [payload]
    result_of(store.close())


def test_idle_ledgers_hold_no_descriptor_beyond_max_open_ledgers(tmp_path):
    store = MmapLedgerStore(
        tmp_path, reactor=InlineThreadsReactor(), page_bytes=8192, max_mapped_pages=4, max_open_ledgers=8
    )
    before = open_descriptors()
    ledgers = [result_of(store.create()) for _ in range(200)]
    for i, ledger in enumerate(ledgers):
        result_of(store.append(ledger, b"entry %d" % i, i))
    assert store.mapped_headers <= 8
    assert open_descriptors() - before <= 8 + 4 + 2
    # Every ledger still takes appends (its header mapped again) and reads back.
    for i, ledger in enumerate(ledgers):
        result_of(store.append(ledger, b"again %d" % i, 1000 + i))
    for i, ledger in enumerate(ledgers):
        assert result_of(store.read(ledger, 0, 1)) == [b"entry %d" % i, b"again %d" % i]
    result_of(store.close())
    reopened = MmapLedgerStore(tmp_path, reactor=InlineThreadsReactor(), page_bytes=8192, max_open_ledgers=8)
    assert all(reopened.last_entry_id(ledger) == 1 for ledger in ledgers)
    result_of(reopened.close())


def test_a_busy_ledger_keeps_its_header_among_many_new_ones(tmp_path):
    store = MmapLedgerStore(tmp_path, reactor=InlineThreadsReactor(), page_bytes=8192, max_open_ledgers=4)
    busy = result_of(store.create())
    result_of(store.append(busy, b"first", 0))
    maps = store._headers.maps_made
    for i in range(100):
        other = result_of(store.create())
        result_of(store.append(other, b"x", i))
        result_of(store.append(busy, b"busy %d" % i, i))
    # Created ledgers map their own headers; the busy one is mapped again rarely (a
    # first-in first-out set of four would map it again every fourth new ledger).
    assert store._headers.maps_made - maps - 100 <= 10, store._headers.maps_made - maps - 100
    result_of(store.close())
