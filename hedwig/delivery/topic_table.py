"""One topic's durable subscribers on this hub, and the least consumed seq-id among them.

The minimum drives cache pruning, so it must stay cheap when every subscriber consumes
every entry: it is kept with a count of subscribers sitting at it, and recomputed (one
pass over the subscribers) only when the last of them moves on. Over K subscribers
consuming in turn that is O(1) per consume, amortised.
"""


from hedwig.concurrency.deferreds import Waiters


class TopicTable:
    __slots__ = ("_at_min", "bound_watch", "busy", "topic_log", "min_consumed", "subscriptions", "topic")

    def __init__(self, topic_log, subscriptions):
        self.topic = topic_log.topic
        self.topic_log = topic_log  # the topic's current TopicLog (updated on every subscribe)
        self.subscriptions = subscriptions  # subscriber id -> Subscription
        # subscriber id -> Waiters, while its subscription is being created or deleted: a
        # SUBSCRIBE meanwhile (another member joining at the same moment) waits for it
        self.busy = {}
        self.bound_watch = None  # the wait for the next publish while a subscription has a bound
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
