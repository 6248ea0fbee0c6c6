"""What both clients' subscriptions share, whatever way they wait.

A subscription of either client keeps its SubscriptionPosition
(hedwig.protocol.position) and is an ISubscriber of its connection's protocol session
(hedwig.protocol.session), which hands it the frames of its handle. Its names and its
acknowledged seq-id are read from the position, here once, and so is what the hub's
events mean; an acknowledgement-only subscription (deliver=False) refuses a delivery
the same way in both clients.
"""

from hedwig.protocol.errors import EntryUnreadable, NoDeliveries, SubscriptionClosed
from hedwig.protocol.session import ProtocolViolation
from hedwig.protocol.status import SubscriptionEvent


class PositionedSubscription:
    """The parts of a subscription that are its position's, and the hub's events."""

    __slots__ = ()

    topic = property(lambda self: self._position.topic)
    subscriber_id = property(lambda self: self._position.subscriber_id)

    @property
    def acked(self) -> int:
        """The highest seq-id acknowledged: the hub's consumed seq-id when the subscription
        first attached, then every ack (sent or still due)."""
        return self._position.acked

    def on_event(self, event) -> None:
        """A forced close ends the subscription (another connection attached it); so does
        an unreadable entry (EntryUnreadable, after every message before it); TOPIC_MOVED,
        or an event newer than this client, detaches it to subscribe again where the topic
        lives now."""
        if event == SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED:
            self._ended(SubscriptionClosed(message="forced closed: attached on another connection"))
        elif event == SubscriptionEvent.ENTRY_UNREADABLE:
            position = self._position
            unread = position.received_through + 1
            self._ended(EntryUnreadable(position.topic, position.subscriber_id, unread))
        else:
            self.on_detached(topic_moved=True)


class AcknowledgesOnly:
    """Mixed into an acknowledgement-only subscription: the hub delivers nothing on it."""

    __slots__ = ()

    def _no_deliveries(self) -> NoDeliveries:
        """The error for asking it for messages."""
        return NoDeliveries(self.topic, self.subscriber_id)

    def on_delivery(self, start, stop, entry) -> None:
        # No hub sends this: one that did is not to be trusted (the connection drops).
        raise ProtocolViolation(
            f"the hub delivered to {self.topic}/{self.subscriber_id}, attached with deliver=False"
        )
