"""A shared subscription's acknowledgements: the consumed seq-id, the acks above it,
expiry, redelivery, dead letters and the message bound's skips (SharedDispatcher's part).

Every seq-id between the consumed seq-id (the floor) and the first never delivered is
acknowledged, held by a member's lease, waiting to be delivered again, or on its way to
the dead-letter topic. An acknowledgement (of any member: the message is done, whoever
had it) adds a range to `acked` and takes it from the leases; when the acknowledged
seq-ids reach the floor, the floor moves over them: that is the consumed seq-id pruning
and garbage collection see. Acknowledgements above the floor are written with it
(ranges.py) under the subscription's write policy.

A lease not acknowledged within `ack_timeout` (and a member's, when it leaves, and a
NACKed one) is given back: delivered again with its count plus one, or, once it was
delivered `max_deliveries` times, published to the dead-letter topic and then
acknowledged. A message that cannot be published there at all (refused as a message
set) is logged and acknowledged, so one bad message never stops the queue; one whose
publish failed otherwise is delivered again and dead-lettered again after that.
"""

from collections import deque
from heapq import heapify, heappush

from twisted.logger import Logger

from hedwig.delivery.ranges import encode_ranges
from hedwig.meta.interface import MAX_ACKED_BYTES
from hedwig.protocol.status import StatusError

_logger = Logger()

# Dead leases kept at most in the expiry queue beyond twice the live segments, before it
# is compacted (leases acknowledged early wait there until their deadline otherwise).
_EXPIRY_SLACK = 1024
# Ranges in one ACK beyond which they are merged into the acknowledgements and taken from
# the leases in one pass each (a key_shared member's acks are a range per run of its keys).
_FEW_RANGES = 4


class AckBook:
    """Part of SharedDispatcher (shared.py): what happens to delivered seq-ids."""

    __slots__ = ()

    # -- acknowledgements --------------------------------------------------------------------

    def acknowledge(self, ranges) -> int:
        """Acknowledge seq-id ranges [(first, last)] (any member's, or none's); those
        not delivered yet, or below the floor, are ignored. The number newly acknowledged."""
        floor = self.subscription.consumed_seq
        limit = self.next_seq - 1
        newly = 0
        clipped = []
        for first, last in ranges:
            if first <= floor:
                first = floor + 1
            if last > limit:
                last = limit
            if first <= last:
                clipped.append((first, last))
        if len(clipped) > _FEW_RANGES:
            newly = self._ack_ranges(clipped)
        else:
            for first, last in clipped:
                newly += self._ack_range(first, last)
        if newly:
            self.counters.acked += newly
            self._acks_moved(newly)
        return newly

    def _ack_range(self, first: int, last: int) -> int:
        """Acknowledge first..last (above the floor); how many were not already."""
        newly = 0
        for start, end in self.acked.add(first, last):
            newly += end - start + 1
            self.holdings.release(start, end)
        return newly

    def _ack_ranges(self, ranges: list) -> int:
        """Acknowledge many ranges at once (a key_shared member's ACK: a range per run of
        its keys), each list of acks and leases spliced once; how many were not already."""
        ranges.sort()
        disjoint = [ranges[0]]
        for first, last in ranges:
            if first <= disjoint[-1][1] + 1:
                if last > disjoint[-1][1]:
                    disjoint[-1] = (disjoint[-1][0], last)
            else:
                disjoint.append((first, last))
        new = self.acked.add_many(disjoint)
        if not new:
            return 0
        self.holdings.release_many(new)
        return sum(end - start + 1 for start, end in new)

    def _acks_moved(self, newly: int) -> None:
        floor = self.subscription.consumed_seq
        new_floor = self.acked.take_front(floor)
        if new_floor != floor:
            self.hooks.advance(self, new_floor)
        self.subscription.acks_changed(newly)
        self.pump()

    def nack(self, member, ranges) -> int:
        """Take back what `member` holds of these ranges and deliver it again now (to any
        member, itself included); the number taken back."""
        taken = 0
        for first, last in ranges:
            for start, end, lease in self.holdings.release(first, last, member):
                taken += end - start + 1
                self.give_back(start, end, lease.count)
        if taken:
            self.counters.nacked += taken
            self.pump()
        return taken

    def give_back(self, first: int, last: int, count: int) -> None:
        """first..last, delivered `count` times, were not acknowledged: deliver them again,
        or dead-letter them once they were delivered max_deliveries times."""
        if self.max_deliveries is not None and count >= self.max_deliveries:
            self._dead_letter(first, last, count)
        else:
            heappush(self.queue, (first, last, count + 1))

    # -- expiry ------------------------------------------------------------------------------

    def lease_made(self, lease) -> None:
        expiry = self.expiry
        expiry.append(lease)
        if len(expiry) > 2 * len(self.holdings) + _EXPIRY_SLACK:
            self.expiry = deque(live for live in expiry if live.held)
        if self._expiry_timer is None:
            self._arm_expiry()

    def _arm_expiry(self) -> None:
        expiry = self.expiry
        while expiry and not expiry[0].held:
            expiry.popleft()
        if expiry and not self.stopped:
            delay = max(0.0, expiry[0].deadline - self.clock.seconds())
            self._expiry_timer = self.clock.callLater(delay, self._expire)

    def _expire(self) -> None:
        self._expiry_timer = None
        now = self.clock.seconds()
        expiry = self.expiry
        returned = 0
        while expiry and expiry[0].deadline <= now:
            lease = expiry.popleft()
            if lease.held:
                for start, end, _ in self.holdings.release_lease(lease):
                    returned += end - start + 1
                    self.give_back(start, end, lease.count)
        if returned:
            self.counters.expired += returned
            _logger.debug(
                "{topic}/{subscriber}: {count} deliveries unacknowledged after {timeout}s go out again",
                topic=self.subscription.topic,
                subscriber=self.subscription.subscriber_id,
                count=returned,
                timeout=self.ack_timeout_s,
            )
        self._arm_expiry()
        if returned:
            self.pump()

    # -- the floor ---------------------------------------------------------------------------

    def skip_through(self, seq: int) -> int:
        """Move the floor to `seq`, dropping what is below it (a message bound, retention):
        the number of seq-ids skipped that nobody had acknowledged."""
        floor = self.subscription.consumed_seq
        if seq <= floor:
            return 0
        skipped = (seq - floor) - self.acked.drop_through(seq)
        self.holdings.release(floor + 1, seq)
        queue = [(max(first, seq + 1), last, count) for first, last, count in self.queue if last > seq]
        heapify(queue)
        self.queue = queue
        self.delays.drop_through(seq)
        if self.next_seq <= seq:
            self.next_seq = seq + 1
        self.hooks.advance(self, seq)
        self.pump()
        return skipped

    def reposition(self, seq: int) -> None:
        """A reset moved the floor of this subscription, which no member holds: nothing
        above it is acknowledged or owed any more."""
        self.acked.drop_through(2**63)
        self.holdings.release_where(lambda lease: False)
        self.queue = []
        self.delays.drop_through(2**63)
        if self.keys is not None:
            self.keys.clear_parked()
        self.next_seq = seq + 1
        self.subscription.acks_changed(0)

    def acked_bytes(self, seq: int) -> bytes:
        """The acknowledgements above `seq` (the pointer being written), for the record."""
        return encode_ranges(self.acked, seq, MAX_ACKED_BYTES)

    @property
    def pending(self) -> int:
        """Messages delivered and not acknowledged (held by members)."""
        return sum(member.held for member in self._order)

    @property
    def queued(self) -> int:
        """Messages waiting to be delivered again (some may be acknowledged meanwhile),
        and a key_shared subscription's held back."""
        queued = sum(last - first + 1 for first, last, _ in self.queue)
        return queued if self.keys is None else queued + self.keys.parked_messages()

    # -- dead letters ------------------------------------------------------------------------

    def _dead_letter(self, first: int, last: int, count: int) -> None:
        self.dead_letters_in_flight += last - first + 1
        published = self.hooks.dead_letter(self, first, last, count)
        published.addCallbacks(
            self._dead_lettered, self._dead_letter_failed, (first, last), None, (first, last, count)
        )

    def _dead_lettered(self, _entry, first: int, last: int) -> None:
        self.dead_letters_in_flight -= last - first + 1
        self.dead_lettered += last - first + 1
        self.counters.dead_lettered += last - first + 1
        self._settle(first, last)

    def _dead_letter_failed(self, failure, first: int, last: int, count: int) -> None:
        self.dead_letters_in_flight -= last - first + 1
        where = f"{self.subscription.topic}/{self.subscription.subscriber_id}"
        if failure.check(StatusError):  # (the set itself was refused: it never will be taken)
            _logger.error(
                "{where}: seq-ids {first}..{last} cannot go to dead-letter topic {dlq} ({error});"
                " acknowledging them",
                where=where,
                first=first,
                last=last,
                dlq=self.dead_letter_topic,
                error=failure.getErrorMessage(),
            )
            self.dead_letter_failures += last - first + 1
            self._settle(first, last)
            return
        _logger.warn(
            "{where}: publishing seq-ids {first}..{last} to dead-letter topic {dlq} failed ({error});"
            " delivering them again",
            where=where,
            first=first,
            last=last,
            dlq=self.dead_letter_topic,
            error=failure.getErrorMessage(),
        )
        if not self.stopped:
            heappush(self.queue, (first, last, count))
            self.pump()

    def _settle(self, first: int, last: int) -> None:
        """Done with first..last (dead-lettered, or refused there): acknowledged."""
        if self.stopped:
            return
        floor = self.subscription.consumed_seq
        if last <= floor:
            return
        newly = self._ack_range(max(first, floor + 1), last)
        if newly:
            self._acks_moved(newly)
