"""The hub's idempotent producers: producer ids handed out, and each open topic's
ProducerTable (producer_state.py), through which idempotent publishes reach the log.

Producer ids are 63 random bits (never 0), not a counter: the hub keeps no record of
the ids it gave, nothing to persist or to agree on between the hubs of a region, and a
topic taken over by another hub (or reopened after a restart) knows its producers from
its log alone. Two producers drawing the same id is a 2^-63 event per pair.

With [auth] on a producer is its user's alone. Every reader of a topic sees the producer
id and sequence in each entry header, so another user allowed to publish there could
otherwise send the set a producer sends next under its id: stored as that producer's, it
would make the producer's own set a "repeat", acknowledged and never stored. So a user's
sets are kept under `user_producer_id(user, id)`, a hash of the two that no other user's
id maps to (a second preimage of a 63-bit BLAKE2b: 2^63 tries); the same on every hub,
so a takeover or a restart finds the producer in the log as before. The user is also
the producer's owner in the topic's table: each user holds its own share of it
(producer_state.py), so one user's producers never push out another's.
"""

import hashlib
import secrets
from functools import partial

from twisted.internet.defer import Deferred, fail

from hedwig.hub.errors import HubStopping
from hedwig.hub.producer_state import MAX_PRODUCERS, WINDOW, ProducerTable
from hedwig.protocol.compression import check_keyed, validate_published_set


def new_producer_id() -> int:
    return secrets.randbits(63) or 1


_HIGH_BIT_CLEAR = (1 << 63) - 1


def user_producer_id(user: str, producer_id: int) -> int:
    """The id under which `user`'s sets of producer `producer_id` are kept (63 bits,
    never 0): no other user's producer id gives it."""
    digest = hashlib.blake2b(
        producer_id.to_bytes(8, "big") + user.encode("utf-8"), digest_size=8, person=b"hedwig-producer"
    ).digest()
    return int.from_bytes(digest, "big") & _HIGH_BIT_CLEAR or 1


class Producers:
    """Idempotent publishes of one hub (`hub`: hedwig.hub.core.Hub)."""

    def __init__(self, hub, *, window: int = WINDOW, max_producers: int = MAX_PRODUCERS):
        self.hub = hub
        self.window = window
        self.max_producers = max_producers
        self._tables = {}  # topic -> ProducerTable of the topic log it was made for
        self.ids_issued = 0

    def new_id(self) -> int:
        self.ids_issued += 1
        return new_producer_id()

    def publish(
        self, topic: str, message_set, producer_id: int, sequence: int, first_send=False, owner=None
    ) -> Deferred:
        """Deferred[(first_seq, last_seq)]: stored now, or the seq-ids of the first time
        (ProducerTable.publish; `owner`: the publishing user, None with [auth] off). Raises
        MessageSetError at once for a set that cannot be stored, as Hub.publish does."""
        hub = self.hub
        if hub.stopping:
            return fail(HubStopping())
        # Validated as Hub.publish validates a client's set (compressed or not), once.
        count = validate_published_set(message_set, 0, hub.max_message_bytes, hub.max_frame_bytes)
        topic_log = hub.topics.get(topic)
        if topic_log is not None:
            if topic_log.compaction:
                check_keyed(message_set)
            return self.table(topic_log).publish(message_set, count, producer_id, sequence, first_send, owner)
        return hub.topics.acquire(topic).addCallback(
            self._publish, message_set, count, producer_id, sequence, first_send, owner
        )

    def _publish(self, topic_log, message_set, count, producer_id, sequence, first_send, owner):
        if topic_log.compaction:
            check_keyed(message_set)
        return self.table(topic_log).publish(message_set, count, producer_id, sequence, first_send, owner)

    def table(self, topic_log) -> ProducerTable:
        """The table of this topic log: a topic reopened (a restart, a takeover, a failed
        log) gets a new one, derived again from what its log holds."""
        table = self._tables.get(topic_log.topic)
        if table is None or table.topic_log is not topic_log:
            self._forget_closed()
            table = ProducerTable(
                topic_log,
                self.hub.clock,
                window=self.window,
                max_producers=self.max_producers,
                # A set stored (not a repeat) counts as a PUBLISH's does, for STATS and /metrics.
                on_stored=partial(self.hub.stats.entry_published, topic_log.topic),
            )
            self._tables[topic_log.topic] = table
        return table

    def _forget_closed(self) -> None:
        """Drop the tables of logs no longer open (run as a table is made: rarely)."""
        for topic in [t for t, table in self._tables.items() if not table.topic_log.is_open]:
            del self._tables[topic]

    def stats(self) -> dict:
        return {
            "ids_issued": self.ids_issued,
            "topics": len(self._tables),
            "producers": sum(len(t.producers) for t in self._tables.values()),
            "evicted": sum(t.evicted for t in self._tables.values()),
        }
