"""The subscriptions of one client connection by handle, and what the hub's frames mean for them.

The hub names a subscription by a connection-local handle in its SUBSCRIBE reply, its
DELIVERY frames and its EVENT frames. Both clients' connections (the blocking one and
the Twisted protocol) keep one SubscriptionHandles and hand it those frames, so the
rules live here once: a handle is registered as soon as its reply is read (deliveries may
follow in the same read), a forced close ends the subscription, TOPIC_MOVED or a lost
connection detaches it so that it subscribes again.
"""

from hedwig.client.errors import SubscriptionClosed
from hedwig.protocol import Status, SubscriptionEvent


class SubscriptionHandles(dict):
    """handle -> Subscription (either client's) attached on one connection."""

    __slots__ = ()

    def answered(self, connection, subscription, response) -> None:
        """A reply arrived for a request made by `subscription` (None for any other)."""
        if subscription is not None and response.status is Status.SUCCESS:
            self[response.value.handle] = subscription
            subscription._attached(connection, response.value)

    def delivered(self, handle, start, stop, entry) -> None:
        subscription = self.get(handle)
        if subscription is not None:
            subscription._delivered(start, stop, entry)

    def event(self, handle, event) -> None:
        subscription = self.pop(handle, None)
        if subscription is None:
            return
        if event == SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED:
            subscription._ended(SubscriptionClosed(message="forced closed: attached on another connection"))
        else:  # TOPIC_MOVED, or anything newer: subscribe again where the topic lives now
            subscription._detached(topic_moved=True)

    def lost(self) -> None:
        """The connection is gone: every subscription on it detaches (to subscribe again)."""
        subscriptions = list(self.values())
        self.clear()
        for subscription in subscriptions:
            subscription._detached()
