"""What a topic knows of its idempotent producers: per producer, its last sequence and the
seq-ids of its latest sets, so that a set sent again is answered, not stored again.

The table is derived from the topic's log, not kept beside it. An idempotent set's entry
header carries (producer id, sequence) (hedwig.protocol.entry), and the entry is the one
record written atomically with the set: after a restart or a SIGKILL between the ledger
append and anything else, the table is exactly what is durable, so a set the hub
acknowledged is always recognised as a repeat. A record kept elsewhere (the metadata
store) would cost a write per set, or lag the log after a crash and need this same scan
to catch up: hedwig/region/highwater.py solves the relays' version of the problem so.

The scan is lazy and runs backwards from the tail, as HighWater's does: when a producer
the table does not know publishes, or repeats a set older than what the table holds of
it, the log is read down (reads of at most SCAN_STEP_BYTES and SCAN_STEP_ENTRIES, a
reactor turn apart: hedwig/topiclog/backward.py) until the producer's sets are known or
the retained log ends; every producer met on the way is learnt too. The whole log is
scanned at most once per opening of the topic. Only the sets that need the scan wait for
it (in the order they came): a known producer's next set, or a repeat of a set the table
holds, is decided at once, as a scan only ever learns sets older than those held.

Bounds (a hostile client may invent producer ids, and INIT_PRODUCER costs nothing): the
table is shared out by owner, the user whose connection published (None with [auth]
off), each owner holding at most `max_producers` producers of the topic (default
MAX_PRODUCERS; producers learnt from a scan are held apart, under LEARNT, until their
owner publishes again), so one user's new producers push out only that user's own. Within
a share a producer that has published more than one set here is protected from new ones
(a segmented LRU: new producers are on probation, those heard from again are kept in the
protected part, at most three quarters of the share), so a crowd of short-lived producers
(one set each, [auth] off or one user's) pushes out each other, not the long-lived ones.
At most `window` sets are kept per producer (default WINDOW). A producer forgotten, or
whose sets were garbage collected, is unknown: its next set is refused with
PRODUCER_SEQUENCE_GAP unless it starts again at sequence 0 (the clients, with nothing in
doubt, ask for a new producer id then: hedwig/client/idempotent.py). A repeat older
than the window is refused with DUPLICATE_SEQUENCE (stored once; seq-ids forgotten); the
clients keep fewer sets than the window in flight per topic, so they never meet it.

The rules for a set `s` of producer P, whose last set is L:
  s == L + 1 (or s == 0 for a producer new to the topic): appended, and remembered at
  once, before it is durable, so pipelined sets follow it; a repeat while it is in flight
  waits for the same outcome; s <= L within the window: answered with the seq-ids of the
  first time; s > L + 1: PRODUCER_SEQUENCE_GAP, nothing stored.
A set the store refuses (STORAGE_FULL) while it is P's last is forgotten, so that it may
be sent again; a failure that stops the log drops the whole table with the log.
"""

from collections import OrderedDict, deque

from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.internet.task import deferLater
from twisted.python.failure import Failure

from hedwig.concurrency.deferreds import Waiters
from hedwig.protocol.requests import RequestRefused
from hedwig.protocol.status import Status
from hedwig.topiclog.backward import FIRST_SPAN, MAX_SPAN, read_window
from hedwig.topiclog.errors import SeqNotRetained

WINDOW = 64  # sets remembered per producer and topic
MAX_PRODUCERS = 1024  # producers remembered per topic and owner ([hub] max_producers)
LEARNT = object()  # the owner of producers learnt from the log, until they publish again


class ProducerSets:
    """One producer's latest sets on one topic: `sets[i]` is the set numbered
    `last_sequence - len(sets) + 1 + i`: a (first_seq, last_seq) tuple once stored, an
    InFlightSet while in flight (or failed in flight)."""

    __slots__ = ("last_sequence", "sets", "owner")

    def __init__(self, last_sequence: int, window: int, owner=None):
        self.last_sequence = last_sequence
        self.sets = deque(maxlen=window)
        self.owner = owner

    @property
    def lowest_sequence(self) -> int:
        return self.last_sequence - len(self.sets) + 1


class InFlightSet:
    """A set appended and not yet durable: what a repeat of it waits for. Its waiters'
    Deferreds are made only when a repeat arrives (rarely), so the publish path pays for
    one small object per entry."""

    __slots__ = ("outcome", "waiters")

    def __init__(self):
        self.outcome = None  # (first_seq, last_seq) or a Failure, once settled
        self.waiters = None

    def wait(self) -> Deferred:
        d = Deferred()
        if self.outcome is not None:
            _pass(self.outcome, d)
        else:
            if self.waiters is None:
                self.waiters = []
            self.waiters.append(d)
        return d

    def settle(self, outcome) -> None:
        self.outcome = outcome
        waiters, self.waiters = self.waiters, None
        for d in waiters or ():
            _pass(outcome, d)


class OwnerShare:
    """One owner's producers of a topic, least recently used first in each part: those on
    probation (new, one set heard) and the protected ones (heard from again)."""

    __slots__ = ("probation", "protected")

    def __init__(self):
        self.probation: OrderedDict[int, None] = OrderedDict()
        self.protected: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self.probation) + len(self.protected)

    def discard(self, producer_id: int) -> None:
        self.probation.pop(producer_id, None)
        self.protected.pop(producer_id, None)


def _pass(outcome, d: Deferred) -> None:
    if isinstance(outcome, Failure):
        d.errback(outcome)
    else:
        d.callback(outcome)


class ProducerTable:
    """The producers of one open topic log (a reopened topic gets a new table)."""

    def __init__(
        self, topic_log, clock, *, window: int = WINDOW, max_producers: int = MAX_PRODUCERS, on_stored=None
    ):
        self.topic_log = topic_log
        self._on_stored = on_stored  # called with each LogEntry stored through here (the counters)
        self._clock = clock
        self.window = window
        self.max_producers = max_producers  # per owner
        self.max_protected = max(1, max_producers - max_producers // 4)
        self.producers: dict[int, ProducerSets] = {}
        self.shares: dict[object, OwnerShare] = {}  # owner -> its producers
        # Every entry above `floor` is accounted for: appended through here, or scanned.
        self.floor = topic_log.last_seq
        self.evicted = 0
        self.entries_scanned = 0
        self._span = FIRST_SPAN
        self._scan_waiters = None  # Waiters of the scan step under way

    # -- the decision --------------------------------------------------------------------

    @property
    def scanned_all(self) -> bool:
        return self.floor < self.topic_log.first_seq

    def publish(
        self, message_set, count: int, producer_id: int, sequence: int, first_send: bool = False, owner=None
    ) -> Deferred:
        """Deferred[(first_seq, last_seq)]: the set appended, or the seq-ids it got the
        first time; fails with RequestRefused (PRODUCER_SEQUENCE_GAP, DUPLICATE_SEQUENCE) or
        the append's failure. Calls that need a scan are decided after it, in call order.
        `first_send`: the producer says it never sent this set before; its set 0 is then
        known to be new without a scan (which a new producer's set 0 would otherwise cost,
        down to the bottom of the log, once per opening of the topic). `owner`: the user
        publishing (None with [auth] off), whose share of the table holds the producer."""
        producer = self.producers.get(producer_id)
        if producer is None:
            if not self.scanned_all and not (sequence == 0 and first_send):
                return self._after_scan(message_set, count, producer_id, sequence, first_send, owner)
            if sequence != 0:
                return _refuse(
                    Status.PRODUCER_SEQUENCE_GAP,
                    f"producer {producer_id} is unknown to topic {self.topic_log.topic} (forgotten, "
                    f"or its sets were collected): set {sequence} cannot follow; start a new producer at 0",
                )
            producer = self._add(producer_id, -1, owner)
        else:
            self._heard_again(producer_id, producer, owner)
        last = producer.last_sequence
        if sequence == last + 1:
            return self._append(producer, message_set, count, producer_id, sequence)
        if sequence > last + 1:
            return _refuse(
                Status.PRODUCER_SEQUENCE_GAP,
                f"producer {producer_id} on topic {self.topic_log.topic}: set {sequence} after set {last}; "
                f"expected {last + 1}",
            )
        lowest = producer.lowest_sequence
        if sequence >= lowest:
            return _answer(producer.sets[sequence - lowest])
        if len(producer.sets) < self.window and not self.scanned_all:
            return self._after_scan(message_set, count, producer_id, sequence, first_send, owner)
        return _refuse(
            Status.DUPLICATE_SEQUENCE,
            f"producer {producer_id} on topic {self.topic_log.topic}: set {sequence} was stored before "
            f"set {lowest}, the oldest whose seq-ids are remembered",
        )

    def _share(self, owner) -> OwnerShare:
        share = self.shares.get(owner)
        if share is None:
            share = self.shares[owner] = OwnerShare()
        return share

    def _add(self, producer_id: int, last_sequence: int, owner) -> ProducerSets:
        """A producer new to the table, on probation in its owner's share; past the share's
        bound its least recently used producer on probation goes (a protected one when
        the newcomer is the only one on probation)."""
        producer = self.producers[producer_id] = ProducerSets(last_sequence, self.window, owner)
        share = self._share(owner)
        share.probation[producer_id] = None
        while len(share) > self.max_producers:
            part = share.probation if len(share.probation) > 1 else share.protected
            forgotten, _ = part.popitem(last=False)
            del self.producers[forgotten]
            self.evicted += 1
        return producer

    def _heard_again(self, producer_id: int, producer: ProducerSets, owner) -> None:
        """A known producer published: it moves to its owner's share (from LEARNT) and to
        the protected part's most recent end; the part's least recent overflows back
        to probation."""
        if producer.owner is not owner:
            self.shares[producer.owner].discard(producer_id)
            producer.owner = owner
            share = self._share(owner)
            while len(share) >= self.max_producers:  # (room for it, as _add makes)
                part = share.probation if share.probation else share.protected
                forgotten, _ = part.popitem(last=False)
                del self.producers[forgotten]
                self.evicted += 1
        else:
            share = self.shares[owner]
            share.probation.pop(producer_id, None)
        protected = share.protected
        protected[producer_id] = None
        protected.move_to_end(producer_id)
        if len(protected) > self.max_protected:
            demoted, _ = protected.popitem(last=False)
            share.probation[demoted] = None

    def _append(self, producer, message_set, count, producer_id, sequence) -> Deferred:
        """The publisher's Deferred is the append's own, with one callback: per entry the
        table adds a slot object and a callback, nothing more, unless a repeat waits."""
        appended = self.topic_log.append(message_set, count, None, None, None, (producer_id, sequence))
        slot = InFlightSet()
        producer.last_sequence = sequence
        producer.sets.append(slot)
        return appended.addBoth(self._settled, producer, sequence, slot)

    def _settled(self, result, producer: ProducerSets, sequence: int, slot: "InFlightSet"):
        if isinstance(result, Failure):
            outcome = result
        else:
            if self._on_stored is not None:
                self._on_stored(result)
            outcome = result = (result.first_seq, result.last_seq)
        index = sequence - producer.lowest_sequence
        if 0 <= index < len(producer.sets) and producer.sets[index] is slot:
            if not isinstance(outcome, Failure):
                producer.sets[index] = outcome
            elif sequence == producer.last_sequence:
                # Refused with nothing after it: forget it, so that it may be sent again.
                producer.sets.pop()
                producer.last_sequence -= 1
        # (else: slid out of the window, or the producer was forgotten and came back)
        slot.settle(outcome)
        return result

    # -- recovery: a backward scan of the log ------------------------------------------------

    def _after_scan(self, message_set, count, producer_id, sequence, first_send, owner) -> Deferred:
        start = self._scan_waiters is None
        if start:
            self._scan_waiters = Waiters()
        d = self._scan_waiters.wait()
        if start:  # (after the wait: a step may end at once)
            self._step_down().addBoth(self._scan_done)
        return d.addCallback(
            lambda _: self.publish(message_set, count, producer_id, sequence, first_send, owner)
        )

    def _scan_done(self, result):
        waiters, self._scan_waiters = self._scan_waiters, None
        if isinstance(result, Failure):
            waiters.fail(result)
        else:
            waiters.fire(None)

    def step_later(self) -> Deferred:
        return deferLater(self._clock, 0, lambda: None)

    @inlineCallbacks
    def _step_down(self):
        """Read the entries of seq-ids [floor - span + 1, floor] and learn their producers.
        One step per call (a reactor turn apart after the first): the publishes waiting on
        it are decided again after it, and ask for another step if they still need one."""
        topic_log = self.topic_log
        floor = self.floor
        if self.entries_scanned:
            yield self.step_later()  # (a first step runs at once: most scans need only one)
        low = max(topic_log.first_seq, floor - self._span + 1)
        window = []  # (entry, header), in log order
        try:
            yield read_window(topic_log, low, floor, window, self.step_later)
        except SeqNotRetained:
            # Garbage collection removed the bottom meanwhile: nothing below is retained.
            self.entries_scanned += len(window)
            self.floor = topic_log.first_seq - 1
            return
        self.entries_scanned += len(window)
        found = [  # (producer id, sequence, first_seq, last_seq), in log order
            (head.producer_id, head.sequence, entry.first_seq, entry.last_seq)
            for entry, head in window
            if head.producer_id
        ]
        self._learn(reversed(found))
        self.floor = window[0][0].first_seq - 1 if window else low - 1
        self._span = min(self._span * 2, MAX_SPAN)

    def _learn(self, newest_first) -> None:
        """Prepend what a scan found to each producer's sets (older than all it holds)."""
        producers = self.producers
        learnt = self._share(LEARNT).probation
        for producer_id, sequence, first_seq, last_seq in newest_first:
            producer = producers.get(producer_id)
            if producer is None:
                if len(learnt) >= self.max_producers:
                    continue  # full of producers met higher up: older ones are not learnt
                producer = ProducerSets(sequence, self.window, LEARNT)
                producers[producer_id] = producer
                learnt[producer_id] = None
                learnt.move_to_end(producer_id, last=False)  # the least recently used
            elif len(producer.sets) >= self.window or sequence != producer.lowest_sequence - 1:
                continue
            producer.sets.appendleft((first_seq, last_seq))


def _answer(held) -> Deferred:
    if isinstance(held, tuple):
        d = Deferred()
        d.callback(held)
        return d
    return held.wait()


def _refuse(status: Status, reason: str) -> Deferred:
    d = Deferred()
    d.errback(Failure(RequestRefused(status, reason)))
    return d
