"""Learning where a RADOS ledger ends, and fencing it: BookKeeper's ledger recovery, over
a head object and segment objects instead of bookies.

Every write of a ledger's writer checks the segment's guard (the writer's epoch, and
how many writes came before) in the same write op (rados_writer.py), and a roll
compares the head's epoch. A hub taking a topic over
fences the previous owner's open ledger:

1. it raises the head's epoch by compare-and-swap (of two hubs fencing at once, one
   wins; the other reads again): from then on the old writer cannot record a new
   segment, so the head's segment list is final;
2. it reads the head again, and sets the new epoch as the last segment's guard tag
   (creating the object if the writer had recorded the segment but not yet written it:
   its exclusive create then fails): from then on every write of the old writer fails
   whole on the guard, however long it was paused;
3. it reads the last segment's tail: the entries written before step 2 are whole (each
   write is atomic) and contiguous (each checks the guard's count of the ones before),
   and the earlier segments hold every entry before this one's first (a segment is
   recorded only once the writes to the one before completed), so the tail is the
   ledger's end;
4. it records the ledger closed at that end in the head, compared with its epoch: the
   first recovery closes it, a later one finds it closed.

So a writer acknowledges only entries that landed before step 2, all of which are in
the ledger as closed; what it sends afterwards fails, and it acknowledges nothing more.
A ledger that is merely loaded (another hub still writes it, or a reader looks) is read
the same way without steps 1, 2 and 4: its end as of now.
"""

import errno

from hedwig.concurrency.deferreds import run_now
from hedwig.ledger import rados_layout as layout
from hedwig.ledger.interface import LedgerError, NoSuchLedger
from hedwig.ledger.rados_client import RadosOpError, ledger_error
from hedwig.ledger.rados_ledger import HeadDamaged, RadosLedger, ledger_from_head

_EQ = 1  # LIBRADOS_CMPXATTR_OP_EQ
MAX_ATTEMPTS = 16  # compare-and-swap rounds lost to other fencers before giving up


def load_ledger(client, ledger_id: int):
    """Deferred[RadosLedger]: the ledger as the pool holds it now; NoSuchLedger."""
    return run_now(_load(client, ledger_id))


def fence_ledger(client, ledger_id: int, by: str):
    """Deferred[RadosLedger]: the ledger fenced and closed at its last whole entry (see
    the module docstring), or as it was closed already."""
    return run_now(_fence(client, ledger_id, by))


def _read_head(client, ledger_id: int):
    if type(ledger_id) is not int or ledger_id < 0:
        raise NoSuchLedger(f"ledger {ledger_id!r} does not exist")
    name = layout.head_name(ledger_id)
    try:
        values = yield client.omap_get(name, layout.HEAD_KEYS, f"reading {name}")
    except RadosOpError as e:
        if e.errno == errno.ENOENT:
            raise NoSuchLedger(f"ledger {ledger_id} does not exist") from None
        raise ledger_error(e, f"ledger {ledger_id}: reading its head") from None
    if not values:
        raise NoSuchLedger(f"ledger {ledger_id} does not exist")
    try:
        return ledger_from_head(ledger_id, values)
    except HeadDamaged as e:
        raise LedgerError(str(e)) from None


def _read_end(client, ledger: RadosLedger):
    """Set an open ledger's count, bytes and last time from its last segment's tail."""
    segment = ledger.segment
    while True:
        name = layout.segment_name(ledger.id, segment)
        try:
            values = yield client.omap_get(name, (layout.TAIL,), f"reading the tail of {name}")
        except RadosOpError as e:
            if e.errno != errno.ENOENT:
                raise ledger_error(e, f"ledger {ledger.id}: reading where it ends") from None
            values = {}
        tail = values.get(layout.TAIL)
        if tail is not None:
            try:
                count, ledger_bytes, last_time_us = layout.parse_tail(tail)
            except ValueError as e:
                raise LedgerError(f"ledger {ledger.id}: the tail of {name} cannot be read: {e}") from None
            if segment == ledger.segment:
                ledger.count, ledger.bytes = count, ledger_bytes
            ledger.last_time_us = last_time_us
            return
        if segment == ledger.segment:  # nothing written to the last segment yet
            ledger.count, ledger.bytes = ledger.segments[segment]
        if segment == 0 or not ledger.count:
            return
        segment -= 1  # (the last entry's time is in the segment before)


def _load(client, ledger_id: int):
    ledger = yield from _read_head(client, ledger_id)
    if not ledger.closed:
        yield from _read_end(client, ledger)
    return ledger


def _fence(client, ledger_id: int, by: str):
    for _attempt in range(MAX_ATTEMPTS):
        ledger = yield from _read_head(client, ledger_id)
        if ledger.closed:
            return ledger
        head = layout.head_name(ledger_id)
        epoch, raised = layout.number(ledger.epoch), layout.number(ledger.epoch + 1)

        def raise_epoch(op, ioctx, epoch=epoch, raised=raised):
            op.omap_cmp(layout.EPOCH, epoch, _EQ)
            ioctx.set_omap(op, (layout.EPOCH,), (raised.encode("ascii"),))

        try:
            yield client.write(head, raise_epoch, f"fencing {head}")
        except RadosOpError as e:
            if e.errno == errno.ECANCELED:
                continue  # another fencer raised it first: read again
            raise ledger_error(e, f"ledger {ledger_id}: fencing it") from None
        ledger = yield from _read_head(client, ledger_id)
        if ledger.closed:
            return ledger
        last = layout.segment_name(ledger_id, ledger.segment)
        guard = layout.guard_set(0, ledger.epoch + 1)

        def fence_segment(op, ioctx, guard=guard):
            op.execute(layout.GUARD_CLASS, "set", guard)  # (creating the segment if need be)

        try:
            yield client.write(last, fence_segment, f"fencing {last}")
        except RadosOpError as e:
            raise ledger_error(e, f"ledger {ledger_id}: fencing its last segment") from None
        yield from _read_end(client, ledger)
        record = layout.encode_closed(ledger.count - 1, ledger.bytes, ledger.last_time_us, by)

        def close(op, ioctx, raised=raised, record=record):
            op.omap_cmp(layout.EPOCH, raised, _EQ)
            op.omap_cmp(layout.STATE, layout.OPEN, _EQ)
            ioctx.set_omap(op, (layout.STATE, layout.CLOSED), (layout.CLOSED_STATE.encode("ascii"), record))

        try:
            yield client.write(head, close, f"closing {head}")
        except RadosOpError as e:
            if e.errno == errno.ECANCELED:
                continue  # fenced again meanwhile (or closed): read again
            raise ledger_error(e, f"ledger {ledger_id}: closing it after recovery") from None
        ledger.closed = True
        ledger.closed_by = by
        ledger.epoch += 1
        return ledger
    raise LedgerError(f"ledger {ledger_id}: other hubs kept fencing it; not recovered here")
