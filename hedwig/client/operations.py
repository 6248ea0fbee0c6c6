"""The requests every client makes the same way, whatever way it waits for the answer.

Each is routed by the client core's `_request(topic, send, retry)` (core.py), which
returns the adapter's form of the reply's value: the value itself (blocking), a
Deferred (Twisted), an awaitable (asyncio). `send` gets the connection to the topic's
hub, which answers `call(op, body)` (a Response, or what waits for one). What a request
carries and whether it may be sent again after a lost connection are its op's spec's
(hedwig.protocol.spec: `encode`, `idempotent`); what it does to the client's own
subscriptions lives here once; publishing and subscribing are the core's.
"""

from hedwig.client.config import DEFAULT_READ_BYTES
from hedwig.client.start import wire_start
from hedwig.protocol import Op
from hedwig.protocol.admin_requests import topic_ttl_ms
from hedwig.protocol.spec import OPS


class ClientOperations:
    """The base of the client core (which gives `_request`, `_waiting` and
    `_unsubscribe_steps`)."""

    __slots__ = ()

    def _call(self, op: Op, topic, *fields):
        """The request `op` made of `fields` by its spec, sent to `topic`'s hub (None: the
        one at hand); sent again after a lost connection when the spec says it is
        idempotent."""
        spec = OPS[op]
        body = spec.encode(*fields)
        return self._request(topic, lambda c: c.call(op, body), retry=spec.idempotent)

    def unsubscribe(self, topic: str, subscriber_id: str):
        """Delete the durable subscription: its consumed seq-id is forgotten (one attached
        through this client is closed first); a partitioned topic's on every partition."""
        return self._waiting.run(self._unsubscribe_steps(topic, subscriber_id))

    def read_range(self, topic: str, from_seq: int, to_seq: int = 0, max_bytes: int = DEFAULT_READ_BYTES):
        """Stored entries holding seq-ids from_seq..to_seq (0: to the last), raw.

        The reply is a hedwig.protocol.requests.ReadRangeReply(first_seq, last_seq,
        entries): the topic's retained range, and (start, stop, entry bytes) per entry,
        meaning messages [start, stop) of that entry (decode with
        hedwig.protocol.decode_entry). It holds at least one entry when any is in range,
        and stops adding entries once `max_bytes` is reached.
        """
        return self._call(Op.READ_RANGE, topic, topic, from_seq, to_seq, max_bytes)

    def topics(self):
        """The topics the hub holds (sorted names)."""
        return self._call(Op.LIST_TOPICS, None)

    def describe(self, topic: str):
        """A topic's bounds, ledger ranges and subscribers (consumed seq-id, backlog, state);
        docs/protocol.md gives every field."""
        return self._call(Op.DESCRIBE_TOPIC, topic, topic)

    def stats(self):
        """The hub's counters."""
        return self._call(Op.STATS, None)

    def hubs(self):
        """The region's live hubs: rows of hub ("host:port"), tls_port, region, topics
        (owned), messages_per_s and started_us; an embedded hub alone."""
        return self._call(Op.LIST_HUBS, None)

    def owners(self):
        """Every topic -> the "host:port" of the hub that owns it (None: no hub does now,
        the next request makes one claim it)."""
        return self._call(Op.LIST_OWNERS, None)

    # -- administration ------------------------------------------------------------------

    def create_topic(self, topic: str, compaction: bool = False, partitions: int = 0, ttl=None):
        """Create the topic (publishing creates one too); {"topic", "created",
        "compaction", "partitions", "ttl_ms"}: created is False when it existed already
        (and compaction, partitions and ttl_ms are then what it was created with).
        `compaction`: a compacted topic, which takes keyed messages only and keeps the
        latest message of each key (compact()). `partitions`: a topic of that many
        partitions, partition K (K > 0) being the topic `<topic>.p-K`
        (hedwig.protocol.partitions; 0: one, or as it is); TopicExists when it exists
        with another count. `ttl`: seconds, the topic's default TTL: a message published
        without a ttl of its own and not delivered within it after its publish is not
        delivered (None: none; TopicExists when it exists with another)."""
        return self._call(Op.CREATE_TOPIC, topic, topic, compaction, partitions, topic_ttl_ms(ttl))

    def compact(self, topic: str):
        """Compact a compacted topic's closed ledgers now (the hub does it every [log]
        compaction_interval_s too); {"topic", "span", "ledgers", "messages", "entries"}:
        the seq-ids rewritten ([first, last]; None: nothing to do), the ledgers
        replaced, the messages read and the entries written. Needs admin with [auth] on."""
        return self._call(Op.COMPACT, topic, topic)

    def delete_topic(self, topic: str, force: bool = False):
        """Delete the topic and its ledgers; refused (TopicBusy) while it has subscriptions
        unless `force`, which deletes them too. {"topic", "subscriptions", "ledgers"}: the
        subscriptions and ledger ids deleted. A later publish creates it afresh."""
        return self._call(Op.DELETE_TOPIC, topic, topic, force)

    def subscriptions(self, topic: str | None = None):
        """Every subscription of `topic` (None: of every topic): rows of topic,
        subscriber_id, consumed_seq, last_seq, lag, state ("detached" when nobody is
        attached) and filter (its message selector, None for none)."""
        return self._call(Op.LIST_SUBSCRIPTIONS, topic, topic)

    def group_offset(self, topic: str, subscriber_id: str, on_behalf_of: str | None, action, seq: int = 0):
        """A hub's, as [auth] hub_user: read (GroupAction.FETCH: {"consumed_seq"}, None
        for none), place at consumed seq-id `seq` (PLACE) or delete (DELETE) the Kafka
        group subscription `subscriber_id` on `topic`, on behalf of the user
        `on_behalf_of` (hedwig/kafka/offsets.py)."""
        return self._call(Op.GROUP_OFFSET, topic, topic, subscriber_id, on_behalf_of, action, seq)

    def reset_subscription(self, topic: str, subscriber_id: str, start):
        """Move a detached subscription so that it next delivers from `start` ("earliest",
        "latest", a seq-id or a datetime); refused (TopicBusy) while it is attached.
        {"topic", "subscriber_id", "consumed_seq", "previous_seq", "next_seq"}."""
        if start is None:
            raise ValueError("a reset names where to go: 'earliest', 'latest', a seq-id or a datetime")
        return self._call(Op.RESET_SUBSCRIPTION, topic, topic, subscriber_id, wire_start(start))
