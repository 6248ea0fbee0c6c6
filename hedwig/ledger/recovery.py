"""Recovery of a ledger's tail on open: check the last entries against their CRCs and
their places, and cut the ledger back to the last entry that is whole.

What needs checking depends on what could have been lost:

- within one boot (the process crashed, the machine did not), the page cache kept every
  store the process made, and the write order (data, index record, committed count) means
  every counted entry is whole: only the last TAIL_CHECK_ENTRIES entries are checked, which
  costs little and catches damage done to the files from outside;
- after a reboot, pages that were not fsynced may have reached the disk in any order, or
  not at all: everything past the durable count (entries covered by a completed fsync) is
  checked as well.

Recovery reads with pread, not through mappings, so it never touches the mapped-page
budget, and a damaged length never makes it map or read beyond a page.
"""

import os
import zlib
from typing import NamedTuple

from hedwig.ledger.layout import RECORD, RECORD_BYTES, data_page_name, index_page_name

TAIL_CHECK_ENTRIES = 64


class Recovered(NamedTuple):
    count: int  # entries kept
    data_bytes: int  # their total size
    end_page: int  # where the next entry goes (if it fits): data page ...
    end_offset: int  # ... and offset in it
    problem: str | None  # why entries were dropped, None if none were


class _Files:
    """Open page files by name, read with pread; closed together."""

    def __init__(self, directory: str):
        self._directory = directory
        self._fds = {}

    def pread(self, name: str, length: int, offset: int) -> bytes | None:
        fd = self._fds.get(name)
        if fd is None:
            try:
                fd = os.open(os.path.join(self._directory, name), os.O_RDONLY)
            except FileNotFoundError:
                return None
            self._fds[name] = fd
        return os.pread(fd, length, offset)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def _record(files: _Files, entry: int, records_per_page: int):
    page, slot = divmod(entry, records_per_page)
    raw = files.pread(index_page_name(page), RECORD_BYTES, slot * RECORD_BYTES)
    if raw is None or len(raw) < RECORD_BYTES:
        return None
    return RECORD.unpack(raw)


def _sum_lengths(files: _Files, count: int, records_per_page: int) -> int:
    total = 0
    for page in range((count + records_per_page - 1) // records_per_page):
        records = min(records_per_page, count - page * records_per_page)
        raw = files.pread(index_page_name(page), records * RECORD_BYTES, 0)
        total += sum(record[2] for record in RECORD.iter_unpack(raw))
    return total


def _next_place(page: int, offset: int, length: int, page_bytes: int):
    """Where an entry of `length` bytes goes when the previous one ended at page/offset:
    right after it, or at the start of the next page if it does not fit."""
    if offset + length > page_bytes:
        return page + 1, 0
    return page, offset


def recover_tail(
    directory: str,
    committed_count: int,
    committed_bytes: int,
    durable_count: int,
    page_bytes: int,
    records_per_page: int,
    same_boot: bool,
    check_tail: bool = True,
) -> Recovered:
    """Check a ledger's last entries (see the module's docstring) and say what to keep."""
    count = committed_count
    start = max(0, count - TAIL_CHECK_ENTRIES) if check_tail else count
    if not same_boot:
        start = min(start, durable_count)
    files = _Files(directory)
    try:
        # The entry before the checked range is trusted; it says where the next one goes.
        if start > 0:
            previous = _record(files, start - 1, records_per_page)
            if previous is None or previous[1] + previous[2] > page_bytes:
                start, page, offset = 0, 0, 0  # not even that: check everything
            else:
                page, offset = previous[0], previous[1] + previous[2]
        else:
            page, offset = 0, 0
        problem = None
        kept = count
        for entry in range(start, count):
            record = _record(files, entry, records_per_page)
            if record is None:
                problem, kept = f"index record of entry {entry} is missing", entry
                break
            rec_page, rec_offset, length, crc, _time = record
            if length > page_bytes or (rec_page, rec_offset) != _next_place(page, offset, length, page_bytes):
                problem, kept = f"index record of entry {entry} is out of place", entry
                break
            data = files.pread(data_page_name(rec_page), length, rec_offset) if length else b""
            if data is None or len(data) != length:
                problem, kept = f"data of entry {entry} is missing", entry
                break
            if zlib.crc32(data) != crc:
                problem, kept = f"entry {entry} fails its CRC", entry
                break
            page, offset = rec_page, rec_offset + length
        if problem is None:
            return Recovered(count, committed_bytes, page, offset, None)
        data_bytes = _sum_lengths(files, kept, records_per_page)  # rare: only after a cut
        if kept:
            last = _record(files, kept - 1, records_per_page)
            page, offset = last[0], last[1] + last[2]
        else:
            page, offset = 0, 0
        return Recovered(kept, data_bytes, page, offset, problem)
    finally:
        files.close()
