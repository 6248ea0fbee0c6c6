"""MmapLedgerStore beyond the contract suite (test_contract.py): pages and geometry,
append_now, its own errors, closing and deleting on disk, settings."""

import os

import pytest

from hedwig.config.settings import LedgerSettings
from hedwig.ledger.interface import LedgerClosed, LedgerError, NoSuchLedger
from hedwig.ledger.mmap_store import MmapLedgerStore
from hedwig.testing.deferreds import fired as result_of
from hedwig.testing.reactors import InlineThreadsReactor


def entry(i: int, size: int | None = None) -> bytes:
    size = (i * 379) % 3000 if size is None else size
    return (b"%07d|" % i * (size // 8 + 1))[:size]


def fill(store, ledger_id, count, start=0):
    for i in range(start, start + count):
        assert result_of(store.append(ledger_id, entry(i), 1000 + i)) == i


def test_round_trip_across_page_and_index_rolls(open_store):
    store = open_store()
    ledger = result_of(store.create())
    assert store.last_entry_id(ledger) == -1
    fill(store, ledger, 300)  # ~450 KB over 8 KB pages, 16 records per index page
    assert store.last_entry_id(ledger) == 299
    assert result_of(store.read(ledger, 0, 299)) == [entry(i) for i in range(300)]
    assert result_of(store.read(ledger, 17, 17)) == [entry(17)]
    assert store.ledger_bytes(ledger) == sum(len(entry(i)) for i in range(300))


def test_append_now_answers_with_the_entry_id_or_as_append_does(open_store, tmp_path):
    """append_now: the entry id itself when acknowledged at once (fsync never), the same
    stored bytes as append; refusals and fsync "always" get append's Deferred."""
    store = open_store()
    ledger = result_of(store.create())
    assert store.append_now(ledger, entry(0), 1000) == 0
    assert result_of(store.append(ledger, entry(1), 1001)) == 1
    assert store.append_now(ledger, entry(2), 1002) == 2
    assert result_of(store.read(ledger, 0, 2)) == [entry(i) for i in range(3)]
    assert result_of(store.entry_time(ledger, 2)) == 1002
    with pytest.raises(LedgerError, match="bad entry"):
        result_of(store.append_now(ledger, 12, 1003))  # not bytes: nothing stored
    with pytest.raises(NoSuchLedger):
        result_of(store.append_now(ledger + 100, entry(3), 1003))
    result_of(store.close_ledger(ledger))
    with pytest.raises(LedgerClosed):
        result_of(store.append_now(ledger, entry(3), 1003))
    assert store.last_entry_id(ledger) == 2
    always = open_store(directory=tmp_path / "always", fsync="always")
    ledger = result_of(always.create())
    waiting = always.append_now(ledger, entry(0), 1000)
    assert not isinstance(waiting, int)  # a Deferred: acknowledged by the group commit
    assert result_of(waiting) == 0


def test_bad_requests_get_clear_errors_and_store_nothing(open_store):
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 2)
    with pytest.raises(NoSuchLedger):
        result_of(store.read(99, 0, 0))
    with pytest.raises(LedgerError, match=r"outside 0\.\.1"):
        result_of(store.read(ledger, 1, 2))
    with pytest.raises(LedgerError):
        result_of(store.read(ledger, 1, 0))
    with pytest.raises(LedgerError, match="no entry 5"):
        result_of(store.entry_time(ledger, 5))
    with pytest.raises(NoSuchLedger):
        result_of(store.append(99, b"x", 0))
    with pytest.raises(LedgerError, match="exceeds the page size"):
        result_of(store.append(ledger, b"x" * 8193, 0))
    with pytest.raises(LedgerError, match="bad entry"):
        result_of(store.append(ledger, "text", 0))
    with pytest.raises(LedgerError, match="bad entry or publish time"):
        result_of(store.append(ledger, b"x", -1))
    # Nothing of the refused appends was kept, and the next entry id is still 2.
    assert store.last_entry_id(ledger) == 1
    assert result_of(store.append(ledger, b"after", 5)) == 2
    assert result_of(store.read(ledger, 0, 2)) == [entry(0), entry(1), b"after"]


def test_a_whole_page_entry_fits(open_store):
    store = open_store()
    ledger = result_of(store.create())
    result_of(store.append(ledger, b"a", 0))
    result_of(store.append(ledger, b"b" * 8192, 1))
    result_of(store.append(ledger, b"c", 2))
    assert result_of(store.read(ledger, 0, 2)) == [b"a", b"b" * 8192, b"c"]


def test_closed_ledgers_refuse_appends_and_stay_readable(open_store, tmp_path):
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 40)
    assert not store.is_closed(ledger)
    result_of(store.close_ledger(ledger))
    assert store.is_closed(ledger)
    with pytest.raises(LedgerClosed):
        result_of(store.append(ledger, b"late", 0))
    assert result_of(store.close_ledger(ledger)) is None  # closing twice is harmless
    assert result_of(store.read(ledger, 0, 39)) == [entry(i) for i in range(40)]
    result_of(store.close())
    reopened = open_store()
    assert reopened.is_closed(ledger)
    assert result_of(reopened.read(ledger, 0, 39)) == [entry(i) for i in range(40)]
    with pytest.raises(LedgerClosed):
        result_of(reopened.append(ledger, b"late", 0))


def test_closing_cuts_the_preallocated_tail(open_store):
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 30)
    path = store.ledger_path(ledger)
    data_pages = sorted(n for n in os.listdir(path) if n.startswith("d"))
    result_of(store.close_ledger(ledger))
    kept = sorted(n for n in os.listdir(path) if n.startswith("d"))
    assert len(kept) <= len(data_pages)
    on_disk = sum(os.path.getsize(os.path.join(path, n)) for n in kept)
    # Only whole used pages plus the used part of the last one stay.
    assert on_disk <= store.ledger_bytes(ledger) + 8192 * len(kept)
    last = os.path.join(path, kept[-1])
    assert 0 < os.path.getsize(last) <= 8192
    index_pages = sorted(n for n in os.listdir(path) if n.startswith("i"))
    assert len(index_pages) == 2  # 30 records over 16-record pages
    assert os.path.getsize(os.path.join(path, index_pages[-1])) == 14 * 24


def test_an_empty_ledger_closes_and_reopens(open_store):
    store = open_store()
    ledger = result_of(store.create())
    result_of(store.close_ledger(ledger))
    assert store.last_entry_id(ledger) == -1
    result_of(store.close())
    assert open_store().last_entry_id(ledger) == -1


def _blocks(path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            total += os.stat(os.path.join(root, name)).st_blocks
    return total


def _mapped_files_under(path: str) -> list[str]:
    with open("/proc/self/maps") as f:
        return [line for line in f if path in line]


def test_delete_frees_the_space(open_store, tmp_path):
    store = open_store()
    keep = result_of(store.create())
    gone = result_of(store.create())
    fill(store, keep, 50)
    fill(store, gone, 200)
    result_of(store.read(gone, 0, 199))  # map its pages
    gone_path = store.ledger_path(gone)
    before = _blocks(tmp_path)
    assert _mapped_files_under(gone_path)
    result_of(store.delete(gone))
    assert not os.path.exists(gone_path)
    assert not _mapped_files_under(gone_path)  # no mapping pins the space of unlinked files
    # The space of the deleted ledger is gone (its data alone was ~300 KB).
    assert before - _blocks(tmp_path) >= 300_000 // 512
    assert result_of(store.read(keep, 0, 49)) == [entry(i) for i in range(50)]


def test_store_level_errors_after_close(open_store, tmp_path):
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 20)
    assert _mapped_files_under(str(tmp_path))
    result_of(store.close())
    with pytest.raises(LedgerError, match="closed"):
        result_of(store.create())
    with pytest.raises(LedgerError, match="closed"):
        result_of(store.read(ledger, 0, 0))
    with pytest.raises(LedgerError, match="closed"):
        result_of(store.append(ledger, b"x", 0))
    assert store.mapped_pages == 0
    assert not _mapped_files_under(str(tmp_path))


def test_from_settings_and_bad_settings(tmp_path):
    settings = LedgerSettings(page_bytes=16384, index_page_records=8, max_mapped_pages=3, fsync="never")
    store = MmapLedgerStore.from_settings(tmp_path / "a", settings, InlineThreadsReactor())
    assert (store.page_bytes, store.index_page_records, store.fsync_policy) == (16384, 8, "never")
    result_of(store.close())
    for bad in (
        {"fsync": "sometimes"},
        {"page_bytes": 100},
        {"page_bytes": 1 << 33},
        {"index_page_records": 0},
        {"max_mapped_pages": 1},
        {"fsync_interval_ms": 0},
    ):
        with pytest.raises(ValueError):
            MmapLedgerStore(tmp_path / "b", reactor=InlineThreadsReactor(), **bad)


def test_old_ledgers_keep_their_geometry(open_store, tmp_path):
    store = open_store(page_bytes=8192, index_page_records=16)
    ledger = result_of(store.create())
    fill(store, ledger, 40)
    result_of(store.close())
    store = open_store(page_bytes=65536, index_page_records=1024)
    assert result_of(store.read(ledger, 0, 39)) == [entry(i) for i in range(40)]
    fill(store, ledger, 40, start=40)  # still writable, in its own 8 KiB pages
    assert result_of(store.read(ledger, 0, 79)) == [entry(i) for i in range(80)]
    newer = result_of(store.create())
    fill(store, newer, 3)
    assert os.path.getsize(os.path.join(store.ledger_path(newer), "d000000")) == 65536


def test_an_unwritable_directory_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    with pytest.raises(LedgerError, match="creating the ledger directory"):
        MmapLedgerStore(blocker / "ledgers", reactor=InlineThreadsReactor())
