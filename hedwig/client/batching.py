"""The event-loop clients' publishes: batched, bounded, and a producer held back.

Publishes are batched as a Kafka producer batches them: every `publish` of a topic made
in one turn of the event loop goes out as one message set (one PUBLISH, one stored
entry), and each caller's result settles with its own seq-id. A batch closes at
`max_batch_bytes`. At most `max_in_flight` messages are sent and unanswered; later
batches wait their turn in the client, up to `max_queued` messages, beyond which a
publish fails at once with PublishQueueFull. A producer registered with
`register_producer` (a Twisted IPushProducer, or anything with pauseProducing and
resumeProducing) is paused while the client holds `max_in_flight` messages or more and
resumed below half, so a fast source never makes the client buffer without bound.

The blocking client does not batch: each of its publishes waits for its answer.
"""

from collections import deque

from hedwig.client.payloads import payload_bytes
from hedwig.protocol.compression import encode_published_set
from hedwig.protocol.errors import ClientClosed, MessageTooLarge, PublishQueueFull
from hedwig.protocol.messageset import key_bytes


class PublishBatch:
    """Messages of one topic waiting to go out as one message set; `results` are the
    adapter's results (Deferreds, Futures) of its publishes, in order."""

    __slots__ = ("keys", "payloads", "properties", "results", "size")

    def __init__(self):
        self.payloads = []
        self.properties = None  # a list parallel to payloads once any message has some
        self.keys = None  # a list parallel to payloads once any message has a key
        self.results = []
        self.size = 0


class Batcher:
    """A client core's batches, what is in flight, and the producer it holds back."""

    def __init__(self, core):
        config = core.config
        self._core = core
        self._waiting = core._waiting
        self._routes = core._routes
        self._by_address = core._connections.by_address  # (a LoopConnections': the hubs' limits)
        self.max_in_flight = config.max_in_flight
        self.max_queued = config.max_queued
        self.max_batch_bytes = config.max_batch_bytes
        self._batches = {}  # topic -> PublishBatch not yet sent
        self._ready = deque()  # (topic, PublishBatch) to send when in_flight allows
        self._flush_call = None
        self.in_flight = 0  # messages sent, not answered
        self.queued = 0  # messages held, not sent
        self._idle = []  # results waiting for nothing to be queued or in flight
        self._producer = None  # the registered producer
        self._producer_paused = False  # whether this batcher paused it

    def publish(self, topic: str, payload, properties=None, key=None):
        """The result of one message's publish (its seq-id once stored); a failed result
        at once for a closed client, a full queue or a message over the hub's limit
        (and a TypeError raised for a payload neither bytes nor str, TypeError or
        ValueError for a key that is not one)."""
        if type(payload) is not bytes:  # (the usual case costs no call)
            payload = payload_bytes(payload)
        if key is not None:
            key = key_bytes(key)
        core = self._core
        if core._closing is not None:
            return self._failed(ClientClosed(message="the client is closed"))
        if self.queued >= self.max_queued:
            return self._failed(PublishQueueFull(message=f"{self.queued} messages wait to be sent"))
        connection = self._by_address.get(self._routes.address(topic))
        if connection is not None and len(payload) > connection.hello.max_message_bytes:
            limit = connection.hello.max_message_bytes
            return self._failed(MessageTooLarge(message=f"a message of {len(payload)} bytes exceeds {limit}"))
        batch = self._batches.get(topic)
        if batch is None or batch.size >= self.max_batch_bytes:
            if batch is not None:
                self._ready.append((topic, batch))
            batch = self._batches[topic] = PublishBatch()
        if properties:
            if batch.properties is None:
                batch.properties = [None] * len(batch.payloads)
            batch.properties.append(properties)
        elif batch.properties is not None:
            batch.properties.append(None)
        if key is not None:
            if batch.keys is None:
                batch.keys = [None] * len(batch.payloads)
            batch.keys.append(key)
        elif batch.keys is not None:
            batch.keys.append(None)
        batch.payloads.append(payload)
        batch.size += len(payload)
        result = self._waiting.new_result()
        batch.results.append(result)
        self.queued += 1
        if self._flush_call is None:
            self._flush_call = self._waiting.call_later(0, self._flush)
        if self._producer is not None:
            self._check_producer()
        return result

    def _failed(self, error):
        result = self._waiting.new_result()
        self._waiting.fail(result, error)
        return result

    def _flush(self) -> None:
        self._flush_call = None
        batches, self._batches = self._batches, {}
        self._ready.extend(batches.items())
        self._send_ready()

    def _send_ready(self) -> None:
        ready = self._ready
        core = self._core
        while ready and self.in_flight < self.max_in_flight:
            topic, batch = ready.popleft()
            count = len(batch.payloads)
            self.queued -= count
            self.in_flight += count
            try:
                message_set = encode_published_set(batch.payloads, batch.properties, core._codec, batch.keys)
            except (TypeError, ValueError) as e:  # (a property or key publish() could not check)
                self.in_flight -= count
                self._waiting.fail_all(batch.results, e)
                continue
            self._waiting.spawn(self._send_batch(topic, batch, message_set, count))

    def _send_batch(self, topic, batch, message_set, count):
        """Steps: one batch sent (numbered, when idempotent), its results settled."""
        waiting = self._waiting
        try:
            published = yield from self._core._send_set_steps(topic, message_set, count)
        except Exception as e:
            self.in_flight -= count
            waiting.fail_all(batch.results, e)
        else:
            self.in_flight -= count
            waiting.settle_seqs(batch.results, published.first_seq)
        self._after_publish()

    # -- what publish_many and publish_set count (core._publish_set_steps) -----------------

    def sending(self, count: int) -> None:
        self.in_flight += count

    def answered(self, count: int) -> None:
        self.in_flight -= count
        self._after_publish()

    def _after_publish(self) -> None:
        if self._ready:
            self._send_ready()
        if self._producer is not None:
            self._check_producer()
        if self._idle and self.in_flight == 0 and self.queued == 0:
            idle, self._idle = self._idle, []
            for result in idle:
                self._waiting.settle(result, None)

    def drain_steps(self):
        """Steps: send every batch now, and wait until each is answered (or failed)."""
        if self._flush_call is not None:
            self._flush_call.cancel()
            self._flush()
        if self.in_flight or self.queued:
            idle = self._waiting.new_result()
            self._idle.append(idle)
            yield idle

    # -- a producer held back --------------------------------------------------------------

    def register_producer(self, producer) -> None:
        """Pause `producer` while the client holds max_in_flight messages or more (sent
        and unanswered, or queued); resume it below half of that."""
        self._producer = producer
        self._producer_paused = False
        self._check_producer()

    def unregister_producer(self) -> None:
        self._producer = None

    def _check_producer(self) -> None:
        held = self.in_flight + self.queued
        if not self._producer_paused and held >= self.max_in_flight:
            self._producer_paused = True
            self._producer.pauseProducing()
        elif self._producer_paused and held < self.max_in_flight // 2:
            self._producer_paused = False
            self._producer.resumeProducing()
