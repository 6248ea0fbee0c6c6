"""The blocking client's idempotent publishing (Client(..., idempotent=True)).

A blocking publish waits for its answer, so a topic's sets never overtake each other if
each topic's publishes go one at a time: a lock per topic holds the topic's next sequence
while its set is out. A set whose connection drops (or whose hub is away, restarting,
or redirects) is sent again with the same number until it is answered or
`reconnect_timeout` passes: the hub stores a number once and answers a repeat with the
seq-ids of the first time (hedwig.hub.producer_state), so nothing is stored twice and
nothing is lost. A set refused for good (too large, not authorised) was not stored: its
number is used again by the next set. Threads publishing to one topic take turns; to
different topics they do not wait for each other.
"""

import threading
import time

from hedwig.client.idempotent_resends import RESEND_BACKOFF_FIRST, RESEND_BACKOFF_MAX, RETRYABLE
from hedwig.protocol.ops import Op
from hedwig.protocol.producer_requests import MAX_SEQUENCE, encode_idempotent_publish


class _TopicTurn:
    """A topic's publishes, one at a time: its next number, and its own producer id once
    the client's has numbered 2^32 sets of it (None until then)."""

    __slots__ = ("lock", "next_sequence", "producer_id")

    def __init__(self):
        self.lock = threading.Lock()
        self.next_sequence = 0
        self.producer_id = None


class BlockingIdempotence:
    """Part of hedwig.client.blocking.Client: its producer id and topics' sequences."""

    def __init__(self, client):
        self.client = client
        self.producer_id = None
        self._lock = threading.Lock()
        self._topics = {}  # topic -> _TopicTurn
        self.resends = 0

    def publish(self, topic: str, message_set: bytes):
        """Published(first_seq, last_seq) of one set, sent until answered."""
        with self._lock:
            turn = self._topics.get(topic)
            if turn is None:
                turn = self._topics[topic] = _TopicTurn()
        with turn.lock:
            if turn.next_sequence > MAX_SEQUENCE:  # numbers run out: go on as a new producer
                turn.producer_id = self._new_producer(topic)
                turn.next_sequence = 0
            producer_id = turn.producer_id or self._client_producer(topic)
            sequence = turn.next_sequence
            attempts = []

            def send(connection):
                # The first attempt says so; every later one may be a repeat.
                first_send = not attempts
                attempts.append(first_send)
                body = encode_idempotent_publish(topic, producer_id, sequence, message_set, first_send)
                return connection.call(Op.IDEMPOTENT_PUBLISH, body)

            published = self._retrying(topic, send)
            turn.next_sequence += 1
            return published

    def _client_producer(self, topic) -> int:
        with self._lock:
            if self.producer_id is None:
                self.producer_id = self._new_producer(topic)
            return self.producer_id

    def _new_producer(self, topic) -> int:
        return self._retrying(topic, lambda c: c.call(Op.INIT_PRODUCER, b""))

    def _retrying(self, topic, send):
        """client._request(topic, send) again, with backoff, while it fails in a way a
        resend may get past, for at most the client's reconnect_timeout."""
        deadline = time.monotonic() + self.client.reconnect_timeout
        delay = RESEND_BACKOFF_FIRST
        while True:
            try:
                return self.client._request(topic, send, retry=True)
            except RETRYABLE:
                if time.monotonic() + delay > deadline or self.client._closed:
                    raise
            self.resends += 1
            time.sleep(delay)  # (a blocking client's backoff: the caller's thread waits)
            delay = min(delay * 2, RESEND_BACKOFF_MAX)


class IdempotentPublishing:
    """Part of hedwig.client.blocking.Client: where its message sets go."""

    _idempotent = None  # a BlockingIdempotence when made with idempotent=True

    def _publish_set(self, topic: str, message_set: bytes):
        """Published of one set: numbered and sent until answered by an idempotent client;
        otherwise sent once (a connection lost with it raises ConnectionLost)."""
        if self._idempotent is not None:
            return self._idempotent.publish(topic, message_set)
        return self._request(topic, lambda c: c.publish(topic, message_set), retry=False)
