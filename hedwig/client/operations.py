"""The requests every client makes the same way, whatever way it waits for the answer.

Each is routed by the client core's `_request(topic, send, retry)` (core.py), which
returns the adapter's form of the reply's value: the value itself (blocking), a
Deferred (Twisted), an awaitable (asyncio). `send` gets the connection to the topic's
hub, which answers `call(op, body)` (a Response, or what waits for one). What a request
carries, whether it may be sent again after a lost connection, and what it does to the
client's own subscriptions live here once; publishing and subscribing are the core's.
"""

from hedwig.client.config import DEFAULT_READ_BYTES
from hedwig.client.start import wire_start
from hedwig.protocol import Op
from hedwig.protocol.admin_requests import (
    encode_create_topic,
    encode_delete_topic,
    encode_list_subscriptions,
    encode_reset_subscription,
)
from hedwig.protocol.requests import (
    encode_describe_topic,
    encode_read_range,
    encode_unsubscribe,
)


class ClientOperations:
    """The base of the client core (which gives `_request`, `_waiting` and
    `_unsubscribe_steps`)."""

    __slots__ = ()

    def unsubscribe(self, topic: str, subscriber_id: str):
        """Delete the durable subscription: its consumed seq-id is forgotten (one attached
        through this client is closed first)."""
        body = encode_unsubscribe(topic, subscriber_id)
        request = lambda: self._request(topic, lambda c: c.call(Op.UNSUBSCRIBE, body), retry=False)  # noqa: E731
        return self._waiting.run(self._unsubscribe_steps(topic, subscriber_id, request))

    def read_range(self, topic: str, from_seq: int, to_seq: int = 0, max_bytes: int = DEFAULT_READ_BYTES):
        """Stored entries holding seq-ids from_seq..to_seq (0: to the last), raw.

        The reply is a hedwig.protocol.requests.ReadRangeReply(first_seq, last_seq,
        entries): the topic's retained range, and (start, stop, entry bytes) per entry,
        meaning messages [start, stop) of that entry (decode with
        hedwig.protocol.decode_entry). It holds at least one entry when any is in range,
        and stops adding entries once `max_bytes` is reached.
        """
        body = encode_read_range(topic, from_seq, to_seq, max_bytes)
        return self._request(topic, lambda c: c.call(Op.READ_RANGE, body), retry=True)

    def topics(self):
        """The topics the hub holds (sorted names)."""
        return self._request(None, lambda c: c.call(Op.LIST_TOPICS, b""), retry=True)

    def describe(self, topic: str):
        """A topic's bounds, ledger ranges and subscribers (consumed seq-id, backlog, state);
        docs/protocol.md gives every field."""
        body = encode_describe_topic(topic)
        return self._request(topic, lambda c: c.call(Op.DESCRIBE_TOPIC, body), retry=True)

    def stats(self):
        """The hub's counters."""
        return self._request(None, lambda c: c.call(Op.STATS, b""), retry=True)

    def hubs(self):
        """The region's live hubs: rows of hub ("host:port"), tls_port, region, topics
        (owned), messages_per_s and started_us; an embedded hub alone."""
        return self._request(None, lambda c: c.call(Op.LIST_HUBS, b""), retry=True)

    def owners(self):
        """Every topic -> the "host:port" of the hub that owns it (None: no hub does now,
        the next request makes one claim it)."""
        return self._request(None, lambda c: c.call(Op.LIST_OWNERS, b""), retry=True)

    # -- administration ------------------------------------------------------------------

    def create_topic(self, topic: str):
        """Create the topic (publishing creates one too); {"topic", "created"}: created is
        False when it existed already."""
        body = encode_create_topic(topic)
        return self._request(topic, lambda c: c.call(Op.CREATE_TOPIC, body), retry=True)

    def delete_topic(self, topic: str, force: bool = False):
        """Delete the topic and its ledgers; refused (TopicBusy) while it has subscriptions
        unless `force`, which deletes them too. {"topic", "subscriptions", "ledgers"}: the
        subscriptions and ledger ids deleted. A later publish creates it afresh."""
        body = encode_delete_topic(topic, force)
        return self._request(topic, lambda c: c.call(Op.DELETE_TOPIC, body), retry=False)

    def subscriptions(self, topic: str | None = None):
        """Every subscription of `topic` (None: of every topic): rows of topic,
        subscriber_id, consumed_seq, last_seq, lag and state ("detached" when nobody is
        attached)."""
        body = encode_list_subscriptions(topic)
        return self._request(topic, lambda c: c.call(Op.LIST_SUBSCRIPTIONS, body), retry=True)

    def reset_subscription(self, topic: str, subscriber_id: str, start):
        """Move a detached subscription so that it next delivers from `start` ("earliest",
        "latest", a seq-id or a datetime); refused (TopicBusy) while it is attached.
        {"topic", "subscriber_id", "consumed_seq", "previous_seq", "next_seq"}."""
        if start is None:
            raise ValueError("a reset names where to go: 'earliest', 'latest', a seq-id or a datetime")
        body = encode_reset_subscription(topic, subscriber_id, wire_start(start))
        return self._request(topic, lambda c: c.call(Op.RESET_SUBSCRIPTION, body), retry=True)
