"""What an operator does to a topic's subscriptions from outside: move one's consumed
seq-id (RESET_SUBSCRIPTION) and delete them all with their topic (DELETE_TOPIC)
(DeliveryManager's part for administration).

A reset moves only a detached subscription, as Kafka resets only an inactive group's
offsets: an attached cursor has delivered past the old pointer, and moving the pointer
under it would leave its window and the client's acknowledgements meaning nothing.
"""

from twisted.internet.defer import DeferredList, maybeDeferred, succeed

from hedwig.delivery.interface import SubscribeError
from hedwig.delivery.start import consumed_for_start, resolve_time
from hedwig.protocol.status import Status, SubscriptionEvent


class AdministeringSubscriptions:
    """Part of DeliveryManager (manager.py): reset and delete subscriptions."""

    def subscription_names(self, topic_log):
        """Deferred[list of the topic's durable subscriber ids], loading them if need be."""
        return self._table(topic_log).addCallback(lambda table: sorted(table.subscriptions))

    def reset(self, topic_log, subscriber_id: str, start):
        """Move a detached subscription's consumed seq-id to where `start` (earliest,
        latest, ("seq", n), ("time", us), as SUBSCRIBE takes it) says, and write it.
        Deferred[{"consumed_seq", "previous_seq", "next_seq"}]; fails with SubscribeError
        (CLIENT_NOT_SUBSCRIBED, TOPIC_BUSY while attached, SEQ_OUT_OF_RANGE)."""
        return resolve_time(topic_log, start).addCallback(
            lambda start: self._table(topic_log).addCallback(self._reset, topic_log, subscriber_id, start)
        )

    def _reset(self, table, topic_log, subscriber_id, start):
        subscription = table.subscriptions.get(subscriber_id)
        if subscription is None:
            raise SubscribeError(
                Status.CLIENT_NOT_SUBSCRIBED, f"{subscriber_id} is not subscribed to {topic_log.topic}"
            )
        members = subscription.dispatcher.members if subscription.dispatcher is not None else ()
        if subscription.cursor is not None or members or subscriber_id in table.busy:
            raise SubscribeError(
                Status.TOPIC_BUSY,
                f"{subscriber_id} is attached to {topic_log.topic}: stop its subscriber first "
                "(a reset moves a detached subscription)",
            )
        new = consumed_for_start(topic_log, start)
        old = subscription.consumed_seq
        subscription.reposition(new)
        if subscription.dispatcher is not None:
            subscription.dispatcher.reposition(new)
        low = table.min_consumed
        table.moved(old, new)
        if table.min_consumed is not None and low is not None and table.min_consumed > low:
            topic_log.prune(table.min_consumed)
        result = {"consumed_seq": new, "previous_seq": old, "next_seq": new + 1}
        return subscription.flush().addCallback(lambda _: result)

    def drop_subscriptions(self, topic_log):
        """Delete every durable subscription of the topic (attached ones end with
        SUBSCRIPTION_FORCED_CLOSED) and forget the topic here: it is being deleted.
        Deferred[list of the subscriber ids deleted]."""
        return self._table(topic_log).addCallback(self._drop, topic_log)

    def _drop(self, table, topic_log):
        topic = topic_log.topic
        if self._tables.get(topic) is table:
            del self._tables[topic]
        names = sorted(table.subscriptions)
        self._unwatch_bounds(table)
        deleting = []
        for subscriber_id in names:
            subscription = table.subscriptions[subscriber_id]
            self._end_shared(subscription, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)
            cursor = subscription.cursor
            if cursor is not None:
                self._detach(cursor)
                self._notify_ended(cursor, SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED)
                self.forced_closes += 1
            deleting.append(subscription.settle().addCallback(self._delete_record, subscription))
        if not deleting:
            return succeed(names)

        def check(results):
            for ok, value in results:
                if not ok:
                    return value  # the first failure, once every deletion is done
            return names

        return DeferredList(deleting, consumeErrors=True).addCallback(check)

    def _delete_record(self, _settled, subscription):
        subscription.cancel()
        topic, subscriber_id = subscription.topic, subscription.subscriber_id
        deleted = maybeDeferred(self.metadata.delete_subscription, topic, subscriber_id, subscription.version)

        def gone(_):
            subscription.deleted = True
            self._changed(subscription.topic, subscription.subscriber_id, False)

        return deleted.addCallback(gone)
