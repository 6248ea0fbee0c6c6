"""One topic's idempotent publishes on the client side, without I/O: numbering, order,
and what to send again after a lost connection, a redirect or a hub restart.

Every message set gets the next sequence of the topic (0, 1, ...) once, and keeps it
through any number of resends: the hub stores a set the first time it sees its number
and answers a repeat with the seq-ids of that first time (hedwig.hub.producer_state), so
a set whose answer was lost can be sent again without being stored twice.

Order is the whole difficulty. The hub refuses a set numbered past its producer's last
+ 1 (PRODUCER_SEQUENCE_GAP), so sets go out in sequence order and, after a failure that
may be undone by sending again (`retryable`), the lane stops sending new sets, waits for
every set on the wire to come back, then sends the failed ones again from the lowest,
before anything newer: a rewind. A gap answered while a lower set is being resent is
part of it. A set refused for good (too large, not authorised) was not stored; the sets
after it, refused as gaps or not yet sent, fail with it, and numbering goes on from its
number, so the lane can be used again. At most `max_sets_in_flight` sets are on the wire:
the hub remembers the seq-ids of a producer's last WINDOW sets, and a resend must find them.

A producer the hub forgot (another producer of the same user, or with [auth] off anyone's,
pushed it out of the topic's table: hedwig.hub.producer_state) has its next set refused
as a gap although nothing lower is unanswered. Nothing is in doubt then (every set before
it was answered, so stored), and the lane starts a new producer, as Kafka's KIP-360
does: once nothing is on the wire its unanswered sets are numbered again from 0, under a
producer id of its own (`restarted`), in the same order.

Numbers are u32: a lane that has numbered 2^32 sets is `full`, and the topic's next sets
go to a new lane `after` it, with a producer id of its own, which sends nothing until the
full lane is idle (so the publish order holds across the two producers).
"""

from collections import deque
from dataclasses import dataclass

from hedwig.protocol.producer_requests import MAX_SEQUENCE


@dataclass(slots=True, eq=False)
class LaneSet:
    """One message set of the lane: `waiters` learn its outcome (the driver's objects).
    Compared by identity, as before: two sets are never the same set."""

    sequence: int
    message_set: bytes
    count: int
    waiters: object
    attempts: int = 0
    done: bool = False


class PublishLane:
    def __init__(self, max_sets_in_flight: int = 32, *, after=None, max_sequence: int = MAX_SEQUENCE):
        self.max_sets_in_flight = max_sets_in_flight
        self.max_sequence = max_sequence
        self.after = after  # the full lane whose sets go first (None: none)
        self.successor = None  # the lane after this one, once this one is full
        if after is not None:
            after.successor = self
        self.producer_id = None  # its own producer id (a lane after another), else the client's
        self.forgotten = False  # the hub forgot its producer: a new one at the next rewind
        self.restarted = 0  # new producers started after the hub forgot one
        self.next_sequence = 0
        self.unsent: deque[LaneSet] = deque()  # in sequence order
        self.on_wire = 0  # sets sent whose answer has not come back
        self.to_resend: list[LaneSet] = []  # failed retryably: sent again at the rewind
        self.unanswered: dict[int, LaneSet] = {}  # sequence -> set, every set not yet done

    @property
    def full(self) -> bool:
        """Every number was given: the topic's next sets go to a new lane after this one."""
        return self.next_sequence > self.max_sequence

    def add(self, message_set: bytes, count: int, waiters) -> LaneSet:
        item = LaneSet(self.next_sequence, message_set, count, waiters)
        self.next_sequence += 1
        self.unsent.append(item)
        self.unanswered[item.sequence] = item
        return item

    def ready(self) -> list[LaneSet]:
        """The sets to send now, in order (counted on the wire from here)."""
        if self.after is not None:
            if not self.after.idle:
                return []
            self.after = None
        out = []
        while self.unsent and not self.to_resend and self.on_wire < self.max_sets_in_flight:
            item = self.unsent.popleft()
            item.attempts += 1
            self.on_wire += 1
            out.append(item)
        return out

    def answered(self, item: LaneSet) -> bool:
        """The hub answered `item` with seq-ids; True when the driver should tell its
        waiters (False: the set was already given up)."""
        self.on_wire -= 1
        if item.done:
            return False
        item.done = True
        del self.unanswered[item.sequence]
        return True

    def failed(self, item: LaneSet, retryable: bool, gap: bool, may_restart: bool = True) -> list[LaneSet]:
        """`item` failed; the sets to fail now (none when it will be sent again). `gap`:
        the hub refused it as PRODUCER_SEQUENCE_GAP, retryable when a lower set is
        unanswered (it is being resent); with none, the hub forgot the producer, and
        (`may_restart`) the lane goes on as a new one."""
        self.on_wire -= 1
        if item.done:
            return []
        if gap:
            if any(seq < item.sequence for seq in self.unanswered):
                retryable = True
            elif may_restart and item.sequence > 0 and self.after is None and self.successor is None:
                self.forgotten = retryable = True
        if retryable:
            self.to_resend.append(item)
            return []
        # Refused for good: it and everything after it (gaps, or never sent) fail.
        given_up = [s for seq, s in sorted(self.unanswered.items()) if seq >= item.sequence]
        for s in given_up:
            s.done = True
            del self.unanswered[s.sequence]
        self.unsent = deque(s for s in self.unsent if not s.done)
        self.to_resend = [s for s in self.to_resend if not s.done]
        self.next_sequence = item.sequence
        return given_up

    def rewind_due(self) -> bool:
        """True when the sets to resend should go now: nothing of the lane is on the wire."""
        return bool(self.to_resend) and self.on_wire == 0

    def rewind(self) -> None:
        """Put the failed sets back at the front, lowest first; after a forgotten
        producer, every unanswered set numbered again from 0 for a new one."""
        resend = sorted(self.to_resend, key=lambda s: s.sequence)
        self.to_resend = []
        self.unsent.extendleft(reversed(resend))
        if self.forgotten:
            self._restart()

    def _restart(self) -> None:
        """(Nothing on the wire.) A new producer: no id yet, its sets 0, 1, ... the
        unanswered ones in order, each never sent under it (so its first send says so)."""
        self.forgotten = False
        self.restarted += 1
        self.producer_id = None
        self.unanswered = {}
        for number, item in enumerate(self.unsent):
            item.sequence = number
            item.attempts = 0
            self.unanswered[number] = item
        self.next_sequence = len(self.unsent)

    @property
    def idle(self) -> bool:
        return not self.unanswered
