"""What an operator does to a subscription from outside: move its consumed seq-id
(RESET_SUBSCRIPTION). (Deleting a topic's subscriptions with it is the delivery
manager's drop_subscriptions: it ends attachments, which the manager's parts hold.)

A reset moves only a detached subscription, as Kafka resets only an inactive group's
offsets: an attached cursor has delivered past the old pointer, and moving the pointer
under it would leave its window and the client's acknowledgements meaning nothing.
"""

from hedwig.delivery.interface import SubscribeError
from hedwig.delivery.start import consumed_for_start
from hedwig.protocol.status import Status


def reset_subscription(table, topic_log, subscriber_id: str, start):
    """Move the detached subscription `subscriber_id` of `table` (a TopicTable) to where
    `start` says (a time start resolved already: start.resolve_time) and write it:
    Deferred[{"consumed_seq", "previous_seq", "next_seq"}]; raises SubscribeError
    (CLIENT_NOT_SUBSCRIBED, TOPIC_BUSY, SEQ_OUT_OF_RANGE)."""
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
