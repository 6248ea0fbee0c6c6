"""Kafka idempotent producers' sequence numbers, per topic and producer.

A Kafka producer (InitProducerId: an id and epoch 0) numbers its records per partition:
each batch carries the sequence of its first record, the next batch's being that plus
the batch's count. The hub stores a batch whose sequence is the one expected next,
answers a batch sent again (one of the producer's last five, the most a producer keeps
in flight) with the offset it got the first time, storing nothing, refuses one past
the expected sequence with OUT_OF_ORDER_SEQUENCE_NUMBER and one older than those five
with DUPLICATE_SEQUENCE_NUMBER, as a Kafka broker does.

What the hub remembers lives in memory: it spans reconnects and retries, not a restart
of the hub (a producer unknown to the topic starts wherever it says).
"""

from collections import OrderedDict, deque

from twisted.internet.defer import Deferred, fail

from hedwig.kafka.records import RecordsError

KEPT_BATCHES = 5  # Kafka's max.in.flight for idempotence
MAX_PRODUCERS = 1024  # per topic; the least recently used forgotten first
_SEQUENCE_MODULUS = 1 << 31
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46
INVALID_PRODUCER_EPOCH = 47


class _Producer:
    __slots__ = ("batches", "epoch", "next_sequence")

    def __init__(self, epoch: int):
        self.epoch = epoch
        self.next_sequence = None  # unknown until its first batch here
        self.batches = deque(maxlen=KEPT_BATCHES)  # [base sequence, count, Deferred or answer]


class KafkaSequences:
    """Idempotent Kafka batches of every topic of one hub."""

    def __init__(self, max_producers: int = MAX_PRODUCERS):
        self.max_producers = max_producers
        self._topics = {}  # topic -> OrderedDict producer id -> _Producer

    def forget(self, topic: str) -> None:
        self._topics.pop(topic, None)

    def publish(self, topic: str, batch, store) -> Deferred:
        """Deferred[(first entry of the batch)]: `store()` (a Deferred of the LogEntry)
        called when the batch is new, the first outcome when it is a repeat; RecordsError
        for a batch out of order."""
        producers = self._topics.setdefault(topic, OrderedDict())
        producer = producers.get(batch.producer_id)
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

        return store().addBoth(settled)


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
