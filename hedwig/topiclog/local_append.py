"""A topic log's common append, in one call: a client's message set (no origin, no via,
no producer) to an idle open log whose store acknowledges at once.

Part of TopicLog (topic_log.py). It is TopicLog._hand_over with what the common case
does not need left out: no PendingAppend, no trip through the in-flight queue, no
re-checks of a state already checked. Anything else (a relayed or idempotent append,
appends in flight or waiting, a roll due or under way, the ack gate held, an argument
to refuse) takes the general path, which says why. The store is asked exactly as there
(fencing and closed ledgers are the store's to refuse); an append it does not
acknowledge at once goes on as a PendingAppend in the in-flight queue, like any other.
"""

from twisted.internet.defer import fail
from twisted.python.failure import Failure

from hedwig.protocol.entry import ENTRY_HEADER_FIXED_SIZE
from hedwig.topiclog.entry import LogEntry
from hedwig.topiclog.pending import MAX_COUNT, SEQ_LIMIT, PendingAppend


class LocalAppend:
    """Part of TopicLog: append_now's common case."""

    def _append_local(self, message_set, count: int):
        """The LogEntry, acknowledged; the append's Deferred when the store did not
        acknowledge at once; None when the general path must take the append (nothing
        was done then but moving the publish clock). The caller checked that the log is
        open, idle and not gated."""
        if (
            message_set.__class__ is not bytes
            or not message_set
            or count.__class__ is not int
            or not 1 <= count <= MAX_COUNT
        ):
            return None
        now = int(self._clock.seconds() * 1_000_000)  # (_now_us, inline)
        if now < self._last_time_us:
            now = self._last_time_us
        self._last_time_us = now
        ledger = self._open
        if ledger.closed:  # (a roll to retry: one failed after closing it, or no ledger yet)
            return None
        entries = ledger.entries
        if entries:
            if (
                entries >= self._max_entries
                or ledger.bytes + ENTRY_HEADER_FIXED_SIZE + len(self._region) + len(message_set)
                > self._max_bytes
                or now > ledger.roll_after_us
            ):
                return None  # a roll first
        else:
            ledger.roll_after_us = now + self._max_age_us
        first = self._next_seq
        last = first + count - 1
        if last >= SEQ_LIMIT:
            return None
        data = self._local_headers.header(first, count, now) + message_set
        entry = LogEntry(first, last, data, now)
        # State moves first, as in _hand_over.
        nbytes = len(data)
        self._next_seq = last + 1
        ledger.index.append(first)
        ledger.entries = entries + 1
        ledger.bytes += nbytes
        try:
            d = self._append_now(ledger.ledger_id, data, now)  # (an int: acknowledged at once)
        except Exception:
            d = fail()
        if d.__class__ is int or (d.called and not isinstance(d.result, Failure)):
            self.last_seq = last  # (_deliver's part: nothing was in flight, the gate is open)
            if ledger.entries >= self._max_entries or ledger.bytes >= self._max_bytes:  # (_is_full)
                self._start_roll()
            return entry
        op = PendingAppend(None, count, self._region, None, now)
        op.entry = entry
        self._inflight.append(op)
        self._handing = op
        d.addCallbacks(self._stored, self._store_failed, callbackArgs=(op,), errbackArgs=(op,))
        self._handing = None
        self._handed(op, ledger, first, nbytes)
        self._deliver()
        return self._outcome(op)
