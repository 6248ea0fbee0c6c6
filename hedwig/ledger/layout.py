"""On-disk layout of a memory-mapped ledger: file names, the header, the index records.

A ledger is a directory `L<id:012d>` under the store's data directory:

    header         4096 bytes, see HEADER below; the committed count lives here
    d<page:06d>    data pages: entries stored back to back; an entry never spans pages
    i<page:06d>    index pages: one fixed-size record per entry

Every page file of a ledger has the ledger's fixed page size (the header records it, so
a store opened with other settings still reads old ledgers); only a closed ledger's last
pages are cut to what they hold.

Write order of an append: the entry's bytes, then its index record, then the committed
count in the header. A reader (or recovery) trusts only the first `committed_count`
records, so a crash between these steps loses nothing that was acknowledged.
"""

import os
import struct
import uuid
import zlib

LEDGER_DIR_PREFIX = "L"
LEDGER_DIR_DIGITS = 12
HEADER_FILE = "header"
NEXT_ID_FILE = "next-ledger-id"
# Shared storage (a region of several hubs, hedwig.ledger.shared_store): the lock taken
# to reserve ledger ids, and a ledger's fence and closed records (hedwig.ledger.fencing).
NEXT_ID_LOCK_FILE = "next-ledger-id.lock"
FENCE_FILE = "fenced"
CLOSED_FILE = "closed"

HEADER_BYTES = 4096
MAGIC = b"HWLEDGR\x01"
FORMAT_VERSION = 1

# Static fields, written once at create and guarded by a CRC:
#   magic 8s, format version u32, pad u32, ledger id u64, page bytes u64,
#   index page records u64, created (us since the epoch) u64, crc32 of the above u32
HEADER_STATIC = struct.Struct("<8sIIQQQQ")
HEADER_STATIC_CRC = struct.Struct("<I")
HEADER_STATIC_CRC_OFFSET = HEADER_STATIC.size  # 48
# Mutable fields, all in the first 512 bytes so a sector write never tears them apart:
#   committed count u64 and committed data bytes u64 (one store per append);
#   durable count u64 (entries known to be on disk: advanced after each fsync);
#   state u64 (OPEN or CLOSED); boot id 16s of the last session that wrote the ledger.
COUNTS = struct.Struct("<QQ")
COUNTS_OFFSET = 64
DURABLE = struct.Struct("<Q")
DURABLE_OFFSET = 80
STATE = struct.Struct("<Q")
STATE_OFFSET = 88
BOOT = struct.Struct("<16s")
BOOT_OFFSET = 96

STATE_OPEN = 0
STATE_CLOSED = 1
STATE_FENCED = 2  # another writer recovered the ledger: its own writer acknowledges nothing more

# An index record: data page u32, offset in the page u32, length u32, check u32 (see
# record_check), publish time (us) u64.
RECORD = struct.Struct("<IIIIQ")
RECORD_BYTES = RECORD.size  # 24
MAX_PAGE_BYTES = 1 << 32  # offsets and lengths are u32


RECORD_SALT = 0x9E3779B1


def record_check(crc: int, entry: int, time_us: int) -> int:
    """The check stored in an index record: the CRC32 of the entry's bytes, salted with
    its entry id and publish time. A record left from another entry (or a cut one), a
    zeroed record or a torn publish time never passes for entry `entry`; recovery relies
    on that when it rolls forward over records the header does not count.

    The store computes the same expression inline on its append path."""
    return crc ^ ((((entry + 1) * RECORD_SALT) ^ time_us ^ (time_us >> 32)) & 0xFFFFFFFF | 1)


class HeaderError(ValueError):
    """A ledger header that is not one of ours, or whose static fields are damaged."""


def ledger_dir_name(ledger_id: int) -> str:
    return f"{LEDGER_DIR_PREFIX}{ledger_id:0{LEDGER_DIR_DIGITS}d}"


def parse_ledger_dir_name(name: str):
    """The ledger id a directory name stands for, or None if it is not a ledger's."""
    if len(name) < 1 + LEDGER_DIR_DIGITS or not name.startswith(LEDGER_DIR_PREFIX):
        return None
    digits = name[1:]
    return int(digits) if digits.isascii() and digits.isdigit() else None


def data_page_name(page: int) -> str:
    return f"d{page:06d}"


def index_page_name(page: int) -> str:
    return f"i{page:06d}"


def encode_header(ledger_id: int, page_bytes: int, index_page_records: int, created_us: int) -> bytes:
    static = HEADER_STATIC.pack(
        MAGIC, FORMAT_VERSION, 0, ledger_id, page_bytes, index_page_records, created_us
    )
    buf = bytearray(HEADER_BYTES)
    buf[: len(static)] = static
    HEADER_STATIC_CRC.pack_into(buf, HEADER_STATIC_CRC_OFFSET, zlib.crc32(static))
    COUNTS.pack_into(buf, COUNTS_OFFSET, 0, 0)
    DURABLE.pack_into(buf, DURABLE_OFFSET, 0)
    STATE.pack_into(buf, STATE_OFFSET, STATE_OPEN)
    BOOT.pack_into(buf, BOOT_OFFSET, current_boot_id())
    return bytes(buf)


class HeaderFields:
    """A decoded header (a snapshot; the live counts are in the mapped file)."""

    __slots__ = (
        "boot_id",
        "committed_bytes",
        "committed_count",
        "created_us",
        "durable_count",
        "index_page_records",
        "ledger_id",
        "page_bytes",
        "state",
    )

    def __init__(self, buf):
        if len(buf) < HEADER_BYTES:
            raise HeaderError(f"header is {len(buf)} bytes, expected {HEADER_BYTES}")
        static = bytes(buf[: HEADER_STATIC.size])
        magic, version, _pad, ledger_id, page_bytes, index_page_records, created_us = HEADER_STATIC.unpack(
            static
        )
        if magic != MAGIC:
            raise HeaderError("not a hedwig ledger header (bad magic)")
        (crc,) = HEADER_STATIC_CRC.unpack_from(buf, HEADER_STATIC_CRC_OFFSET)
        if crc != zlib.crc32(static):
            raise HeaderError("header static fields fail their CRC")
        if version != FORMAT_VERSION:
            raise HeaderError(f"unknown ledger format version {version}")
        if not 0 < page_bytes <= MAX_PAGE_BYTES or index_page_records <= 0:
            raise HeaderError(f"bad page geometry {page_bytes}/{index_page_records}")
        self.ledger_id = ledger_id
        self.page_bytes = page_bytes
        self.index_page_records = index_page_records
        self.created_us = created_us
        self.committed_count, self.committed_bytes = COUNTS.unpack_from(buf, COUNTS_OFFSET)
        (self.durable_count,) = DURABLE.unpack_from(buf, DURABLE_OFFSET)
        (self.state,) = STATE.unpack_from(buf, STATE_OFFSET)
        (self.boot_id,) = BOOT.unpack_from(buf, BOOT_OFFSET)


_BOOT_ID = None


def current_boot_id() -> bytes:
    """16 bytes naming this boot of the machine (Linux's random boot id).

    Recovery compares it with the one a ledger was last written under: within one boot
    the page cache survived any process crash, so every committed entry is intact and only
    the tail is checked; after a reboot, everything past the last fsync is checked.
    Where the kernel does not say, a fresh random id makes every open look like a reboot
    (the safe side)."""
    global _BOOT_ID
    if _BOOT_ID is None:
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                _BOOT_ID = uuid.UUID(f.read().strip()).bytes
        except (OSError, ValueError):
            _BOOT_ID = os.urandom(16)
    return _BOOT_ID
