"""The asyncio client's subscriptions: `async for message in subscription`, acks that move
the hub's consumed seq-id, the acknowledgement-only kind (deliver=False), and the
work-queue kinds: shared (kind="shared", acknowledged message by message) and pull
(deliver="pull", messages only as `fetch` asks).

The connection's protocol session hands each subscription the frames of its handle
(it is an ISubscriber); its SubscriptionPosition (hedwig.protocol.position) decides
what to ask for when it subscribes again after a lost connection and when a CONSUME is
due, as in the other two clients. Messages wait in a deque; the window the hub keeps
(`window` unacknowledged messages at most) bounds it.
"""

import asyncio
from collections import deque

from zope.interface import implementer

from hedwig.client.subscription_base import (
    AcknowledgesEach,
    AcknowledgesOnly,
    AcksOnProtocol,
    AttachedOnProtocol,
    FlushesAckOnAttach,
    PositionedSubscription,
    PullsOnly,
)
from hedwig.protocol import Op, Status
from hedwig.protocol.errors import ConnectionLost, FetchInProgress, HedwigError, SubscriptionClosed, error_for
from hedwig.protocol.position import SubscriptionPosition, seq_of
from hedwig.protocol.requests import encode_close_subscription
from hedwig.protocol.session import ISharedSubscriber, ISubscriber
from hedwig.protocol.work_requests import check_fetch, encode_fetch


@implementer(ISubscriber)
class Subscription(AttachedOnProtocol, PositionedSubscription):
    """A live subscription. `async for message in subscription`, or `await receive()`;
    `ack` is cumulative. Iteration ends when the subscription is closed here; it raises
    SubscriptionClosed when the hub ended it (attached elsewhere, deleted)."""

    def __init__(self, client, position: SubscriptionPosition):
        self._client = client
        self._position = position
        self._messages = deque()
        self._waiter = None  # the Future a receive() waits on while nothing is here
        self._protocol = None
        self._handle = None
        self._ack_call = None
        self._closed = None  # the SubscriptionClosed once ended

    @property
    def closed(self) -> bool:
        return self._closed is not None

    # -- ISubscriber: called by the connection's protocol session ---------------------------

    def on_delivery(self, start, stop, entry) -> None:
        self._messages.extend(self._position.messages(start, stop, entry))
        self._wake()

    def _hand_over(self, messages) -> None:
        self._messages.extend(messages)
        self._wake()

    def _has_ended(self) -> bool:
        return self._closed is not None

    def _ended(self, error) -> None:
        self._let_go()
        self._finish(error)

    def _finish(self, error) -> None:
        if self._closed is not None:
            return
        self._closed = error
        if self._ack_call is not None:
            self._ack_call.cancel()
            self._ack_call = None
        self._client._subscriptions.discard(self)
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- the application's side --------------------------------------------------------------

    async def receive(self, timeout: float | None = None):
        """The next message; None when `timeout` seconds pass first (None: wait)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not self._messages:
            if self._closed is not None:
                raise self._closed
            self._before_waiting()
            self._waiter = loop.create_future()
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                self._flush_ack()  # (giving up: nothing stays held past the receive)
                return None
            try:
                await asyncio.wait_for(asyncio.shield(self._waiter), remaining)
            except TimeoutError:
                if not self._messages:
                    self._flush_ack()
                    return None
        return self._messages.popleft()

    def _before_waiting(self) -> None:
        """About to wait with an acknowledgement unsent: it is left to the call `ack`
        armed, `ack_delay` after it, so that a subscriber keeping up with a stream sends
        one CONSUME per `ack_every` seq-ids, not one per delivery. The hub never waits on
        it: `ack` sends every `ack_every`-th at once, and that is at most half the window."""
        if self._ack_call is None:
            self._flush_ack()  # (none armed: one made while detached, say)

    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            return await self.receive()
        except SubscriptionClosed:
            if self._closed is not None and self._closed.message == _CLOSED_HERE:
                raise StopAsyncIteration from None
            raise

    async def ack(self, message_or_seq) -> None:
        """Acknowledge this message and every one before it (sent in batches, and before
        the subscription waits)."""
        to_send = self._position.ack(seq_of(message_or_seq))
        if to_send is not None:
            self._send_consume(to_send)
        elif self._position.acked > self._position.sent_ack and self._ack_call is None:
            self._ack_call = asyncio.get_running_loop().call_later(self._client.ack_delay, self._flush_ack)

    async def close(self) -> None:
        """Flush acknowledgements and detach; the subscription stays (durable)."""
        if self._closed is not None:
            return
        protocol, handle = self._protocol, self._handle
        if protocol is not None:
            self._flush_ack()
        self._finish(SubscriptionClosed(message=_CLOSED_HERE))
        self._messages.clear()
        if protocol is None:
            return
        protocol.release(handle)
        self._protocol = None
        try:
            await protocol.call(Op.CLOSE_SUBSCRIPTION, encode_close_subscription(handle))
        except HedwigError:
            pass  # a lost connection detached it anyway

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc_info):
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("attached" if self._protocol else "detached")
        return f"<{type(self).__name__} {self.topic}/{self.subscriber_id} {state}>"


_CLOSED_HERE = "closed by the application"


class AckOnlySubscription(FlushesAckOnAttach, AcknowledgesOnly, Subscription):
    """A subscription attached with deliver=False: it holds the durable subscription (the
    hub keeps what it has not acknowledged) and receives nothing. `ack(seq)` sends the
    CONSUME at once; while the connection is being made again it waits and goes out as
    soon as the subscription is attached."""

    async def receive(self, timeout: float | None = None):
        raise self._no_deliveries()

    def __aiter__(self):
        raise self._no_deliveries()

    async def ack(self, message_or_seq) -> None:
        """Acknowledge every message up to this seq-id, now."""
        self._position.acknowledge(seq_of(message_or_seq))
        self._flush_ack()


@implementer(ISharedSubscriber)
class SharedSubscription(AcksOnProtocol, FlushesAckOnAttach, AcknowledgesEach, Subscription):
    """A member of a shared subscription (kind="shared"): `async for` its messages as any
    subscription's and `await ack(message)` each one when it is done (only that one:
    acks go out in batches of ranges, and `ack_delay` after the last); one not
    acknowledged within the subscription's ack_timeout, or held when this member goes
    away, comes again (to any member) with its `delivery_count`; `nack` sends it back now."""

    async def ack(self, message_or_seq) -> None:
        """Acknowledge this message, and no other."""
        to_send = self._position.ack(seq_of(message_or_seq))
        if to_send is not None:
            self._send_consume(to_send)
        elif self._position.ack_due and self._ack_call is None:
            self._ack_call = asyncio.get_running_loop().call_later(self._client.ack_delay, self._flush_ack)

    async def nack(self, message_or_seq) -> None:
        """Give this message back: the hub delivers it again now (maybe to this member)."""
        self._nack_now(message_or_seq)

    def _before_waiting(self) -> None:
        self._flush_ack()  # (a member's acks are its own: each goes out before it waits)


class PullSubscription(PullsOnly, SharedSubscription):
    """A pull subscription (deliver="pull"): nothing is pushed; `await fetch(...)` asks."""

    def __init__(self, client, position):
        super().__init__(client, position)
        self._fetch_over = None  # the Future a fetch in progress waits on

    async def receive(self, timeout: float | None = None):
        raise self._not_pushed()

    def __aiter__(self):
        raise self._not_pushed()

    def _fetch_ended(self) -> None:
        if self._fetch_over is not None and not self._fetch_over.done():
            self._fetch_over.set_result(None)

    def on_detached(self, topic_moved: bool = False) -> None:
        self._fetch_ended()
        super().on_detached(topic_moved)

    async def fetch(self, max_messages: int = 100, timeout: float = 30.0) -> list:
        """Up to `max_messages` messages: those the hub has for this subscription now, or,
        when it has none, the first that come within `timeout` seconds; an empty list
        when the timeout passes first. `ack` each when done."""
        check_fetch(max_messages, timeout)
        if self._closed is not None:
            raise self._closed
        if self._fetch_over is not None:
            raise FetchInProgress(message="a fetch of this subscription is in progress")
        if self._protocol is None:
            raise ConnectionLost(message="the subscription is attaching again; fetch once it is")
        self._flush_ack()
        self._fetch_over = over = asyncio.get_running_loop().create_future()
        try:
            body = encode_fetch(self._handle, max_messages, round(timeout * 1000))
            response = await self._protocol.call(Op.FETCH, body)
            if response.status is not Status.SUCCESS:
                raise error_for(response.status, response.message)
            try:
                await asyncio.wait_for(asyncio.shield(over), timeout + self._client.timeout)
            except TimeoutError:
                pass  # (the hub never ended it: what came is the answer)
        except ConnectionLost:
            pass  # what came before the connection went
        finally:
            self._fetch_over = None
        messages = list(self._messages)
        self._messages.clear()
        return messages
