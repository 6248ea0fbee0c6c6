"""Recovery on open: damaged tails are cut back to the last whole entry (and the log says
so), appends go on after the cut, and leftovers of interrupted work are cleared."""

import os
import random

from twisted.logger import capturedLogs

from hedwig.ledger.layout import (
    BOOT_OFFSET,
    COUNTS,
    COUNTS_OFFSET,
    DURABLE,
    DURABLE_OFFSET,
    HEADER_FILE,
    RECORD,
    RECORD_BYTES,
    data_page_name,
    index_page_name,
)
from hedwig.testing.deferreds import fired as result_of
from tests.ledger.test_store import entry, fill

RECORDS_PER_PAGE = 16


def record(path, entry_id):
    page, slot = divmod(entry_id, RECORDS_PER_PAGE)
    with open(os.path.join(path, index_page_name(page)), "rb") as f:
        f.seek(slot * RECORD_BYTES)
        return RECORD.unpack(f.read(RECORD_BYTES))


def scribble(file, offset, length, seed=7):
    with open(file, "r+b") as f:
        f.seek(offset)
        f.write(random.Random(seed).randbytes(length))


def header_write(path, offset, raw):
    with open(os.path.join(path, HEADER_FILE), "r+b") as f:
        f.seek(offset)
        f.write(raw)


def cut_messages(events):
    return [e for e in events if "cut back" in e.get("log_format", "")]


def assert_rolled_forward(store, events, ledger, count, extra):
    """The reopened ledger holds its `count` entries, whole, the last `extra` of them found
    past the committed count (and logged so), nothing cut."""
    assert store.last_entry_id(ledger) == count - 1
    assert store.ledger_bytes(ledger) == sum(len(entry(i)) for i in range(count))
    assert result_of(store.read(ledger, 0, count - 1)) == [entry(i) for i in range(count)]
    assert any("past the committed count" in e.get("log_format", "") and e["extra"] == extra for e in events)
    assert not cut_messages(events)


def reopen_logged(open_store, store):
    result_of(store.close())
    with capturedLogs() as events:
        reopened = open_store()
    return reopened, events


def test_garbage_over_the_tail_of_a_data_page(open_store):
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 40)
    path = store.ledger_path(ledger)
    page, offset, length, _crc, _t = record(path, 39)
    scribble(os.path.join(path, data_page_name(page)), offset + length - 100, 100)
    store, events = reopen_logged(open_store, store)
    assert store.last_entry_id(ledger) == 38
    assert result_of(store.read(ledger, 0, 38)) == [entry(i) for i in range(39)]
    (event,) = cut_messages(events)
    assert event["ledger_id"] == ledger and event["before"] == 40 and event["after"] == 39
    assert "fails its check" in event["problem"]
    # Appends go on after the cut, and survive another reopen.
    assert result_of(store.append(ledger, b"next", 1)) == 39
    store, events = reopen_logged(open_store, store)
    assert result_of(store.read(ledger, 38, 39)) == [entry(38), b"next"]
    assert not cut_messages(events)


def test_garbage_over_the_end_of_a_full_data_page(open_store):
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 40)
    path = store.ledger_path(ledger)
    # The last entry of a page that is followed by another one.
    last_of_page = max(i for i in range(39) if record(path, i)[0] < record(path, i + 1)[0])
    page, offset, length, _crc, _t = record(path, last_of_page)
    assert length > 8
    scribble(os.path.join(path, data_page_name(page)), offset + length - 8, 8)
    store, events = reopen_logged(open_store, store)
    assert store.last_entry_id(ledger) == last_of_page - 1
    assert result_of(store.read(ledger, 0, last_of_page - 1)) == [entry(i) for i in range(last_of_page)]
    assert len(cut_messages(events)) == 1
    fill(store, ledger, 5, start=last_of_page)
    assert result_of(store.read(ledger, 0, last_of_page + 4)) == [entry(i) for i in range(last_of_page + 5)]


def test_garbage_over_the_tail_of_an_index_page(open_store):
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 40)  # index pages 0, 1 full; page 2 holds entries 32..39
    path = store.ledger_path(ledger)
    scribble(os.path.join(path, index_page_name(2)), 5 * RECORD_BYTES + 3, 3 * RECORD_BYTES - 3)
    store, events = reopen_logged(open_store, store)
    assert store.last_entry_id(ledger) == 36
    assert result_of(store.read(ledger, 0, 36)) == [entry(i) for i in range(37)]
    (event,) = cut_messages(events)
    assert event["after"] == 37
    fill(store, ledger, 10, start=37)  # rolls into index page 3
    store, _ = reopen_logged(open_store, store)
    assert result_of(store.read(ledger, 0, 46)) == [entry(i) for i in range(47)]


def test_a_count_ahead_of_the_records_is_cut_back(open_store):
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 20)
    path = store.ledger_path(ledger)
    result_of(store.close())
    # As if the count had reached the disk and the last records had not.
    header_write(path, COUNTS_OFFSET, COUNTS.pack(25, 10**6))
    with capturedLogs() as events:
        store = open_store()
    assert store.last_entry_id(ledger) == 19
    assert store.ledger_bytes(ledger) == sum(len(entry(i)) for i in range(20))
    assert len(cut_messages(events)) == 1


def test_after_a_reboot_everything_past_the_durable_count_is_checked(open_store):
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 200)
    path = store.ledger_path(ledger)
    result_of(store.close())
    # Another boot wrote it, and only 100 entries were known durable: entry 120 is far
    # from the tail, but it was never fsynced, so it is checked and found damaged.
    header_write(path, BOOT_OFFSET, b"\0" * 16)
    header_write(path, DURABLE_OFFSET, DURABLE.pack(100))
    page, offset, _length, _crc, _t = record(path, 120)
    scribble(os.path.join(path, data_page_name(page)), offset, 4)
    with capturedLogs() as events:
        store = open_store()
    assert store.last_entry_id(ledger) == 119
    assert result_of(store.read(ledger, 0, 119)) == [entry(i) for i in range(120)]
    assert len(cut_messages(events)) == 1


def test_after_a_reboot_entries_past_a_stale_committed_count_are_rolled_forward(open_store):
    """Group commit syncs data and index pages, not the header: after a power cut the
    header on disk may count fewer entries than were acknowledged. Their index records
    bring them back."""
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 90)
    path = store.ledger_path(ledger)
    result_of(store.close())
    header_write(path, BOOT_OFFSET, b"\0" * 16)
    header_write(path, COUNTS_OFFSET, COUNTS.pack(50, sum(len(entry(i)) for i in range(50))))
    header_write(path, DURABLE_OFFSET, DURABLE.pack(40))
    with capturedLogs() as events:
        store = open_store()
    assert_rolled_forward(store, events, ledger, count=90, extra=40)
    assert result_of(store.append(ledger, b"more", 0)) == 90


def test_what_recovery_cut_never_comes_back(open_store):
    """Entries after a cut stay cut, even when later entries (written over them) have the
    same sizes and a reboot makes recovery roll forward."""
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 30)
    path = store.ledger_path(ledger)
    page, offset, _length, _crc, _t = record(path, 25)
    scribble(os.path.join(path, data_page_name(page)), offset, 4)
    store, _events = reopen_logged(open_store, store)
    assert store.last_entry_id(ledger) == 24
    # Entry 25 again, the same size as before: entries 26..29 are still on the data page.
    assert result_of(store.append(ledger, entry(25), 1025)) == 25
    result_of(store.close())
    header_write(path, BOOT_OFFSET, b"\0" * 16)
    header_write(path, DURABLE_OFFSET, DURABLE.pack(0))
    store = open_store()
    assert store.last_entry_id(ledger) == 25
    assert result_of(store.read(ledger, 0, 25)) == [entry(i) for i in range(26)]


def test_a_closed_ledger_after_a_reboot_is_checked_past_its_durable_count(open_store):
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 30)
    result_of(store.close_ledger(ledger))
    path = store.ledger_path(ledger)
    result_of(store.close())
    header_write(path, BOOT_OFFSET, b"\0" * 16)
    header_write(path, DURABLE_OFFSET, DURABLE.pack(10))
    page, offset, _length, _crc, _t = record(path, 12)
    scribble(os.path.join(path, data_page_name(page)), offset, 4)
    store = open_store()
    assert store.is_closed(ledger)
    assert store.last_entry_id(ledger) == 11


def test_a_damaged_header_leaves_the_ledger_unserved_and_the_rest_served(open_store):
    store = open_store()
    good, bad = result_of(store.create()), result_of(store.create())
    fill(store, good, 5)
    fill(store, bad, 5)
    bad_path = store.ledger_path(bad)
    result_of(store.close())
    header_write(bad_path, 16, b"\xff\xff")  # inside the CRC-guarded static fields
    with capturedLogs() as events:
        store = open_store()
    assert store.list_ledgers() == [good]
    assert result_of(store.read(good, 0, 4)) == [entry(i) for i in range(5)]
    assert any(e.get("ledger_id") == bad and "cannot be opened" in e["log_format"] for e in events)
    assert os.path.exists(bad_path)  # left for an operator, never deleted
    assert result_of(store.create()) > bad


def test_interrupted_creates_and_deletes_are_cleared(open_store, tmp_path):
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 3)
    result_of(store.close())
    root = tmp_path / "ledgers"
    (root / "L000000000777.new").mkdir()
    (root / "L000000000778.deleted").mkdir()
    (root / "L000000000778.deleted" / "d000000").write_bytes(b"x" * 5000)
    store = open_store()
    assert store.list_ledgers() == [ledger]
    assert sorted(os.listdir(root)) == [f"L{ledger:012d}", "next-ledger-id"]


def test_an_open_ledger_with_pages_cut_by_an_interrupted_close_takes_appends(open_store):
    """A crash between cutting a closing ledger's pages and marking it closed leaves an
    open ledger with short pages: the writer extends them again."""
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 30)
    path = store.ledger_path(ledger)
    page, offset, length, _crc, _t = record(path, 29)
    result_of(store.close())
    os.truncate(os.path.join(path, data_page_name(page)), offset + length)
    os.truncate(os.path.join(path, index_page_name(1)), 14 * RECORD_BYTES)
    for name in os.listdir(path):
        if name.startswith("d") and int(name[1:]) > page:
            os.unlink(os.path.join(path, name))
    with capturedLogs() as events:
        store = open_store()
    assert not cut_messages(events)
    fill(store, ledger, 30, start=30)
    assert result_of(store.read(ledger, 0, 59)) == [entry(i) for i in range(60)]


def test_an_open_ledger_with_pages_cut_by_an_interrupted_close_is_readable_at_once(open_store):
    """The same crash, then a reader first: the short pages map for reading before any
    append has extended them."""
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 30)
    path = store.ledger_path(ledger)
    page, offset, length, _crc, _t = record(path, 29)
    result_of(store.close())
    os.truncate(os.path.join(path, data_page_name(page)), offset + length)
    os.truncate(os.path.join(path, index_page_name(1)), 14 * RECORD_BYTES)
    store = open_store()
    assert result_of(store.read(ledger, 0, 29)) == [entry(i) for i in range(30)]
    fill(store, ledger, 5, start=30)
    assert result_of(store.read(ledger, 25, 34)) == [entry(i) for i in range(25, 35)]


def test_entries_whole_past_a_lost_committed_count_are_kept_within_the_boot(open_store):
    """The committed count is stored through the header's mapping, and a kernel may lose
    such stores though only the writer died (seen on Linux 6.18 under page-cache
    pressure: a SIGKILLed writer's header read back as created, its records and entries
    whole): within the same boot, the entries the records prove whole are kept, and the
    recovered count is written back."""
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 40)
    path = store.ledger_path(ledger)
    result_of(store.close())
    header_write(path, COUNTS_OFFSET, COUNTS.pack(0, 0))  # as the kernel left it
    store, events = reopen_logged(open_store, store)
    assert_rolled_forward(store, events, ledger, count=40, extra=40)
    assert result_of(store.append(ledger, b"next", 1)) == 40
    store, _ = reopen_logged(open_store, store)
    assert result_of(store.read(ledger, 38, 40)) == [entry(38), entry(39), b"next"]


def test_closing_a_ledger_writes_its_counts_whatever_its_mapped_header_holds(open_store):
    """A closed ledger's counts are never checked again (within the boot), so closing
    writes them itself rather than trust the stores made through the header's mapping."""
    store = open_store()
    ledger = result_of(store.create())
    fill(store, ledger, 25)
    path = store.ledger_path(ledger)
    header_write(path, COUNTS_OFFSET, COUNTS.pack(0, 0))  # the mapped stores lost
    result_of(store.close_ledger(ledger))
    store, _events = reopen_logged(open_store, store)
    assert store.is_closed(ledger)
    assert store.last_entry_id(ledger) == 24
    assert store.ledger_bytes(ledger) == sum(len(entry(i)) for i in range(25))
    assert result_of(store.read(ledger, 0, 24)) == [entry(i) for i in range(25)]
