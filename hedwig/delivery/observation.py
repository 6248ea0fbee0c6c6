"""What the delivery manager shows of its subscriptions: DESCRIBE_TOPIC's rows and the
STATS counters (DeliveryManager's part for observation).

Every row says the subscription's kind, delivery, members (attached subscribers: 0 or 1
for an exclusive one), pending (delivered, not acknowledged), redeliveries and what its
message bound skipped; a shared or pull one adds what is queued to go out again, the
acknowledgements held above its consumed seq-id, dead letters and its settings.
"""


class DescribingSubscriptions:
    """Part of DeliveryManager (manager.py): its DESCRIBE_TOPIC rows and STATS counters."""

    def describe(self, topic: str) -> list:
        table = self._tables.get(topic)
        if table is None:
            return []
        last_seq = table.topic_log.last_seq
        rows = []
        for sid in sorted(table.subscriptions):
            subscription = table.subscriptions[sid]
            cursor = subscription.cursor
            window = subscription.preferences.get("window", self.settings.default_window)
            delivered = cursor.delivered_seq if cursor else subscription.consumed_seq
            row = {
                "subscriber_id": sid,
                "kind": subscription.kind,
                "delivery": "pull" if subscription.pull else "push",
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
                row.update(self._shared_row(subscription))
            rows.append(row)
        return rows

    def attached(self, topic: str) -> int:
        """Subscriptions of `topic` attached to a connection here now."""
        table = self._tables.get(topic)
        if table is None:
            return 0
        return sum(subscription.cursor is not None for subscription in table.subscriptions.values())

    def _shared_row(self, subscription) -> dict:
        dispatcher = subscription.dispatcher
        members = dispatcher.members
        return {
            "delivered_seq": dispatcher.next_seq - 1,
            "window": max((m.window for m in members.values()), default=self.settings.shared_window),
            "state": ("pull" if subscription.pull else "shared") if members else "detached",
            "members": len(members),
            "pending": dispatcher.pending,
            "queued": dispatcher.queued,
            "acked_above": dispatcher.acked.count(),
            "redeliveries": dispatcher.redelivered,
            "dead_lettered": dispatcher.dead_lettered,
            "skipped_by_bound": dispatcher.skipped_by_bound,
            "skipped_by_retention": dispatcher.skipped_by_retention,
            "ack_timeout_ms": round(dispatcher.ack_timeout_s * 1000),
            "max_deliveries": dispatcher.max_deliveries,
            "dead_letter_topic": dispatcher.dead_letter_topic if dispatcher.max_deliveries else None,
        }

    def stats(self) -> dict:
        cursors = [c for cs in self._channels.values() for c in cs]
        subscriptions = [s for t in self._tables.values() for s in t.subscriptions.values()]
        return {
            "topics": len(self._tables),
            "subscriptions": len(subscriptions),
            "attached": len(cursors),
            "ack_only": sum(not c.delivers for c in cursors),
            "paused_channels": len(self._paused),
            "subscribes": self.subscribes,
            "consumes": self.consumes,
            "delivered_entries": sum(c.delivered_entries for c in cursors),
            "delivered_messages": sum(c.delivered_messages for c in cursors),
            "pointer_writes": sum(s.writes for s in subscriptions),
            "pointer_write_failures": sum(s.write_failures for s in subscriptions),
            "read_retries": sum(c.read_retries for c in cursors),
            "skipped_by_retention": sum(c.skipped for c in cursors),
            "forced_closes": self.forced_closes,
            "channel_errors": self.channel_errors,
            "shared_members": sum(c.subscription.dispatcher is not None for c in cursors),
            **self.work.snapshot(),
        }
