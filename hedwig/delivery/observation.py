"""What the delivery manager shows of its subscriptions: DESCRIBE_TOPIC's rows and the
STATS counters, read from its parts when asked (nothing here is on a hot path).

Every row says the subscription's kind, delivery, members (attached subscribers: 0 or 1
for an exclusive one), pending (delivered, not acknowledged), redeliveries and what its
message bound skipped; a shared or pull one adds what is queued to go out again, the
acknowledgements held above its consumed seq-id, dead letters and its settings. Its
`filter` is its message selector (None: none).
"""

from hedwig.delivery.filtering import FILTER_PREFERENCE


def describe_table(table, settings) -> list:
    """The rows of one topic's subscriptions (a TopicTable), by subscriber id."""
    last_seq = table.topic_log.last_seq
    rows = []
    for sid in sorted(table.subscriptions):
        subscription = table.subscriptions[sid]
        cursor = subscription.cursor
        window = subscription.preferences.get("window", settings.default_window)
        delivered = cursor.delivered_seq if cursor else subscription.consumed_seq
        row = {
            "subscriber_id": sid,
            "user": subscription.preferences.get("owner"),  # who made it ([auth] on; else None)
            "kind": subscription.kind,
            "delivery": "pull" if subscription.pull else "push",
            "filter": subscription.preferences.get(FILTER_PREFERENCE),
            "consumed_seq": subscription.consumed_seq,
            "persisted_seq": subscription.persisted_seq,
            "delivered_seq": delivered,
            "backlog": max(0, last_seq - subscription.consumed_seq),
            "window": cursor.window if cursor else window,
            "state": cursor.state if cursor else "detached",
            "push_waits": cursor.push_waits if cursor else 0,
            "pulls": cursor.pulls if cursor else 0,
            "members": 0 if cursor is None else 1,
            "pending": max(0, delivered - subscription.consumed_seq) if cursor and cursor.delivers else 0,
            "redeliveries": 0,
            "skipped_by_bound": subscription.skipped_by_bound,
            "message_bound": subscription.preferences.get("message_bound"),
            "unwritten": subscription.dirty,
        }
        if subscription.dispatcher is not None:
            row.update(_shared_row(subscription, settings))
        rows.append(row)
    return rows


def _shared_row(subscription, settings) -> dict:
    dispatcher = subscription.dispatcher
    members = dispatcher.members
    return {
        "delivered_seq": dispatcher.next_seq - 1,
        "window": max((m.window for m in members.values()), default=settings.shared_window),
        "state": ("pull" if subscription.pull else "shared") if members else "detached",
        "members": len(members),
        "pending": dispatcher.pending,
        "queued": dispatcher.queued,
        "delayed": dispatcher.delays.held_messages,
        "acked_above": dispatcher.acked.count(),
        "redeliveries": dispatcher.redelivered,
        "dead_lettered": dispatcher.dead_lettered,
        "skipped_by_bound": dispatcher.skipped_by_bound,
        "skipped_by_retention": dispatcher.skipped_by_retention,
        "ack_timeout_ms": round(dispatcher.ack_timeout_s * 1000),
        "max_deliveries": dispatcher.max_deliveries,
        "dead_letter_topic": dispatcher.dead_letter_topic if dispatcher.max_deliveries else None,
    }


def delivery_stats(tables, attachments, consumes: int, work) -> dict:
    """The STATS counters of a delivery manager's parts: its SubscriptionTables, its
    Attachments, its count of consumes and its WorkQueueCounters."""
    cursors = attachments.all()
    subscriptions = [s for t in tables.tables() for s in t.subscriptions.values()]
    return {
        "topics": len(tables),
        "subscriptions": len(subscriptions),
        "attached": len(cursors),
        "ack_only": sum(not c.delivers for c in cursors),
        "paused_channels": attachments.paused_channels,
        "subscribes": attachments.subscribes,
        "consumes": consumes,
        "delivered_entries": sum(c.delivered_entries for c in cursors),
        "delivered_messages": sum(c.delivered_messages for c in cursors),
        "pointer_writes": sum(s.writes for s in subscriptions),
        "pointer_write_failures": sum(s.write_failures for s in subscriptions),
        "read_retries": sum(c.read_retries for c in cursors),
        "skipped_by_retention": sum(c.skipped for c in cursors),
        "forced_closes": attachments.forced_closes,
        "channel_errors": attachments.channel_errors,
        "shared_members": sum(c.subscription.dispatcher is not None for c in cursors),
        **work.snapshot(),
    }
