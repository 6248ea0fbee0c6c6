"""Recovery of a ledger's tail on open: check the last entries against their checks and
their places, cut the ledger back to the last entry that is whole, and after a reboot
roll forward over entries that reached the disk beyond the committed count.

What needs checking depends on what could have been lost:

- within one boot (the process crashed, the machine did not), the page cache kept every
  store the process made, and the write order (data, index record, committed count) means
  every counted entry is whole: only the last TAIL_CHECK_ENTRIES entries are checked, which
  costs little and catches damage done to the files from outside;
- after a reboot, pages that were not fsynced may have reached the disk in any order, or
  not at all: everything past the durable count (entries covered by a completed fsync) is
  checked, and checking goes on past the committed count for as long as records are
  whole. Group commit syncs data and index pages, not the header, so an acknowledged
  entry may be known only from its index record: its check (see `layout.record_check`)
  says it is whole and belongs at that entry id.

The store's own open rolls an open ledger forward within one boot too: its committed
count is one word of the header, stored through a shared mapping, and a kernel may lose
such stores although the process only crashed (seen on Linux 6.18 under page-cache
pressure: a SIGKILLed writer's header read back as it was created, every record and
entry after it whole). The records prove each entry whole at its id, so the entries
they prove are kept whatever the header says; a shared store's fencing, whose writer
may still be storing on another hub, does not roll forward within the boot.

Records left beyond a cut are cleared, so a later roll forward cannot bring back an entry
that was cut. Recovery reads with pread, not through mappings, so it never touches the
mapped-page budget, and a damaged length never makes it read beyond a page.
"""

import os
import zlib
from typing import NamedTuple

from hedwig.ledger.layout import (
    RECORD,
    RECORD_BYTES,
    STATE_CLOSED,
    current_boot_id,
    data_page_name,
    index_page_name,
    record_check,
)

TAIL_CHECK_ENTRIES = 64
_BLOCK_RECORDS = 4096  # index records read at a time


class Recovered(NamedTuple):
    count: int  # entries kept
    data_bytes: int  # their total size
    end_page: int  # where the next entry goes (if it fits): data page ...
    end_offset: int  # ... and offset in it
    problem: str | None  # why entries were cut, None if none were
    rolled_forward: int  # entries found whole beyond the committed count


class _Index:
    """A ledger's index pages read with pread, a block of records at a time."""

    def __init__(self, directory: str, records_per_page: int):
        self._directory = directory
        self._per_page = records_per_page
        self._fds = {}
        self._block = None
        self._records = []

    def fd(self, name: str):
        fd = self._fds.get(name)
        if fd is None:
            try:
                fd = os.open(os.path.join(self._directory, name), os.O_RDONLY)
            except FileNotFoundError:
                return None
            self._fds[name] = fd
        return fd

    def record(self, entry: int):
        """Entry's record as a tuple, or None where the index ends."""
        page, slot = divmod(entry, self._per_page)
        block = (page, slot // _BLOCK_RECORDS)
        if block != self._block:
            first = block[1] * _BLOCK_RECORDS
            wanted = min(_BLOCK_RECORDS, self._per_page - first)
            fd = self.fd(index_page_name(page))
            raw = os.pread(fd, wanted * RECORD_BYTES, first * RECORD_BYTES) if fd is not None else b""
            usable = len(raw) - len(raw) % RECORD_BYTES
            self._records = list(RECORD.iter_unpack(raw[:usable]))
            self._block = block
        at = slot % _BLOCK_RECORDS
        return self._records[at] if at < len(self._records) else None

    def data(self, page: int, offset: int, length: int):
        fd = self.fd(data_page_name(page))
        return os.pread(fd, length, offset) if fd is not None else None

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def _next_place(page: int, offset: int, length: int, page_bytes: int):
    """Where an entry of `length` bytes goes when the previous one ended at page/offset:
    right after it, or at the start of the next page if it does not fit."""
    if offset + length > page_bytes:
        return page + 1, 0
    return page, offset


def _whole(index: _Index, entry: int, page: int, offset: int, page_bytes: int):
    """(record, None) if entry is whole and where it belongs, else (None, why not)."""
    record = index.record(entry)
    if record is None:
        return None, f"index record of entry {entry} is missing"
    rec_page, rec_offset, length, check, time_us = record
    if length > page_bytes or (rec_page, rec_offset) != _next_place(page, offset, length, page_bytes):
        return None, f"index record of entry {entry} is out of place"
    data = index.data(rec_page, rec_offset, length) if length else b""
    if data is None or len(data) != length:
        return None, f"data of entry {entry} is missing"
    if record_check(zlib.crc32(data), entry, time_us) != check:
        return None, f"entry {entry} fails its check"
    return record, None


def recover_tail(
    directory: str,
    committed_count: int,
    committed_bytes: int,
    durable_count: int,
    page_bytes: int,
    records_per_page: int,
    same_boot: bool,
    check_tail: bool = True,
    roll_forward: bool | None = None,
) -> Recovered:
    """Check a ledger's tail (see the module's docstring) and say what to keep. Rolling
    forward (by default after a reboot) is for open ledgers: a closed one's count is final."""
    count = committed_count
    start = max(0, count - TAIL_CHECK_ENTRIES) if check_tail else count
    if roll_forward is None:
        roll_forward = not same_boot
    if not same_boot:
        start = min(start, durable_count)
    index = _Index(directory, records_per_page)
    try:
        # The entry before the checked range is trusted; it says where the next one goes.
        page = offset = 0
        if start > 0:
            previous = index.record(start - 1)
            if previous is None or previous[1] + previous[2] > page_bytes:
                start = 0  # not even that: check everything
            else:
                page, offset = previous[0], previous[1] + previous[2]
        problem = None
        data_bytes = None  # known only if nothing is cut
        entry = start
        extra_bytes = 0
        while entry < count or roll_forward:
            record, why = _whole(index, entry, page, offset, page_bytes)
            if record is None:
                if entry < count:
                    problem = why
                break
            page, offset = record[0], record[1] + record[2]
            if entry >= count:
                extra_bytes += record[2]
            entry += 1
        kept = entry
        if problem is None:
            data_bytes = committed_bytes + extra_bytes
            return Recovered(kept, data_bytes, page, offset, None, kept - count)
        data_bytes = sum(index.record(e)[2] for e in range(kept))  # rare: only after a cut
        return Recovered(kept, data_bytes, page, offset, problem, 0)
    finally:
        index.close()


def recover_as_the_header_says(directory: str, header, roll_forward_open: bool = False) -> Recovered | None:
    """Recover a ledger's tail as its header (layout.HeaderFields) calls for: an open
    ledger's is checked (and rolled forward after a reboot, or always with
    `roll_forward_open`: its only writer is gone, see the module docstring); a closed
    one's only after a reboot that may have lost what its last sync did not cover. None
    when its counts stand as they are."""
    closed = header.state == STATE_CLOSED
    same_boot = header.boot_id == current_boot_id()
    if closed and (same_boot or header.durable_count >= header.committed_count):
        return None
    return recover_tail(
        directory,
        header.committed_count,
        header.committed_bytes,
        header.durable_count,
        header.page_bytes,
        header.index_page_records,
        same_boot,
        check_tail=not closed,
        roll_forward=not closed and (roll_forward_open or not same_boot),
    )


def clear_records_after(directory: str, count: int, records_per_page: int) -> None:
    """Zero every index record from entry `count` on (the rest of its index page; later
    index pages are removed), so what recovery cut can never be rolled forward again."""
    page, slot = divmod(count, records_per_page)
    for name in sorted(os.listdir(directory)):
        if not (name.startswith("i") and name[1:].isdigit()):
            continue
        number = int(name[1:])
        path = os.path.join(directory, name)
        if number > page:
            os.unlink(path)
        elif number == page:
            fd = os.open(path, os.O_WRONLY)
            try:
                size = os.fstat(fd).st_size
                if size > slot * RECORD_BYTES:
                    os.pwrite(fd, bytes(size - slot * RECORD_BYTES), slot * RECORD_BYTES)
            finally:
                os.close(fd)
