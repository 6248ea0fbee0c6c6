"""What region relays take part in (DeliveryManager's part for them): the relay policy the
hub's assembly gives (IRelayPolicy), the entries a relay subscriber passes over, and the
subscription changes the policy is told of (interest in a topic)."""

from collections import deque

from twisted.logger import Logger

from hedwig.delivery.interface import IRelayPolicy, SubscribeError

_logger = Logger()


class RelayingSubscriptions:
    """Part of DeliveryManager (manager.py): region relays' part in delivery."""

    def use_relay_policy(self, policy) -> None:
        if policy is not None and not IRelayPolicy.providedBy(policy):
            raise TypeError(f"{policy!r} does not provide IRelayPolicy")
        self._relay_policy = policy

    def _passed_over(self, cursor, from_seq: int, entry) -> None:
        """The cursor passed over seq-ids from_seq..entry.last_seq: consumed at once when
        everything before them is, else when a consume reaches them."""
        subscription = cursor.subscription
        if subscription.consumed_seq >= from_seq - 1:
            try:
                self.consume(subscription.topic, subscription.subscriber_id, entry.last_seq)
            except SubscribeError:
                pass  # (deleted meanwhile: nothing to move)
            return
        runs = cursor.filtered_runs
        if runs is None:
            runs = cursor.filtered_runs = deque()
        if runs and runs[-1][1] == from_seq - 1:
            runs[-1][1] = entry.last_seq
        else:
            runs.append([from_seq - 1, entry.last_seq])  # [consumed that reaches it, its end]

    def _changed(self, topic: str, subscriber_id: str, added: bool) -> None:
        if self._relay_policy is not None:
            try:
                self._relay_policy.subscription_changed(topic, subscriber_id, added)
            except Exception:
                _logger.failure("reporting a subscription change of {topic} failed", topic=topic)
