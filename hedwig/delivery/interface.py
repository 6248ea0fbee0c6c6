"""The delivery seam: what the delivery manager needs from a client connection.

The hub's connection implements IDeliveryChannel; the delivery manager calls it once per
entry per subscriber (never per message), and the connection writes the entry's stored
bytes behind a small header with writeSequence, so nothing is copied or re-encoded.
Backpressure runs the other way: the connection, registered as an IPushProducer on its
transport, calls DeliveryManager.pause_channel / resume_channel.
"""

from zope.interface import Interface

from hedwig.protocol.status import Status


class SubscribeError(Exception):
    """A subscription request the delivery manager refuses; `status` goes on the wire."""

    def __init__(self, status: Status, message: str):
        super().__init__(message)
        self.status = status
        self.message = message

    def __repr__(self) -> str:
        return f"SubscribeError({self.status.name}, {self.message!r})"


class IDeliveryChannel(Interface):
    """One client connection as the delivery manager sees it."""

    def deliver(handle, entry, start, stop):
        """Send messages [start, stop) (indexes within LogEntry `entry`) of subscription
        `handle`. The hub writes hedwig.protocol.delivery_header(handle, start, stop,
        len(entry.data)) and entry.data with transport.writeSequence: no copy, no
        re-encoding. Called only while the channel is not paused."""

    def subscription_ended(handle, event):
        """The hub ended this subscription (a hedwig.protocol.SubscriptionEvent:
        SUBSCRIPTION_FORCED_CLOSED, TOPIC_MOVED); the connection tells its client."""
