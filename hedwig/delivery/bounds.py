"""Message bounds (Hedwig's messageBound).

A subscription made (or attached) with `message_bound=N` keeps at most N unconsumed
messages: once more than N are published past its consumed seq-id, the oldest are
skipped for it, so a subscriber that stalls or goes away never pins more than N
messages in the cache and the ledgers, and pruning and garbage collection go on. Skipped
messages are counted (its describe row, the hub's `skipped_by_bound`) and never
delivered to it: an exclusive subscriber's cursor jumps past them, a shared
subscription's floor moves over them with whatever was held or owed below it.

The check runs when a topic's subscriptions are loaded, when a bound is set, and after
every publish to a topic that has a bounded subscription: a wait for the next publish
at the tail of the cache (the stub a caught-up cursor waits on), so the publish path is
untouched and topics without bounds pay nothing.
"""

from twisted.internet.defer import CancelledError, Deferred


class MessageBounds:
    """The message bounds of every topic's subscriptions: the skips, and the wait for the
    next publish of each topic that has a bounded subscription."""

    def __init__(self, tables, clock, counters):
        self._tables = tables  # SubscriptionTables: whether a table is still its topic's
        self._clock = clock
        self._counters = counters  # the hub's WorkQueueCounters (skipped_by_bound)
        self._watches = {}  # TopicTable -> the wait for its topic's next publish

    def check(self, table) -> None:
        """Skip what each bounded subscription of `table` holds beyond its bound, and
        watch the next publish while any has one."""
        last = table.topic_log.last_seq
        bounded = False
        for subscription in list(table.subscriptions.values()):
            bound = subscription.preferences.get("message_bound")
            if not bound:
                continue
            bounded = True
            if subscription.consumed_seq < last - bound:
                self._skip(table, subscription, last - bound)
        if bounded:
            self._watch(table)
        else:
            self.forget(table)

    def _skip(self, table, subscription, seq: int) -> None:
        """Move `subscription` over every unconsumed seq-id up to `seq`."""
        dispatcher = subscription.dispatcher
        if dispatcher is not None:
            skipped = dispatcher.skip_through(seq)
            dispatcher.skipped_by_bound += skipped
        else:
            skipped = seq - subscription.consumed_seq
            subscription.skipped_by_bound += skipped
            table.advance(subscription, seq)
            cursor = subscription.cursor
            if cursor is not None and cursor.delivers:
                cursor.move_past(seq)
        self._counters.skipped_by_bound += skipped

    def _watch(self, table) -> None:
        if table in self._watches:
            return
        log = table.topic_log
        waiting = log.get(log.last_seq + 1)
        if type(waiting) is Deferred:
            self._watches[table] = waiting
            waiting.addCallbacks(self._published, self._failed, (table,), None, (table,))

    def forget(self, table) -> None:
        """Stop watching `table`'s topic (released, deleted, or bounded no more)."""
        waiting = self._watches.pop(table, None)
        if waiting is not None:
            waiting.cancel()

    def _published(self, _entry, table) -> None:
        self._watches.pop(table, None)
        if self._tables.is_current(table):
            self.check(table)

    def _failed(self, failure, table) -> None:
        self._watches.pop(table, None)
        if not failure.check(CancelledError) and self._tables.is_current(table):
            self._clock.callLater(0, self.check, table)
