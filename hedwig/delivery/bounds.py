"""Message bounds (Hedwig's messageBound; DeliveryManager's part for them).

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


class BoundingSubscriptions:
    """Part of DeliveryManager (manager.py): message bounds."""

    def _check_bounds(self, table) -> None:
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
            self._watch_bounds(table)
        else:
            self._unwatch_bounds(table)

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
                if cursor.next_seq <= seq:
                    cursor.next_seq = seq + 1
                    cursor.held = None
                if cursor.window_full:
                    cursor.window_opened()
        self.work.skipped_by_bound += skipped

    def _watch_bounds(self, table) -> None:
        if table.bound_watch is not None:
            return
        log = table.topic_log
        waiting = log.get(log.last_seq + 1)
        if type(waiting) is Deferred:
            table.bound_watch = waiting
            waiting.addCallbacks(self._bound_published, self._bound_failed, (table,), None, (table,))

    def _unwatch_bounds(self, table) -> None:
        waiting, table.bound_watch = table.bound_watch, None
        if waiting is not None:
            waiting.cancel()

    def _bound_published(self, _entry, table) -> None:
        table.bound_watch = None
        if self._tables.get(table.topic) is table:
            self._check_bounds(table)

    def _bound_failed(self, failure, table) -> None:
        table.bound_watch = None
        if not failure.check(CancelledError) and self._tables.get(table.topic) is table:
            self.clock.callLater(0, self._check_bounds, table)
