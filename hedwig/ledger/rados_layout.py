"""How ledgers are laid out in a RADOS pool: object names, omap keys and their values.

A ledger is a head object and segment objects, in the pool (and namespace) of the store:

    ledger-ids                      omap next: the first ledger id not yet reserved
    ledger.000000000042             the head; omap:
        epoch       the writer's epoch, raised by each fence (compare-and-swap)
        state       open | closed
        segments    JSON [[first entry id, ledger bytes before it], ...], one per segment
        writer      the hub that created the ledger (for operators)
        closed      JSON {"last_entry", "bytes", "last_time_us", "by"}, once closed
    ledger.000000000042.000000      segment 0; data: entry frames back to back;
        its guard   cls_version's xattr (Ceph's "version" object class): the writer's
                    epoch as its tag, the writes made to the segment as its version
        omap tail   the next entry id, ledger bytes and last publish time after the
                    last write
        omap e<id>  each entry's offset in the segment, length, publish time and CRC

A RADOS object holds at most 128 MiB (osd_max_object_size), so a ledger rolls over to a
new segment at `segment_bytes`, recording the segment in the head first. One write op is
atomic on one object: an entry's frame, its index record and the new tail land together
or not at all, so every entry found in a segment is whole. Every write to a segment
begins with the guard's `inc_conds`: it fails (ECANCELED), and the whole op with it,
unless the tag is the writer's epoch and the version the number of writes it made
before, then counts itself; so writes land in order, each right after the one before,
and none of a fenced writer's lands. The guard is an xattr, which the OSD reads from the
object as queued, so guarded writes pipeline as plain appends do (an omap compare would
make each wait for the one before to commit: a seventh of the throughput). The head is
written rarely (create, roll, close, fence) and compares its omap epoch; values compared
by omap_cmp are fixed-width ASCII (compared as strings).
"""

import json
import struct

IDS_OBJECT = "ledger-ids"
IDS_KEY = "next"
HEAD_PREFIX = "ledger."

EPOCH = "epoch"
STATE = "state"
SEGMENTS = "segments"
WRITER = "writer"
CLOSED = "closed"
TAIL = "tail"
OPEN, CLOSED_STATE = "open", "closed"
HEAD_KEYS = (EPOCH, STATE, SEGMENTS, WRITER, CLOSED)

# An entry in a segment: its id, publish time, length and CRC, then its bytes.
FRAME = struct.Struct("<QQII")
FRAME_BYTES = FRAME.size
# An entry's index record (omap value): offset in its segment, length, publish time, CRC.
INDEX = struct.Struct("<QIQI")

MAX_OBJECT_BYTES = 128 << 20  # osd_max_object_size's default


def head_name(ledger_id: int) -> str:
    return f"{HEAD_PREFIX}{ledger_id:012d}"


def segment_name(ledger_id: int, segment: int) -> str:
    return f"{HEAD_PREFIX}{ledger_id:012d}.{segment:06d}"


def parse_head_name(name: str) -> int | None:
    """The ledger id a head object's name holds; None for any other object."""
    if (
        name.startswith(HEAD_PREFIX)
        and len(name) == len(HEAD_PREFIX) + 12
        and name[len(HEAD_PREFIX) :].isdigit()
    ):
        return int(name[len(HEAD_PREFIX) :])
    return None


def number(value: int) -> str:
    """A counter as omap_cmp compares it: fixed-width decimal."""
    return f"{value:020d}"


def entry_key(entry_id: int) -> str:
    return f"e{entry_id:016x}"


def tail_value(next_entry: int, ledger_bytes: int, last_time_us: int) -> str:
    return f"{next_entry:016x}{ledger_bytes:016x}{last_time_us:016x}"


def parse_tail(value: bytes) -> tuple[int, int, int]:
    """(next entry id, ledger bytes, last publish time) of a tail value."""
    text = value.decode("ascii")
    if len(text) != 48:
        raise ValueError(f"a tail of {len(text)} characters")
    return int(text[:16], 16), int(text[16:32], 16), int(text[32:], 16)


# cls_version (src/cls/version in Ceph): obj_version {u64 ver, string tag} and
# obj_version_cond {obj_version, u32 cond}, each in Ceph's struct encoding (u8 version,
# u8 compat, u32 length, then the fields, little-endian); VER_COND_EQ (1) compares both.
GUARD_CLASS = "version"
_VER_COND_EQ = 1


def _struct(body: bytes) -> bytes:
    return struct.pack("<BBI", 1, 1, len(body)) + body


def _obj_version(ver: int, tag: str) -> bytes:
    name = tag.encode("ascii")
    return _struct(struct.pack("<QI", ver, len(name)) + name)


def guard_set(ver: int, epoch: int) -> bytes:
    """cls_version "set": the guard becomes (ver, the epoch as tag)."""
    return _struct(_obj_version(ver, number(epoch)))


def guard_next(ver: int, epoch: int) -> bytes:
    """cls_version "inc_conds": count one more write if the guard is (ver, epoch)."""
    condition = _struct(_obj_version(ver, number(epoch)) + struct.pack("<I", _VER_COND_EQ))
    return _struct(_obj_version(0, "") + struct.pack("<I", 1) + condition)


def encode_segments(segments: list) -> bytes:
    return json.dumps(segments, separators=(",", ":")).encode("ascii")


def decode_segments(value: bytes) -> list:
    segments = json.loads(value)
    if not isinstance(segments, list) or not segments:
        raise ValueError("no segments")
    return [(int(first), int(before)) for first, before in segments]


def encode_closed(last_entry: int, ledger_bytes: int, last_time_us: int, by: str) -> bytes:
    record = {"last_entry": last_entry, "bytes": ledger_bytes, "last_time_us": last_time_us, "by": by}
    return json.dumps(record, separators=(",", ":")).encode("utf-8")


def decode_closed(value: bytes) -> tuple[int, int, int, str]:
    record = json.loads(value)
    return int(record["last_entry"]), int(record["bytes"]), int(record["last_time_us"]), str(record["by"])
