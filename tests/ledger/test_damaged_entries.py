"""A damaged entry stops a read and is reported by ledger, entry, page and offset, never by
a file path: a read across it returns what precedes it; a read starting at it raises
EntryDamaged. An index record's page number is checked before it names a file."""

import os

import pytest

from hedwig.ledger.interface import EntryDamaged
from hedwig.ledger.layout import RECORD, RECORD_BYTES, data_page_name, index_page_name
from hedwig.testing.deferreds import fired as result_of

RECORDS_PER_PAGE = 16  # (the small geometry of tests/ledger/conftest.py)


def entries(count):
    return [b"%04d" % i * 500 for i in range(count)]  # 2,000 bytes: four to a data page


def write_record(path, entry_id, page, offset, length):
    index_page, slot = divmod(entry_id, RECORDS_PER_PAGE)
    with open(os.path.join(path, index_page_name(index_page)), "r+b") as f:
        f.seek(slot * RECORD_BYTES)
        _page, _off, _length, check, time_us = RECORD.unpack(f.read(RECORD_BYTES))
        f.seek(slot * RECORD_BYTES)
        f.write(RECORD.pack(page, offset, length, check, time_us))


@pytest.fixture
def written(open_store):
    """A closed ledger of 12 entries (three data pages), its store closed, so that nothing
    of it is mapped. (An open ledger's damage is recovery's: it cuts the ledger back.)"""
    store = open_store()
    ledger = result_of(store.create())
    for i, data in enumerate(entries(12)):
        result_of(store.append(ledger, data, i))
    result_of(store.close_ledger(ledger))
    path = store.ledger_path(ledger)
    result_of(store.close())
    return ledger, path


def test_a_garbage_page_number_is_never_a_file_name(open_store, written, tmp_path):
    ledger, path = written
    write_record(path, 5, 4294967295, 0, 2000)
    store = open_store()
    assert result_of(store.read(ledger, 0, 11)) == entries(5)
    with pytest.raises(EntryDamaged) as raised:
        result_of(store.read(ledger, 5, 11))
    message = str(raised.value)
    assert f"ledger {ledger} entry 5" in message and "data page 4294967295" in message
    assert str(tmp_path) not in message and data_page_name(4294967295) not in message
    assert result_of(store.read(ledger, 6, 11)) == entries(12)[6:]  # what follows is still readable


def test_a_missing_data_page_damages_its_entries_only(open_store, written, tmp_path):
    ledger, path = written
    os.unlink(os.path.join(path, data_page_name(1)))
    store = open_store()
    assert result_of(store.read(ledger, 0, 11)) == entries(4)
    with pytest.raises(EntryDamaged) as raised:
        result_of(store.read(ledger, 4, 11))
    assert f"ledger {ledger} entry 4: " in str(raised.value)
    assert str(tmp_path) not in str(raised.value)
    assert result_of(store.read(ledger, 8, 11)) == entries(12)[8:]
