"""One ledger of the memory-mapped store: its state, and the files it lives in.

`Ledger` is what the store (mmap_store.py) keeps per ledger: where its pages are, how many
entries are committed and durable, its writer's mapped pages. The functions below work on
a ledger's directory: header fields, page files, cutting a closed ledger to its count.
"""

import os
import time
from dataclasses import dataclass

from hedwig.config.settings import KIB, MIB
from hedwig.ledger.layout import (
    COUNTS,
    COUNTS_OFFSET,
    DURABLE,
    DURABLE_OFFSET,
    HEADER_FILE,
    RECORD_BYTES,
    STATE,
    STATE_CLOSED,
    STATE_OFFSET,
)
from hedwig.ledger.pagefiles import RESERVED, sync_paths

DATA = "d"
INDEX = "i"
FSYNC_POLICIES = ("never", "interval", "always")

DATA_CHUNK_BYTES = 1 * MIB  # allocated (and pre-touched) per step
INDEX_CHUNK_BYTES = 64 * KIB
MAX_DATA_LOOKAHEAD = 16 * MIB  # how far the preparer runs ahead of a busy writer
MAX_INDEX_LOOKAHEAD = 1 * MIB
MIN_LOOKAHEAD = 4 * KIB  # ... and of a new one
# ... under the syncing policies, where each preparer step is also an fdatasync: fewer,
# larger first steps (a new topic costs this much more disk there).
SYNCING_MIN_LOOKAHEAD = 64 * KIB
# It runs ahead by this many times what the ledger holds: few allocation steps (each a
# thread job, and an fdatasync under the syncing policies) before whole chunks, while a
# ledger with one small entry still holds a block of data and one of index.
GROWTH = 16
ID_RESERVATION = 1024  # ledger ids reserved (durably) per write of the id file
MIN_PAGE_BYTES = 4 * KIB


@dataclass(slots=True, eq=False)
class Ledger:
    """What the store keeps in memory about one ledger. The first eight fields come from
    its header (or a new ledger's settings); the rest start the same for every ledger.
    Compared by identity (eq=False): the store and its syncer hold ledgers as objects."""

    id: int
    path: str
    page_bytes: int
    records_per_page: int
    count: int  # entries appended
    bytes: int  # data bytes appended
    durable: int  # entries durable on disk
    closed: bool
    closing: list | None = None  # while a close is on its way: Deferreds of later close calls
    deleted: bool = False
    broken: str | None = None  # why the ledger takes no more appends (a failed fsync)
    new: bool = False  # created since the last sync: its directory entry is not durable
    # The writer (open ledgers only): where the next entry goes, its page files, and
    # the pages it has mapped (None once the mapped-page budget unmapped them).
    data_page: int = 0
    data_off: int = 0
    data_stream: object = None
    index_stream: object = None
    header_mm: object = None  # mapped while in the store's OpenHeaders (open_headers.py)
    header_used: bool = False  # appended to since OpenHeaders last looked (its second chance)
    data_mm: object = None
    data_map_page: int = -1
    index_mm: object = None
    index_map_page: int = -1
    # What the next sync starts from.
    synced_data_page: int = 0
    synced_index_page: int = 0
    synced_pages_created: int = 0

    @property
    def index_page_bytes(self) -> int:
        return self.records_per_page * RECORD_BYTES


def now_us() -> int:
    return time.time_ns() // 1000


def write_header_fields(path: str, count: int, data_bytes: int, durable: int) -> None:
    """Rewrite the counts of a ledger's header after recovery cut it."""
    with RESERVED.opened(os.path.join(path, HEADER_FILE), os.O_WRONLY) as fd:
        os.pwrite(fd, COUNTS.pack(count, data_bytes), COUNTS_OFFSET)
        os.pwrite(fd, DURABLE.pack(durable), DURABLE_OFFSET)


def page_files(path: str, prefix: str):
    for name in os.listdir(path):
        if name.startswith(prefix) and name[1:].isdigit():
            yield int(name[1:]), os.path.join(path, name)


def cut_closed_ledger(path: str, count: int, total_bytes: int, data_end, index_end) -> None:
    """In a thread, once a ledger is closed: cut its last data and index pages to what they
    hold, remove pages prepared but never used, then write the header's final counts and
    mark it closed, and sync it all. A crash before the mark leaves an open ledger with
    short pages, which the writer extends again if it ever appends. (The counts are
    written here, not left to the stores made through the header's mapping: a closed
    ledger's counts are never checked again, and a kernel may lose mapped stores.)"""
    last_data, data_bytes = data_end if data_end is not None else (-1, 0)
    last_index, last_slot = index_end if index_end is not None else (-1, -1)
    index_bytes = (last_slot + 1) * RECORD_BYTES
    synced = []
    try:
        for prefix, last, size in ((DATA, last_data, data_bytes), (INDEX, last_index, index_bytes)):
            for page, file in RESERVED.call(lambda prefix=prefix: list(page_files(path, prefix))):
                if page > last:
                    os.unlink(file)
                elif page == last:
                    os.truncate(file, size)
                    synced.append(file)
        with RESERVED.opened(os.path.join(path, HEADER_FILE), os.O_WRONLY) as fd:
            os.pwrite(fd, COUNTS.pack(count, total_bytes), COUNTS_OFFSET)
            os.pwrite(fd, DURABLE.pack(count), DURABLE_OFFSET)
            os.pwrite(fd, STATE.pack(STATE_CLOSED), STATE_OFFSET)
    except FileNotFoundError:
        return  # deleted meanwhile
    synced.append(os.path.join(path, HEADER_FILE))
    synced.append(path)
    sync_paths(synced)
