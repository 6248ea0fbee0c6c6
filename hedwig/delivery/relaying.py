"""What region relays take part in: the relay policy the hub's assembly gives
(IRelayPolicy): which entries a relay subscriber is not sent (filtering.py says what
passing over them does), and the subscription changes the policy is told of (interest
in a topic)."""

from twisted.logger import Logger

from hedwig.delivery.interface import IRelayPolicy

_logger = Logger()


class Relaying:
    """The hub's IRelayPolicy, once given; a hub without regions has none."""

    def __init__(self):
        self._policy = None

    def use(self, policy) -> None:
        if policy is not None and not IRelayPolicy.providedBy(policy):
            raise TypeError(f"{policy!r} does not provide IRelayPolicy")
        self._policy = policy

    def entry_filter(self, subscriber_id: str):
        """The predicate of the entries `subscriber_id` is not sent, or None."""
        if self._policy is None:
            return None
        return self._policy.entry_filter(subscriber_id)

    def subscription_changed(self, topic: str, subscriber_id: str, added: bool) -> None:
        """A durable subscription of `topic` was created or deleted here (written to the
        metadata store already); the policy's failure is logged, never undoes it."""
        if self._policy is not None:
            try:
                self._policy.subscription_changed(topic, subscriber_id, added)
            except Exception:
                _logger.failure("reporting a subscription change of {topic} failed", topic=topic)
