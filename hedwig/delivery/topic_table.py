"""Every topic's durable subscribers on this hub (SubscriptionTables), and for each topic
the least consumed seq-id among them (TopicTable).

A topic's subscriptions are loaded from the metadata store the first time the topic is
used here, once however many ask meanwhile, so the least consumed seq-id is known over
every durable subscriber, attached or not: that minimum prunes the cache and bounds
ledger garbage collection.

The minimum drives cache pruning, so it must stay cheap when every subscriber consumes
every entry: it is kept with a count of subscribers sitting at it, and recomputed (one
pass over the subscribers) only when the last of them moves on. Over K subscribers
consuming in turn that is O(1) per consume, amortised.
"""

from twisted.internet.defer import Deferred, maybeDeferred, succeed

from hedwig.concurrency.deferreds import SharedOperations, Waiters
from hedwig.delivery.interface import SubscribeError
from hedwig.delivery.subscription import Subscription
from hedwig.protocol.status import Status


class SubscriptionTables:
    """topic -> TopicTable, for every topic whose subscriptions are loaded here.

    `on_loaded(table, records)` is called once per load, before anyone is given the
    table: the delivery manager gives shared subscriptions their dispatchers there
    (`records`: subscriber id -> the metadata's versioned SubscriptionState)."""

    def __init__(self, metadata, clock, settings, on_loaded):
        self._metadata = metadata
        self._clock = clock
        self._settings = settings
        self._on_loaded = on_loaded
        self._tables = {}  # topic -> TopicTable
        self._loading = SharedOperations()  # topic -> the load of its subscriptions

    def load(self, topic_log) -> Deferred:
        """Deferred[TopicTable] of the topic of `topic_log`, loading it if need be; the
        table's log becomes `topic_log` (the topic's current one)."""
        table = self._tables.get(topic_log.topic)
        if table is not None:
            table.topic_log = topic_log
            return succeed(table)
        return self._loading.run(topic_log.topic, self._load, topic_log)

    def _load(self, topic_log) -> Deferred:
        loaded = maybeDeferred(self._metadata.list_subscriptions, topic_log.topic)
        return loaded.addCallback(self._loaded, topic_log)

    def _loaded(self, records, topic_log) -> "TopicTable":
        topic = topic_log.topic
        subscriptions = {
            sid: self.make(topic, sid, record.value.consumed_seq, record.value.preferences, record.version)
            for sid, record in records.items()
        }
        table = self._tables[topic] = TopicTable(topic_log, subscriptions)
        self._on_loaded(table, records)
        return table

    def make(self, topic: str, subscriber_id: str, consumed_seq: int, preferences, version) -> Subscription:
        """A Subscription as the metadata store has it (at `version`)."""
        return Subscription(
            topic,
            subscriber_id,
            consumed_seq,
            preferences,
            version,
            self._metadata,
            self._clock,
            self._settings,
        )

    def get(self, topic: str):
        """The topic's TopicTable, None when its subscriptions are not loaded here."""
        return self._tables.get(topic)

    def subscription(self, topic: str, subscriber_id: str):
        """(TopicTable, Subscription) of a loaded subscription, else SubscribeError
        (CLIENT_NOT_SUBSCRIBED)."""
        table = self._tables.get(topic)
        subscription = table.subscriptions.get(subscriber_id) if table is not None else None
        if subscription is None:
            raise SubscribeError(
                Status.CLIENT_NOT_SUBSCRIBED, f"{subscriber_id} is not subscribed to {topic}"
            )
        return table, subscription

    def is_current(self, table) -> bool:
        """Whether `table` is still its topic's (not released or deleted meanwhile)."""
        return self._tables.get(table.topic) is table

    def pop(self, topic: str):
        """Forget the topic here; its table, or None."""
        return self._tables.pop(topic, None)

    def discard(self, table) -> None:
        """Forget `table`'s topic here, if `table` is still its table."""
        if self._tables.get(table.topic) is table:
            del self._tables[table.topic]

    def tables(self) -> list:
        return list(self._tables.values())

    def __len__(self) -> int:
        return len(self._tables)


class TopicTable:
    __slots__ = ("_at_min", "busy", "topic_log", "min_consumed", "subscriptions", "topic")

    def __init__(self, topic_log, subscriptions):
        self.topic = topic_log.topic
        self.topic_log = topic_log  # the topic's current TopicLog (updated on every subscribe)
        self.subscriptions = subscriptions  # subscriber id -> Subscription
        # subscriber id -> Waiters, while its subscription is being created or deleted: a
        # SUBSCRIBE meanwhile (another member joining at the same moment) waits for it
        self.busy = {}
        self.min_consumed = None
        self._at_min = 0
        self._recompute()

    def begin_busy(self, subscriber_id: str) -> None:
        self.busy[subscriber_id] = Waiters()

    def end_busy(self, subscriber_id: str) -> None:
        waiting = self.busy.pop(subscriber_id, None)
        if waiting is not None:
            waiting.fire()

    def _recompute(self) -> None:
        values = [s.consumed_seq for s in self.subscriptions.values()]
        if values:
            low = min(values)
            self.min_consumed = low
            self._at_min = values.count(low)
        else:
            self.min_consumed = None
            self._at_min = 0

    def _enter(self, seq: int) -> None:
        low = self.min_consumed
        if low is None or seq < low:
            self.min_consumed = seq
            self._at_min = 1
        elif seq == low:
            self._at_min += 1

    def _leave(self, seq: int) -> None:
        if seq == self.min_consumed:
            self._at_min -= 1
            if self._at_min <= 0:
                self._recompute()

    def add(self, subscription) -> None:
        self.subscriptions[subscription.subscriber_id] = subscription
        self._enter(subscription.consumed_seq)

    def remove(self, subscriber_id: str):
        subscription = self.subscriptions.pop(subscriber_id, None)
        if subscription is not None:
            self._leave(subscription.consumed_seq)
        return subscription

    def advance(self, subscription, seq: int) -> None:
        """Move `subscription`'s consumed seq-id forward to `seq` (written by its policy),
        and prune the cache when that moved the least one."""
        old = subscription.consumed_seq
        subscription.consumed(seq)
        low = self.min_consumed
        self.moved(old, seq)
        if self.min_consumed != low:
            self.topic_log.prune(self.min_consumed)

    def moved(self, old_seq: int, new_seq: int) -> None:
        """A subscriber's consumed seq-id went from old_seq to new_seq (already stored)."""
        if new_seq < old_seq:
            self._enter(new_seq)
            self._leave(old_seq)
        else:
            # Leave first: entering a higher value cannot lower the minimum, and leaving
            # the minimum may need the recompute to see the new value.
            self._leave_then_enter(old_seq, new_seq)

    def _leave_then_enter(self, old_seq: int, new_seq: int) -> None:
        if old_seq == self.min_consumed:
            self._at_min -= 1
            if self._at_min <= 0:
                self._recompute()  # sees new_seq already
                return
        self._enter(new_seq)

    def min_persisted(self):
        """The least consumed seq-id in the metadata store (what garbage collection may use)."""
        if not self.subscriptions:
            return None
        return min(s.persisted_seq for s in self.subscriptions.values())
