"""The hub-wide budget of bytes held in partial requests (Kafka's queued.max.request.bytes).

A frame announces its length in its first four bytes; until its last byte arrives the
connection's decoder buffers what came so far. Without a hub-wide bound, every connection
may hold a frame of up to `max_frame_bytes` half sent, and a few dozen sockets pin
gigabytes. So, as Kafka's memory pool does, a connection reserves the whole frame's size
from one budget (`[hub] max_partial_request_bytes`) as soon as the length is known, and
reads on only once the reservation is granted; otherwise it stops reading
(transport.pauseProducing) and waits its turn, first come first served, while the rest
stays in the kernel's socket buffers. A frame that completes, a connection that closes
or times out, gives its reservation back, and the waiters are granted theirs in order.

Reserving the whole frame rather than the bytes read so far is what avoids deadlock: a
connection granted its frame can always finish it, so reservations always come back
(a frame that stops arriving is ended by the connection's frame timeout). A waiting
connection holds at most one transport read (64 KiB) beyond the budget.

The budget needs no clock and no I/O: holders are told through `intake_granted()`.
"""

from collections import OrderedDict


class RequestIntake:
    """One budget of partial-request bytes shared by every connection of a hub.

    A holder (a connection) states the size of the frame it is receiving with
    `hold(holder, size)` after each read; `release(holder)` when it closes. The budget
    must be at least the largest frame (checked by hedwig.config.loading), so any single frame
    can always be granted once the others are done."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.reserved = 0  # bytes granted to holders, summed
        self._held = {}  # holder -> bytes granted
        self._waiting = OrderedDict()  # holder -> bytes wanted, in the order they asked
        self.waits = 0  # times a holder had to wait for the budget (a counter for STATS)

    def hold(self, holder, size: int) -> bool:
        """Reserve `size` bytes for `holder`'s frame in progress (0: none), in place of
        what it held. True when granted (or shrunk: the surplus goes to the waiters);
        False when the holder must stop reading until its `intake_granted()` is called."""
        held = self._held.get(holder, 0)
        if size <= held:
            self._waiting.pop(holder, None)
            if size < held:
                self._set(holder, size)
                self._grant_waiters()
            return True
        if not self._waiting and self.reserved + size - held <= self.max_bytes:
            self._set(holder, size)
            return True
        if holder not in self._waiting:
            self.waits += 1
        self._waiting[holder] = size  # (a later, larger ask keeps its place in line)
        return False

    def release(self, holder) -> None:
        """The holder is gone (or dropped its frame): its reservation goes to the waiters."""
        self._waiting.pop(holder, None)
        if self._held.get(holder):
            self._set(holder, 0)
            self._grant_waiters()

    def held_by(self, holder) -> int:
        return self._held.get(holder, 0)

    def is_waiting(self, holder) -> bool:
        return holder in self._waiting

    def stats(self) -> dict:
        return {
            "max_bytes": self.max_bytes,
            "reserved_bytes": self.reserved,
            "holders": len(self._held),
            "waiting": len(self._waiting),
            "waits": self.waits,
        }

    def _set(self, holder, size: int) -> None:
        self.reserved += size - self._held.get(holder, 0)
        if size:
            self._held[holder] = size
        else:
            self._held.pop(holder, None)

    def _grant_waiters(self) -> None:
        """Grant the waiters in order while the budget allows (the first that does not
        fit stops the line: a large frame is not starved by smaller ones behind it)."""
        waiting = self._waiting
        while waiting:
            holder, size = next(iter(waiting.items()))
            if self.reserved + size - self._held.get(holder, 0) > self.max_bytes:
                return
            del waiting[holder]
            self._set(holder, size)
            holder.intake_granted()
