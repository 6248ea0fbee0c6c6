"""Responses of one connection, released in request order (the hub's side; no I/O).

Requests finish out of order (a publish to a slow topic, then a publish to a fast one);
the protocol promises replies in request order per connection, so each request takes a
slot when it arrives and its reply waits in the slot until every earlier one is out.
When nothing is waiting, a reply is written at once without a slot. What is written goes
to the `write` / `write_sequence` the queue was given (the hub's connection: every byte
through its write path).
"""

from collections import deque


class ReplySlot:
    __slots__ = ("data", "after", "ready", "weight")

    def __init__(self, weight: int):
        self.data = None  # bytes, or a list of chunks for writeSequence
        self.after = None  # called right after the data is written
        self.ready = False
        self.weight = weight  # bytes of its request counted in flight until it is answered


class ReplyQueue:
    def __init__(self, write, write_sequence, released=None, idle=None):
        self._write = write
        self._write_sequence = write_sequence
        self._released = released  # called after replies waiting in slots went out
        self._idle = idle  # called once no request waits for its reply (after some did)
        self.waiting = deque()  # ReplySlot of each request not yet answered, in request order
        self.weight = 0  # bytes of the requests not yet answered (reserve's weights), summed

    def __len__(self) -> int:
        """Requests still waiting for their reply."""
        return len(self.waiting)

    def reserve(self, weight: int = 0) -> ReplySlot:
        """A slot for the reply of a request read now; `weight` (a publish's body size)
        counts in `weight` until the reply is made."""
        slot = ReplySlot(weight)
        if weight:
            self.weight += weight
        self.waiting.append(slot)
        return slot

    def fill(self, slot: ReplySlot, data, after=None) -> None:
        if slot.weight:
            self.weight -= slot.weight
        slot.data = data
        slot.after = after
        slot.ready = True
        slots = self.waiting
        if slots and slots[0] is slot:  # (empty once the connection is gone)
            self._release()

    def send(self, data, after=None) -> None:
        """A reply known at once: written now unless earlier replies are still pending."""
        if self.waiting:
            self.fill(self.reserve(), data, after)
        elif after is None and data.__class__ is bytes:  # (_emit's usual case, inline)
            self._write(data)
        else:
            self._emit(data, after)

    def discard(self) -> None:
        """The connection is gone: drop pending replies, release idle waiters."""
        for slot in self.waiting:
            slot.weight = 0  # (a request answered later counts nothing)
        self.waiting.clear()
        self.weight = 0
        if self._idle is not None:
            self._idle()

    def _emit(self, data, after) -> None:
        if isinstance(data, list):
            self._write_sequence(data)
        else:
            self._write(data)
        if after is not None:
            after()

    def _release(self) -> None:
        slots = self.waiting
        while slots and slots[0].ready:
            slot = slots.popleft()
            self._emit(slot.data, slot.after)
        if self._released is not None:
            self._released()
        if not slots and self._idle is not None:
            self._idle()
