"""Kafka idempotent producers' sequence numbers, per topic and producer.

A Kafka producer (InitProducerId: an id and epoch 0) numbers its records per partition:
each batch carries the sequence of its first record, the next batch's being that plus
the batch's count. The hub stores a batch whose sequence is the one expected next,
answers a batch sent again (one of the producer's last five, the most a producer keeps
in flight) with the offset it got the first time, storing nothing, refuses one past
the expected sequence with OUT_OF_ORDER_SEQUENCE_NUMBER and one older than those five
with DUPLICATE_SEQUENCE_NUMBER, as a Kafka broker does.

What the hub remembers is derived from the topic's log, as the native idempotent
producers' (hedwig.hub.producer_state): a batch is stored as one entry whose header
carries (producer id, base sequence), written atomically with the records. When a topic
is opened (a restart, a SIGKILL, a takeover), the first idempotent batch to it waits for
a backward read of the log's last RECOVERY_SPAN seq-ids (at most), which learns every
producer's last batches met there; so a batch the hub stored before it died and the
producer sends again is answered with its offset, not stored twice, and the producer's
next batch follows. A producer whose last batch lies deeper (or was collected) is unknown:
it starts wherever it says, as a Kafka broker forgets a producer whose state expired.
"""

from collections import OrderedDict, deque

from twisted.internet.defer import Deferred, fail
from twisted.internet.task import deferLater

from hedwig.kafka.records import RecordsError
from hedwig.topiclog.backward import read_window
from hedwig.topiclog.errors import SeqNotRetained

KEPT_BATCHES = 5  # Kafka's max.in.flight for idempotence
MAX_PRODUCERS = 1024  # per topic; the least recently used forgotten first
RECOVERY_SPAN = 1 << 16  # seq-ids below a reopened topic's tail read for its producers
_SEQUENCE_MODULUS = 1 << 31
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46
INVALID_PRODUCER_EPOCH = 47


class _Producer:
    __slots__ = ("batches", "epoch", "next_sequence")

    def __init__(self, epoch):
        self.epoch = epoch  # None: learnt from the log, the next batch's taken
        self.next_sequence = None  # unknown until its first batch here
        self.batches = deque(maxlen=KEPT_BATCHES)  # [base sequence, count, Deferred or answer]


class _TopicProducers:
    """The producers of one open topic log (a reopened topic gets new ones, learnt from
    its log); `waiting`: the batches that came during that learning, in order."""

    __slots__ = ("log", "producers", "waiting")

    def __init__(self, log):
        self.log = log
        self.producers = OrderedDict()  # producer id -> _Producer
        self.waiting = []  # (batch, store, Deferred), or None once learnt


class KafkaSequences:
    """Idempotent Kafka batches of every topic of one hub; `clock` spaces the reads of a
    recovery a reactor turn apart."""

    def __init__(self, clock, max_producers: int = MAX_PRODUCERS, recovery_span: int = RECOVERY_SPAN):
        self.clock = clock
        self.max_producers = max_producers
        self.recovery_span = recovery_span
        self._topics = {}  # topic -> _TopicProducers

    def forget(self, topic: str) -> None:
        self._topics.pop(topic, None)

    def publish(self, topic_log, batch, store) -> Deferred:
        """Deferred[(first entry of the batch)]: `store(producer)` (a Deferred of the
        LogEntry stored with the entry header's `producer`, (id, base sequence)) called
        when the batch is new, the first outcome when it is a repeat; RecordsError for a
        batch out of order."""
        state = self._topics.get(topic_log.topic)
        if state is None or state.log is not topic_log:
            state = self._topics[topic_log.topic] = _TopicProducers(topic_log)
            self._learn(state)
        if state.waiting is not None:
            d = Deferred()
            state.waiting.append((batch, store, d))
            return d
        return self._decide(state, batch, store)

    def _learn(self, state: _TopicProducers) -> None:
        """Read the log's tail down for the producers' last batches, then decide the
        batches that came meanwhile, in order."""
        log = state.log
        floor = log.last_seq
        window = []

        def learnt(_):
            for entry, head in window:
                if head.producer_id:
                    self._learnt_batch(state, head.producer_id, head.sequence, entry)
            waiting, state.waiting = state.waiting, None
            for batch, store, d in waiting:
                self._decide(state, batch, store).chainDeferred(d)

        def failed(failure):
            failure.trap(SeqNotRetained)  # (collected meanwhile: what was read is learnt)

        low = max(log.first_seq, floor - self.recovery_span + 1)
        read = read_window(log, low, floor, window, lambda: deferLater(self.clock, 0, lambda: None))
        read.addErrback(failed).addCallback(learnt).addErrback(self._learning_failed, state)

    def _learning_failed(self, failure, state):
        waiting, state.waiting = state.waiting or [], None
        self._topics.pop(state.log.topic, None)
        for _batch, _store, d in waiting:
            d.errback(failure)

    def _learnt_batch(self, state, producer_id, sequence, entry) -> None:
        producer = state.producers.get(producer_id)
        if producer is None:
            producer = state.producers[producer_id] = _Producer(None)
        count = entry.last_seq - entry.first_seq + 1
        producer.batches.append([sequence, count, entry])
        producer.next_sequence = (sequence + count) % _SEQUENCE_MODULUS

    def _decide(self, state, batch, store) -> Deferred:
        producers = state.producers
        producer = producers.get(batch.producer_id)
        if producer is not None and producer.epoch is None:
            producer.epoch = batch.producer_epoch
        if producer is None or batch.producer_epoch > producer.epoch:
            producer = producers[batch.producer_id] = _Producer(batch.producer_epoch)
            if len(producers) > self.max_producers:
                producers.popitem(last=False)
        elif batch.producer_epoch < producer.epoch:
            return fail(RecordsError(INVALID_PRODUCER_EPOCH, "an epoch older than the producer's"))
        producers.move_to_end(batch.producer_id)
        sequence = batch.base_sequence
        for kept in producer.batches:
            if kept[0] == sequence:
                if kept[1] != batch.count:
                    return fail(RecordsError(OUT_OF_ORDER_SEQUENCE_NUMBER, "a repeat of another size"))
                return _outcome(kept)
        expected = producer.next_sequence
        if expected is not None and sequence != expected:
            if _after(sequence, expected):
                return fail(
                    RecordsError(
                        OUT_OF_ORDER_SEQUENCE_NUMBER, f"sequence {sequence} where {expected} was expected"
                    )
                )
            return fail(
                RecordsError(DUPLICATE_SEQUENCE_NUMBER, f"sequence {sequence} is older than those kept")
            )
        kept = [sequence, batch.count, None]
        producer.batches.append(kept)
        producer.next_sequence = (sequence + batch.count) % _SEQUENCE_MODULUS
        waiting = []
        kept[2] = waiting

        def settled(outcome):
            kept[2] = outcome
            if isinstance(outcome, Exception) or hasattr(outcome, "raiseException"):
                # Not stored: it may be sent again.
                if producer.next_sequence == (sequence + batch.count) % _SEQUENCE_MODULUS:
                    producer.next_sequence = sequence
                if kept in producer.batches:
                    producer.batches.remove(kept)
            for d in waiting:
                _pass(outcome, d)
            return outcome

        return store((batch.producer_id, sequence)).addBoth(settled)


def _after(sequence: int, expected: int) -> bool:
    """Whether `sequence` is ahead of `expected` (sequences wrap at 2^31)."""
    return 0 < (sequence - expected) % _SEQUENCE_MODULUS < _SEQUENCE_MODULUS // 2


def _outcome(kept) -> Deferred:
    outcome = kept[2]
    d = Deferred()
    if isinstance(outcome, list):  # still in flight
        outcome.append(d)
    else:
        _pass(outcome, d)
    return d


def _pass(outcome, d: Deferred) -> None:
    if hasattr(outcome, "raiseException"):
        d.errback(outcome)
    else:
        d.callback(outcome)
