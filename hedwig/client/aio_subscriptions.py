"""The asyncio client's subscriptions: `async for message in subscription`, acks that move
the hub's consumed seq-id, and the acknowledgement-only kind (deliver=False).

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
    AcknowledgesOnly,
    AttachedOnProtocol,
    FlushesAckOnAttach,
    PositionedSubscription,
)
from hedwig.protocol import Op
from hedwig.protocol.errors import HedwigError, SubscriptionClosed
from hedwig.protocol.position import SubscriptionPosition, seq_of
from hedwig.protocol.requests import encode_close_subscription
from hedwig.protocol.session import ISubscriber


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
            self._flush_ack()  # about to wait: the hub may wait on our window
            self._waiter = loop.create_future()
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return None
            try:
                await asyncio.wait_for(asyncio.shield(self._waiter), remaining)
            except TimeoutError:
                if not self._messages:
                    return None
        return self._messages.popleft()

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
