"""Reading a topic log down from its tail, a window of seq-ids at a time.

The hub's producer sets and a region's high-water marks are both derived from the log
(the one record written atomically with each entry) by reading it backwards from the
tail until what they need is found. Both read a window [low, floor] per step, with the
same byte bound and the same widening of the window, so the reading is written here once.
"""

from twisted.internet.defer import inlineCallbacks

from hedwig.protocol.entry import decode_entry_header

# One read of a scan takes at most this many bytes and entries (the headers of each are
# decoded in the same turn), and the scan gives the reactor back between two reads.
SCAN_STEP_BYTES = 4 << 20
SCAN_STEP_ENTRIES = 1024
FIRST_SPAN = 4096  # seq-ids per backward step, doubled while what is sought is not found
MAX_SPAN = 1 << 24


@inlineCallbacks
def read_window(topic_log, low: int, floor: int, window: list, next_turn):
    """Append (entry, decoded header) to `window` for each entry starting in [low, floor],
    in log order; Deferred[None]. Reads of at most SCAN_STEP_BYTES and SCAN_STEP_ENTRIES,
    each after the first waiting for `next_turn()` (a Deferred fired at a later reactor
    turn): a mapped ledger answers a read at once, and a window of millions of entries
    read in one turn would stall every other connection. SeqNotRetained when garbage
    collection removed the bottom meanwhile: `window` is filled by the caller's list so
    that what was read before that is still seen."""
    seq = low
    while seq <= floor:
        if seq != low:
            yield next_turn()
        entries = yield topic_log.read(seq, min(floor - seq + 1, SCAN_STEP_ENTRIES), SCAN_STEP_BYTES)
        if not entries:
            return
        for entry in entries:
            if entry.first_seq > floor:
                return
            window.append((entry, decode_entry_header(entry.data)))
        seq = entries[-1].last_seq + 1
