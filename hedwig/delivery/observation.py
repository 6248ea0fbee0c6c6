"""What the delivery manager shows of its subscriptions: DESCRIBE_TOPIC's rows and the
STATS counters (DeliveryManager's part for observation)."""



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
            rows.append(
                {
                    "subscriber_id": sid,
                    "consumed_seq": subscription.consumed_seq,
                    "persisted_seq": subscription.persisted_seq,
                    "delivered_seq": cursor.delivered_seq if cursor else subscription.consumed_seq,
                    "backlog": max(0, last_seq - subscription.consumed_seq),
                    "window": cursor.window if cursor else window,
                    "state": cursor.state if cursor else "detached",
                    "push_waits": cursor.push_waits if cursor else 0,
                    "pulls": cursor.pulls if cursor else 0,
                }
            )
        return rows

    def attached(self, topic: str) -> int:
        """Subscriptions of `topic` attached to a connection here now."""
        table = self._tables.get(topic)
        if table is None:
            return 0
        return sum(subscription.cursor is not None for subscription in table.subscriptions.values())

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
        }
