"""What the clients' subscriptions share, whatever way they wait.

A subscription of either client keeps its SubscriptionPosition
(hedwig.protocol.position) and is an ISubscriber of its connection's protocol session
(hedwig.protocol.session), which hands it the frames of its handle. Its names and its
acknowledged seq-id are read from the position, here once, and so is what the hub's
events mean; an acknowledgement-only subscription (deliver=False) refuses a delivery
the same way in both clients.
"""

from hedwig.protocol.errors import EntryUnreadable, NoDeliveries, PullOnly, SubscriptionClosed
from hedwig.protocol.position import seq_of
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


class AcknowledgesEach:
    """Mixed into every client's shared and pull subscriptions (a SharedPosition): each
    message is acknowledged by itself (acks go out in batches, as ranges); a message
    not acknowledged comes again, with its `delivery_count`; `nack` asks for that now.
    The client's class gives `_hand_over(messages)` (to its queue or handler) and
    `_fetch_ended()` (a pull subscription's FETCH_DONE)."""

    __slots__ = ()

    @property
    def acked(self) -> int:
        """How many messages were acknowledged through this subscription."""
        return self._position.acked_count

    @property
    def kind(self) -> str:
        return self._position.options.kind

    @property
    def pull(self) -> bool:
        return self._position.pull

    def on_redelivery(self, start, stop, entry, count) -> None:
        self._hand_over(self._position.messages(start, stop, entry, count))

    def on_event(self, event) -> None:
        if event == SubscriptionEvent.FETCH_DONE:
            self._fetch_ended()
        else:
            super().on_event(event)

    def _fetch_ended(self) -> None:
        raise ProtocolViolation(f"FETCH_DONE for {self.topic}/{self.subscriber_id}, which fetched nothing")


class PullsOnly:
    """Mixed into a pull subscription: the hub sends it only what fetch() asks for."""

    __slots__ = ()

    def _not_pushed(self) -> PullOnly:
        return PullOnly(self.topic, self.subscriber_id, True)


class AttachedOnProtocol:
    """The asyncio and Twisted subscriptions' hold on the protocol (and handle) they are
    attached on, and the acknowledgements sent on it: the same in both event loops, so
    written once. A subscription detached
    while it has not ended asks its client to subscribe it again; `_has_ended` says, in
    each client's own terms, whether it has."""

    __slots__ = ()

    @property
    def attached(self) -> bool:
        return self._protocol is not None

    def on_attached(self, protocol, subscribed) -> None:
        self._protocol = protocol
        self._handle = subscribed.handle

    def on_detached(self, topic_moved: bool = False) -> None:
        self._let_go()
        if not self._has_ended():
            self._client._resubscribe_later(self, topic_moved)

    def _let_go(self) -> None:
        """Forget the protocol and handle (the connection is gone, or the hub ended it)."""
        self._protocol = None
        self._handle = None

    def _has_ended(self) -> bool:
        raise NotImplementedError

    def _flush_ack(self) -> None:
        """Send the acknowledgement still due, now (its delayed call, if any, has run)."""
        self._ack_call = None
        to_send = self._position.unsent_ack()
        if to_send is not None:
            self._send_consume(to_send)

    def _send_consume(self, seq) -> None:
        if self._protocol is not None:
            self._protocol.consume(self._handle, seq)
        # (else resubscribing from acked+1 tells the hub)


class AcksOnProtocol:
    """Mixed into the asyncio and Twisted shared subscriptions: their acks and NACKs go
    on the protocol they are attached on; acks made while detached wait for the next
    attach (FlushesAckOnAttach), and a NACK then is moot (the hub took back everything
    the member held when it went)."""

    __slots__ = ()

    def _send_consume(self, ranges) -> None:
        if self._protocol is not None:
            self._protocol.ack(self._handle, ranges)
        else:
            self._position.not_sent(ranges)

    def _nack_now(self, message_or_seq) -> None:
        if self._protocol is not None:
            seq = seq_of(message_or_seq)
            self._protocol.nack(self._handle, [(seq, seq)])


class FlushesAckOnAttach:
    """Mixed into the asyncio and Twisted acknowledgement-only subscriptions: what was
    acknowledged while detached goes out as soon as the subscription is attached again."""

    __slots__ = ()

    def on_attached(self, protocol, subscribed) -> None:
        super().on_attached(protocol, subscribed)
        self._flush_ack()
