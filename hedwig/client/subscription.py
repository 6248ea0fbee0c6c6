"""What every client's subscriptions share, whatever way they wait: written once.

A subscription keeps its position (hedwig.protocol.position or shared_position: what to
ask for when it attaches again, what it has handed over, which acknowledgements are
due) and is the ISubscriber of the connection it is attached on: the protocol session
(hedwig.protocol.session) hands it the frames of its handle. Here, once for the three
clients: what attaching, a delivery, a redelivery, the hub's events and a lost
connection do; acknowledgements and when they go (every `ack_every`, else `ack_delay`
after the first one unsent); closing; and a pull subscription's fetch.

What differs is where messages go and how the application waits for them: each
subscription is given an *inbox* by its client's module, which takes
`extend(messages)` (a blocking or asyncio deque, a Twisted handler or DeferredQueue,
a pull subscription's fetch buffer) and `end(error, here)` when the subscription ends.
Each client's Subscription derives from BaseSubscription (its only base), and its
shared, pull and acknowledgement-only kinds from that, side by side, adding their
application face (`receive`, `async for`, a queue, `fetch`) and nothing of the protocol;
a pull subscription takes the shared kind's `nack` (its class's attribute, not a third
base): what differs between them is their position's (a SharedPosition either way).

The kinds: exclusive (acknowledged cumulatively, one CONSUME per batch); shared and
pull (a SharedPosition: each message acknowledged by itself, ACK frames of ranges, a
message not acknowledged comes again with its delivery count, `nack` asks for that
now); acknowledgement only (deliver=False: nothing is delivered, a hub that delivers is
dropped, each ack goes at once).
"""

from zope.interface import implementer

from hedwig.protocol import Op, Status
from hedwig.protocol.errors import (
    ConnectionLost,
    EntryUnreadable,
    FetchInProgress,
    HedwigError,
    NoDeliveries,
    PullOnly,
    SubscriptionClosed,
    error_for,
)
from hedwig.protocol.message import Message
from hedwig.protocol.position import seq_of
from hedwig.protocol.requests import encode_close_subscription
from hedwig.protocol.session import ISubscriber, ProtocolViolation
from hedwig.protocol.shared_position import SharedPosition
from hedwig.protocol.status import SubscriptionEvent
from hedwig.protocol.work_requests import check_fetch, encode_fetch

CLOSED_HERE = "closed by the application"


@implementer(ISubscriber)
class BaseSubscription:
    """One subscription of a client core (`client`): its position, the connection and
    handle it is attached with, its acknowledgements and its inbox."""

    def __init__(self, client, position, inbox):
        self._client = client
        self._position = position
        self._inbox = inbox
        self._shared = isinstance(position, SharedPosition)
        self._connection = None  # the connection it is attached on, and its handle there
        self._handle = None
        self._closed = None  # the error it ended with (a SubscriptionClosed when closed here)
        self._closed_here = False
        self._detached_at = None  # when its connection went (the blocking client gives up after a while)
        self._ack_call = None  # the flush of a delayed acknowledgement (event-loop clients)
        # What the hub said its filter most likely did not mean ("": nothing; SUBSCRIBE's reply).
        self.warning = ""
        if not position.deliver:
            self.on_delivery = self._refuse_delivery  # (acknowledgement only: no hub sends one)

    topic = property(lambda self: self._position.topic)
    subscriber_id = property(lambda self: self._position.subscriber_id)

    @property
    def acked(self) -> int:
        """Exclusive: the highest seq-id acknowledged (the hub's consumed seq-id when it
        first attached, then every ack, sent or still due). Shared or pull: how many
        messages were acknowledged through this subscription."""
        return self._position.acked_count if self._shared else self._position.acked

    @property
    def kind(self) -> str:
        """ "exclusive" or "shared" (as subscribe was asked)."""
        return self._position.options.kind

    @property
    def filter(self) -> str | None:
        """The message selector it was subscribed with (None: every message)."""
        return self._position.options.filter

    @property
    def pull(self) -> bool:
        """Whether messages come only as `fetch` asks (deliver="pull")."""
        return self._shared and self._position.pull

    @property
    def attached(self) -> bool:
        return self._connection is not None

    def _refusal(self) -> HedwigError:
        """The error for asking a subscription that is pushed nothing for messages."""
        if self.pull:
            return PullOnly(self.topic, self.subscriber_id, True)
        return NoDeliveries(self.topic, self.subscriber_id)

    # -- ISubscriber: called by the connection's protocol session -------------------------

    def on_attached(self, connection, subscribed) -> None:
        self._connection = connection
        self._handle = subscribed.handle
        self._detached_at = None
        self.warning = getattr(subscribed, "warning", "")
        if self._shared or not self._position.deliver:
            # What was acknowledged while detached goes now (an exclusive subscription's
            # pointer goes with its next acknowledgement, or before it waits).
            self._flush_ack()

    def on_delivery(self, start, stop, entry) -> None:
        self._inbox.extend(self._position.messages(start, stop, entry))

    def _refuse_delivery(self, start, stop, entry) -> None:
        # A hub that delivers to an acknowledgement-only subscription is not to be
        # trusted: the connection drops.
        raise ProtocolViolation(
            f"the hub delivered to {self.topic}/{self.subscriber_id}, attached with deliver=False"
        )

    def on_redelivery(self, start, stop, entry, count) -> None:
        self._inbox.extend(self._position.messages(start, stop, entry, count))

    def on_subset(self, start, stop, selection, entry) -> None:
        if not self._shared:
            raise ProtocolViolation(f"the hub sent a subset of an entry to {self.topic}/{self.subscriber_id}")
        self._inbox.extend(self._position.subset_messages(start, stop, selection, entry))

    def on_event(self, event) -> None:
        """A forced close ends the subscription (another connection attached it); so does
        an unreadable entry (EntryUnreadable, after every message before it). FETCH_DONE
        ends a pull subscription's fetch. TOPIC_MOVED, or an event newer than this
        client, detaches it to subscribe again where the topic lives now."""
        if event == SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED:
            self._ended(SubscriptionClosed(message="forced closed: attached on another connection"))
        elif event == SubscriptionEvent.ENTRY_UNREADABLE:
            position = self._position
            self._ended(
                EntryUnreadable(position.topic, position.subscriber_id, position.received_through + 1)
            )
        elif event == SubscriptionEvent.FETCH_DONE:
            if not self.pull:
                raise ProtocolViolation(
                    f"FETCH_DONE for {self.topic}/{self.subscriber_id}, which fetched nothing"
                )
            self._inbox.fetch_done()
        else:
            self.on_detached(topic_moved=True)

    def on_detached(self, topic_moved: bool = False) -> None:
        self._connection = None
        self._handle = None
        self._detached_at = self._client._waiting.now()
        if self.pull:
            self._inbox.fetch_done()  # (a fetch under way ends with what came)
        self._client._detached(self, topic_moved)

    def _ended(self, error) -> None:
        """The hub ended it (forced closed, gone, unreadable): it is attached nowhere."""
        self._connection = None
        self._handle = None
        self._finish(error)

    def _finish(self, error) -> None:
        if self._closed is not None:
            return
        self._closed = error
        if self._ack_call is not None:
            self._ack_call.cancel()
            self._ack_call = None
        self._client._subscriptions.discard(self)
        self._inbox.end(error, self._closed_here)

    # -- acknowledgements ------------------------------------------------------------------

    def _ack(self, message_or_seq) -> None:
        """Acknowledge: an exclusive subscription this message and every one before it, a
        shared one this message alone, sent with the `ack_every`-th or `ack_delay` after
        the first one unsent; an acknowledgement-only one at once. (The blocking client's
        exclusive subscription has its own, without timers.)"""
        seq = message_or_seq.seq if isinstance(message_or_seq, Message) else int(message_or_seq)  # (seq_of)
        position = self._position
        if not position.deliver:
            position.acknowledge(seq)
            self._flush_ack()
            return
        to_send = position.ack(seq)
        if to_send is not None:
            self._send_ack(to_send)
        elif self._ack_call is None and position.ack_due:
            client = self._client
            self._ack_call = client._waiting.call_later(client.config.ack_delay, self._flush_ack)

    def _nack(self, message_or_seq) -> None:
        """Give a message of a shared subscription back: the hub delivers it again now
        (maybe to this member). Moot while detached: the hub took back everything this
        member held when it went."""
        connection, handle = self._connection, self._handle
        if connection is None or handle is None:
            return
        seq = seq_of(message_or_seq)
        try:
            connection.nack(handle, [(seq, seq)])
        except HedwigError:
            pass  # the connection is gone, and the hub took back what it held with it

    def _flush_ack(self) -> None:
        """Send the acknowledgement still due, now (its delayed flush, if any, is moot)."""
        call, self._ack_call = self._ack_call, None
        if call is not None:
            call.cancel()  # (nothing when it is the call running this)
        to_send = self._position.unsent_ack()
        if to_send is not None:
            self._send_ack(to_send)

    def _send_ack(self, to_send) -> None:
        """A CONSUME (exclusive: a seq-id) or an ACK (shared: ranges), or, when it cannot
        go now, due again (attaching again sends it)."""
        connection, handle = self._connection, self._handle
        if connection is None or handle is None:
            self._position.not_sent(to_send)
            return
        try:
            if self._shared:
                connection.ack(handle, to_send)
            else:
                connection.consume(handle, to_send)
        except HedwigError:
            self._position.not_sent(to_send)

    # -- closing and fetching (steps: core.py) ---------------------------------------------

    def _close_steps(self):
        """Steps: flush acknowledgements and detach; the subscription stays (durable)."""
        if self._closed is not None:
            return
        connection, handle = self._connection, self._handle
        if connection is not None:
            self._flush_ack()
        self._closed_here = True
        self._finish(SubscriptionClosed(message=CLOSED_HERE))
        if connection is None or handle is None:
            return
        connection.release(handle)
        self._connection = None
        self._handle = None
        try:
            yield connection.call(Op.CLOSE_SUBSCRIPTION, encode_close_subscription(handle))
        except HedwigError:
            pass  # the connection is gone, and the subscription detached with it

    def _fetch_steps(self, max_messages: int, timeout: float):
        """Steps: a pull subscription's fetch, on an event loop (its inbox a FetchInbox):
        up to `max_messages` messages the hub has now, or the first that come within
        `timeout` seconds; an empty list when the timeout passes first."""
        check_fetch(max_messages, timeout)
        if self._closed is not None:
            raise self._closed
        inbox = self._inbox
        if inbox.fetching is not None:
            raise FetchInProgress(message="a fetch of this subscription is in progress")
        connection = self._connection
        if connection is None:
            raise ConnectionLost(message="the subscription is attaching again; fetch once it is")
        self._flush_ack()
        waiting = self._client._waiting
        over = inbox.fetching = waiting.new_result()
        # (the hub ends the fetch with FETCH_DONE; this guard if it never does)
        guard = waiting.call_later(timeout + self._client.config.timeout, inbox.fetch_done)
        try:
            body = encode_fetch(self._handle, max_messages, round(timeout * 1000))
            response = yield connection.call(Op.FETCH, body)
            if response.status is not Status.SUCCESS:
                raise error_for(response.status, response.message)
            yield over
        except ConnectionLost:
            pass  # what came before the connection went
        finally:
            guard.cancel()
            inbox.fetching = None
        return inbox.take()

    def __repr__(self) -> str:
        state = "closed" if self._closed is not None else ("attached" if self._connection else "detached")
        return f"<{type(self).__name__} {self.topic}/{self.subscriber_id} {state}>"


class FetchInbox:
    """A pull subscription's inbox on an event loop: what the hub sends for a fetch,
    until the fetch is over (FETCH_DONE, its guard, a lost connection, the end)."""

    __slots__ = ("_messages", "_waiting", "fetching")

    def __init__(self, waiting):
        self._waiting = waiting
        self._messages = []
        self.fetching = None  # the result a fetch under way waits on

    def extend(self, messages) -> None:
        self._messages.extend(messages)

    def fetch_done(self) -> None:
        fetching = self.fetching
        if fetching is not None:
            self._waiting.settle(fetching, None)

    def end(self, error, here: bool) -> None:
        self.fetch_done()

    def take(self) -> list:
        messages, self._messages = self._messages, []
        return messages
