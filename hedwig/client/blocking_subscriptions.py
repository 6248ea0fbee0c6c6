"""The blocking client's subscriptions: iterate one, or `receive(timeout)`; `ack` what you
processed. Every method may be called from any thread; the calling thread reads the
connection while it waits (hedwig.client.connection).

`Subscription` is exclusive and acknowledged cumulatively; `AckOnlySubscription`
(deliver=False) receives nothing; `SharedSubscription` (kind="shared") is one member of
a work queue, acknowledged message by message; `PullSubscription` (deliver="pull")
receives only what `fetch` asks for. The client (blocking.py) makes them.
"""

import time
from collections import deque

from zope.interface import implementer

from hedwig.client.blocking_acks import DelayedAcks
from hedwig.client.subscription_base import (
    AcknowledgesEach,
    AcknowledgesOnly,
    PositionedSubscription,
    PullsOnly,
)
from hedwig.protocol import Op, Status
from hedwig.protocol.errors import HedwigError, SubscriptionClosed, error_for
from hedwig.protocol.position import SubscriptionPosition, seq_of
from hedwig.protocol.requests import encode_close_subscription
from hedwig.protocol.session import ISharedSubscriber, ISubscriber
from hedwig.protocol.work_requests import check_fetch, encode_fetch

# A fetch without a timeout asks the hub for this long at a time, until something comes.
FETCH_SLICE_S = 30.0


@implementer(ISubscriber)
class Subscription(DelayedAcks, PositionedSubscription):
    """A live subscription: iterate it, or `receive(timeout)`; `ack` what you processed.

    Messages come in seq-id order with no gap, across reconnects. Iteration ends when the
    subscription is closed; `receive` then raises SubscriptionClosed. Acknowledgements
    are batched (DelayedAcks, blocking_acks.py).
    """

    def __init__(self, client, position: SubscriptionPosition):
        self._client = client
        self._position = position
        self._queue = deque()
        self._connection = None
        self._handle = None
        self._closed = None  # the SubscriptionClosed once closed
        self._closed_here = False
        self._detached_at = None  # when the connection was lost, while resubscribing
        self._ack_since = None  # time.monotonic() of the oldest acknowledgement not sent

    @property
    def closed(self) -> bool:
        return self._closed is not None

    # -- ISubscriber: called by the connection's session, on the reading thread ----------------

    def on_attached(self, connection, subscribed) -> None:
        self._connection = connection
        self._handle = subscribed.handle
        self._detached_at = None

    def on_delivery(self, start, stop, entry) -> None:
        self._queue.extend(self._position.messages(start, stop, entry))

    def _hand_over(self, messages) -> None:
        self._queue.extend(messages)

    def on_detached(self, topic_moved: bool = False) -> None:
        self._connection = None
        self._handle = None
        self._detached_at = time.monotonic()
        if topic_moved:
            self._client._forget_route(self.topic)

    def _ended(self, error) -> None:
        self._connection = None
        self._handle = None
        self._closed = error

    # -- the application's side --------------------------------------------------------------

    def receive(self, timeout: float | None = None):
        """The next message, or None when `timeout` seconds pass first (None: wait)."""
        queue = self._queue
        if queue:
            return queue.popleft()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            connection = self._connection
            if connection is None or self._closed is not None:  # (else no call: every wait)
                connection = self._attached(deadline)
                if connection is None:
                    return None
            arrived = lambda connection=connection: queue or self._connection is not connection  # noqa: E731
            if self._ack_since is not None and self._ack_waits(connection, arrived, deadline):
                if queue:
                    return queue.popleft()
                continue  # (the connection went: attach again)
            self._flush_ack(connection)
            ready = connection.wait_for(arrived, deadline)
            if queue:
                return queue.popleft()
            if not ready and (deadline is not None and time.monotonic() >= deadline):
                return None

    def _attached(self, deadline):
        """The connection this subscription is attached on, attaching it again first if it
        is not; None when `deadline` passes first; its SubscriptionClosed once it ended."""
        while True:
            if self._closed is not None:
                raise self._closed
            if self._connection is not None:
                return self._connection
            self._client._resubscribe(self, deadline)
            if self._connection is None and deadline is not None and time.monotonic() >= deadline:
                return None

    def receive_batch(self, timeout: float | None = None, max_messages: int | None = None) -> list:
        """Every message already here (at most `max_messages`), waiting like `receive`
        for the first; an empty list when `timeout` passes first. One call per delivery
        instead of one per message, for consumers that take messages in bulk."""
        first = self.receive(timeout)
        if first is None:
            return []
        queue = self._queue
        count = len(queue) if max_messages is None else min(len(queue), max_messages - 1)
        popleft = queue.popleft
        batch = [first]
        batch += [popleft() for _ in range(count)]
        return batch

    def __iter__(self):
        while True:
            try:
                message = self.receive()
            except SubscriptionClosed:
                if self._closed_here:
                    return
                raise
            yield message

    def close(self) -> None:
        """Flush acknowledgements and detach (the subscription stays, durable)."""
        if self._closed is not None:
            return
        connection, handle = self._connection, self._handle
        self._closed = SubscriptionClosed(message="closed by the application")
        self._closed_here = True
        self._queue.clear()  # closed means no more messages, even those already here
        self._client._subscriptions.discard(self)
        if connection is None or handle is None:
            return
        self._flush_ack(connection)
        connection.release(handle)
        self._connection = None
        try:
            connection.call(Op.CLOSE_SUBSCRIPTION, encode_close_subscription(handle))
        except HedwigError:
            pass  # the connection is gone, and the subscription detached with it

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("attached" if self._connection else "detached")
        return f"<{type(self).__name__} {self.topic}/{self.subscriber_id} {state}>"


class _PushedNothing:
    """receive, receive_batch and iteration refused (`_refusal()` says why)."""

    def receive(self, timeout: float | None = None):
        raise self._refusal()

    def receive_batch(self, timeout: float | None = None, max_messages: int | None = None) -> list:
        raise self._refusal()

    def __iter__(self):
        raise self._refusal()


class AckOnlySubscription(_PushedNothing, AcknowledgesOnly, Subscription):
    """A subscription attached with deliver=False: it holds the durable subscription (the
    hub keeps what it has not acknowledged) and receives nothing. `ack(seq)` sends the
    CONSUME at once, and may name any seq-id up to the topic's last; a hub that went away
    is attached to again first, and while it cannot be reached `ack` raises (CouldNotConnect,
    ConnectionLost, ...) with the acknowledgement kept: it goes out with the next `ack`.
    """

    def _refusal(self):
        return self._no_deliveries()

    def ack(self, message_or_seq) -> None:
        """Acknowledge every message up to this seq-id, now."""
        self._position.acknowledge(seq_of(message_or_seq))
        if self._connection is not None:
            # Nobody reads for a subscription that receives nothing: handle what came
            # meanwhile (a forced close, a hub that closed the connection) before sending.
            self._connection.closed_by_hub()
        if self._closed is not None:
            raise self._closed
        if self._connection is None:
            self._client._attach_again(self)
        seq = self._position.unsent_ack()
        if seq is None:
            return
        try:
            self._connection.consume(self._handle, seq)
        except HedwigError:
            self._position.not_sent(seq)
            raise


@implementer(ISharedSubscriber)
class SharedSubscription(AcknowledgesEach, Subscription):
    """A member of a shared subscription (kind="shared"): the hub gives each message to
    one member at a time, so iterate or `receive` as from any subscription, and `ack`
    each message when it is done (only that message). One not acknowledged within the
    subscription's ack_timeout, or held when this member goes away, comes again (to any
    member) with its `delivery_count`; `nack(message)` sends it back now. Messages come in
    seq-id order from this member's point of view, redeliveries whenever they come."""

    def ack(self, message_or_seq) -> None:
        """Acknowledge this message (and no other); sent with the next batch of acks."""
        to_send = self._position.ack(seq_of(message_or_seq))
        if to_send is not None:
            self._send_consume(self._connection, to_send)

    def nack(self, message_or_seq) -> None:
        """Give this message back: the hub delivers it again now (maybe to this member)."""
        connection, handle = self._connection, self._handle
        if connection is None or handle is None:
            return  # (detached: the hub took back everything this member held)
        seq = seq_of(message_or_seq)
        try:
            connection.nack(handle, [(seq, seq)])
        except HedwigError:
            pass  # the connection is gone, and the hub took back what it held with it

    def _send_consume(self, connection, ranges) -> None:
        handle = self._handle
        if connection is None or handle is None:
            self._position.not_sent(ranges)  # (sent once attached again)
            return
        try:
            connection.ack(handle, ranges)
        except HedwigError:
            self._position.not_sent(ranges)


class PullSubscription(_PushedNothing, PullsOnly, SharedSubscription):
    """A pull subscription (deliver="pull"): the hub sends nothing until `fetch` asks."""

    def __init__(self, client, position):
        super().__init__(client, position)
        self._fetch_over = False

    def _refusal(self):
        return self._not_pushed()

    def _fetch_ended(self) -> None:
        self._fetch_over = True

    def fetch(self, max_messages: int = 100, timeout: float | None = None) -> list:
        """Up to `max_messages` messages: those the hub has for this subscription now, or,
        when it has none, the first that come within `timeout` seconds (None: until some
        come); an empty list when the timeout passes first. `ack` each when done."""
        check_fetch(max_messages, FETCH_SLICE_S if timeout is None else timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            connection = self._attached(deadline)
            if connection is None:
                return []
            self._flush_ack(connection)
            wait = FETCH_SLICE_S if deadline is None else max(0.0, deadline - time.monotonic())
            self._fetch_over = False
            body = encode_fetch(self._handle, max_messages, round(wait * 1000))
            response = connection.call(Op.FETCH, body)
            if response.status is not Status.SUCCESS:
                raise error_for(response.status, response.message)
            connection.wait_for(
                lambda connection=connection: self._fetch_over or self._connection is not connection,
                time.monotonic() + wait + connection.request_timeout,
            )
            messages = list(self._queue)
            self._queue.clear()
            if messages or (deadline is not None and time.monotonic() >= deadline):
                return messages
