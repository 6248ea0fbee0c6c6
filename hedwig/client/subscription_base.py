"""What both clients' subscriptions share, whatever way they wait.

A subscription of either client keeps its SubscriptionPosition (resume.py) and is
handed frames by its connection's SubscriptionHandles (handles.py). Its names and its
acknowledged seq-id are read from the position, here once; an acknowledgement-only
subscription (deliver=False) refuses a delivery the same way in both clients.
"""

from hedwig.client.errors import NoDeliveries
from hedwig.protocol.session import ProtocolViolation


class PositionedSubscription:
    """The parts of a subscription that are its position's."""

    __slots__ = ()

    topic = property(lambda self: self._position.topic)
    subscriber_id = property(lambda self: self._position.subscriber_id)

    @property
    def acked(self) -> int:
        """The highest seq-id acknowledged: the hub's consumed seq-id when the subscription
        first attached, then every ack (sent or still due)."""
        return self._position.acked


class AcknowledgesOnly:
    """Mixed into an acknowledgement-only subscription: the hub delivers nothing on it."""

    __slots__ = ()

    def _no_deliveries(self) -> NoDeliveries:
        """The error for asking it for messages."""
        return NoDeliveries(self.topic, self.subscriber_id)

    def _delivered(self, start, stop, entry) -> None:
        # No hub sends this: one that did is not to be trusted (the connection drops).
        raise ProtocolViolation(
            f"the hub delivered to {self.topic}/{self.subscriber_id}, attached with deliver=False"
        )
