"""Fencing a ledger on storage shared by several hubs, and recovering it (BookKeeper's
ledger recovery, on a shared filesystem instead of bookies).

A region's hubs keep their ledgers under one storage root (hedwig.ledger.shared_store).
A hub that takes a topic over from an owner that died, or only seemed to (a SIGSTOP, a
long pause, a partition from ZooKeeper), must be sure that owner acknowledges nothing
more in the topic's open ledger before it reads where the ledger ends. In BookKeeper the
new owner fences the ledger on its bookies and the old writer's adds fail there; here
the fence is recorded on the shared storage itself, and the writer checks it before it
acknowledges:

1. the recoverer marks the ledger fenced: `fenced` (a file naming who fenced, synced)
   and the header's state word set to FENCED;
2. it waits FENCE_SETTLE_S, then reads the header's committed count and checks the
   tail (recovery.recover_tail): the ledger ends at its last whole entry;
3. it writes `closed` (the count and bytes, created once: the first recovery wins and a
   later one reads it), which every hub loading the ledger afterwards takes as the
   ledger's end, whatever the old writer stored later. The topic's ranges record the
   same end in the metadata, and readers never read past a closed range's last seq-id.

The writer's side (shared_store.SharedLedgerStore.append): after storing an entry (its
bytes, index record and committed count, through its mappings) it reads the header's
state word through its mapping, and acknowledges only if it is not FENCED; a fenced
append fails (LedgerFenced) and the ledger takes no more. That read is a memory load:
no system call on the publish path.

Why no acknowledged entry is lost, on one machine (a local directory): both processes
map the same page-cache pages, so a store by one is seen by the other's next load once
it leaves the processor's store buffer. If the writer's read missed the fence, the
recoverer's fence was not yet visible then; the writer's committed count, stored before
that read, is visible within a processor's store-buffer drain time (nanoseconds), far
less than FENCE_SETTLE_S, so the count the recoverer reads after the settle includes the
entry. If the read saw the fence, the entry is not acknowledged. A writer that is
stopped between its store and its read (SIGSTOP, a pause) drained its stores when it
stopped; when it wakes its read sees the fence. So every acknowledged entry is within the
recovered ledger, and nothing past it is ever read: what a fenced writer stored later is
beyond `closed` and never served. (Such an entry was never acknowledged; a publisher
that retries it stores it again in the new ledger, as after any unanswered publish.)

Across machines (a network filesystem at the same path on every hub), mappings are not
coherent between machines: a hub must run with `[ledger] fsync = always`, so that an
entry is on the server before it is acknowledged, and each group commit round checks the
`fenced` file (after its fsyncs, before its acknowledgements) as well as the header
word. The recoverer reads the ledger from the server and, the writer's boot id differing
from its own, rolls forward over whole index records past the header's count, as after
a reboot (recovery.py): every entry synced before a check that missed the fence file is
found. The filesystem must look a missing file up afresh (NFS: `lookupcache=positive`
or `none`) and give close-to-open consistency.
"""

import json
import os
import time
from typing import NamedTuple

from hedwig.ledger.layout import (
    CLOSED_FILE,
    FENCE_FILE,
    HEADER_BYTES,
    HEADER_FILE,
    STATE,
    STATE_CLOSED,
    STATE_FENCED,
    STATE_OFFSET,
    HeaderFields,
)
from hedwig.ledger.pagefiles import sync_paths
from hedwig.ledger.recovery import recover_as_the_header_says

# How long a recoverer waits between setting the fence and reading the count: orders of
# magnitude beyond any processor's store-buffer drain, short beside a takeover.
FENCE_SETTLE_S = 0.01


class ClosedLedger(NamedTuple):
    """Where a fenced (or cleanly closed) ledger ends, as its `closed` record says."""

    count: int  # entries 0..count-1 are the ledger's
    data_bytes: int
    fenced_by: str
    problem: str | None = None  # why recovery cut entries the header counted, if it did


def read_closed(path: str) -> ClosedLedger | None:
    """The ledger's `closed` record, None when it has none (or a damaged one)."""
    try:
        with open(os.path.join(path, CLOSED_FILE), encoding="utf-8") as f:
            record = json.load(f)
        return ClosedLedger(int(record["count"]), int(record["bytes"]), str(record.get("by", "")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def is_fenced(path: str) -> bool:
    """Whether the ledger's fence file exists (one stat; checked per group commit round)."""
    return os.path.exists(os.path.join(path, FENCE_FILE))


def _mark_fenced(path: str, by: str) -> None:
    """Step 1: the fence file (synced with its directory entry) and the header's word."""
    fence = os.path.join(path, FENCE_FILE)
    fd = os.open(fence, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, json.dumps({"by": by, "at_us": time.time_ns() // 1000}).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    fd = os.open(os.path.join(path, HEADER_FILE), os.O_RDWR)
    try:
        (state,) = STATE.unpack(os.pread(fd, STATE.size, STATE_OFFSET))
        if state != STATE_CLOSED:  # (a ledger its writer closed has no writer left)
            os.pwrite(fd, STATE.pack(STATE_FENCED), STATE_OFFSET)
    finally:
        os.close(fd)
    sync_paths([path])


def _write_closed(path: str, closed: ClosedLedger) -> ClosedLedger:
    """Step 3: the `closed` record, created once; a record there already wins."""
    staging = os.path.join(path, f"{CLOSED_FILE}.{os.getpid()}.tmp")
    record = {"count": closed.count, "bytes": closed.data_bytes, "by": closed.fenced_by}
    with open(staging, "w", encoding="utf-8") as f:
        json.dump(record, f)
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(staging, os.path.join(path, CLOSED_FILE))
    except FileExistsError:
        return read_closed(path) or closed
    finally:
        os.unlink(staging)
    sync_paths([path])
    return closed


def fence_and_recover(path: str, by: str) -> ClosedLedger:
    """Fence the ledger in directory `path` and recover it to its last whole entry (see
    the module docstring); where it ends. Blocking file work: run it in a thread."""
    done = read_closed(path)
    if done is not None:
        return done
    _mark_fenced(path, by)
    time.sleep(FENCE_SETTLE_S)
    with open(os.path.join(path, HEADER_FILE), "rb") as f:
        header = HeaderFields(f.read(HEADER_BYTES))
    recovered = recover_as_the_header_says(path, header)
    if recovered is None:  # (closed by its writer: its count stands)
        return _write_closed(path, ClosedLedger(header.committed_count, header.committed_bytes, by))
    return _write_closed(path, ClosedLedger(recovered.count, recovered.data_bytes, by, recovered.problem))
