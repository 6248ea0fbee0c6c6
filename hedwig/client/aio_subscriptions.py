"""The asyncio client's subscriptions, read with `async for message in subscription` or
`await subscription.receive(timeout)`, each message acknowledged with `await ack`.
Exclusive, acknowledgement-only (deliver=False), shared (kind="shared") and pull
(deliver="pull") subscriptions, as in the other clients: what they do with the hub
(attaching, events, acknowledgements on the loop's clock, closing, fetching) is
subscription.py's, for all three. Here is how a coroutine waits: messages wait in a
deque, which the window the hub keeps (`window` unacknowledged messages at most)
bounds, and a receive() waits on a Future the next delivery settles.
"""

import asyncio
from collections import deque

from zope.interface import implementer

from hedwig.client.partitioned import PartitionedSubscription as BasePartitioned
from hedwig.client.subscription import BaseSubscription, FetchInbox
from hedwig.protocol.errors import SubscriptionClosed
from hedwig.protocol.position import SubscriptionPosition
from hedwig.protocol.session import ISharedSubscriber


class _Inbox(deque):
    """A subscription's messages, and the Future a receive() waits on while none is here."""

    __slots__ = ("waiter",)

    def __init__(self):
        super().__init__()
        self.waiter = None

    def extend(self, messages) -> None:
        deque.extend(self, messages)
        waiter, self.waiter = self.waiter, None  # (wake(), without the call: once per delivery)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def wake(self) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def end(self, error, here: bool) -> None:
        if here:
            self.clear()  # closed means no more messages, even those already here
        self.wake()


class Subscription(BaseSubscription):
    """A live subscription. `async for message in subscription`, or `await receive()`;
    `ack` is cumulative. Iteration ends when the subscription is closed here; it raises
    SubscriptionClosed when the hub ended it (attached elsewhere, deleted)."""

    def __init__(self, client, position: SubscriptionPosition):
        super().__init__(client, position, _Inbox())

    @property
    def closed(self) -> bool:
        return self._closed is not None

    async def receive(self, timeout: float | None = None):
        """The next message; None when `timeout` seconds pass first (None: wait)."""
        messages = self._inbox
        if messages:
            return messages.popleft()
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not messages:
            if self._closed is not None:
                raise self._closed
            self._before_waiting()
            messages.waiter = loop.create_future()
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                self._flush_ack()  # (giving up: nothing stays held past the receive)
                return None
            try:
                await asyncio.wait_for(asyncio.shield(messages.waiter), remaining)
            except TimeoutError:
                if not messages:
                    self._flush_ack()
                    return None
        return messages.popleft()

    def _before_waiting(self) -> None:
        """About to wait with an acknowledgement unsent: an exclusive subscription leaves
        it to the call `ack` armed, `ack_delay` after it, so that a subscriber keeping up
        with a stream sends one CONSUME per `ack_every` seq-ids, not one per delivery (the
        hub never waits on it: `ack` sends every `ack_every`-th at once, and that is at
        most half the window); a shared member's acks are its own: each goes out now."""
        if self._shared or self._ack_call is None:
            self._flush_ack()

    def __aiter__(self):
        return self

    async def __anext__(self):
        messages = self._inbox
        if messages:  # (receive's first step, without its call: once per message)
            return messages.popleft()
        try:
            return await self.receive()
        except SubscriptionClosed:
            if self._closed_here:
                raise StopAsyncIteration from None
            raise

    async def ack(self, message_or_seq) -> None:
        """Acknowledge this message and every one before it (a shared or pull
        subscription's: this message alone; deliver=False: every message up to this
        seq-id, sent now, or as soon as the subscription is attached again)."""
        self._ack(message_or_seq)

    async def close(self) -> None:
        """Flush acknowledgements and detach; the subscription stays (durable)."""
        await self._client._waiting.run(self._close_steps())

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc_info):
        await self.close()


async def _pushed_nothing(self, timeout: float | None = None):
    raise self._refusal()


def _iterates_nothing(self):
    raise self._refusal()


class AckOnlySubscription(Subscription):
    """A subscription attached with deliver=False: it holds the durable subscription (the
    hub keeps what it has not acknowledged) and receives nothing. `ack(seq)` sends the
    CONSUME at once; while the connection is being made again it waits and goes out as
    soon as the subscription is attached."""

    receive = _pushed_nothing
    __aiter__ = _iterates_nothing


@implementer(ISharedSubscriber)
class SharedSubscription(Subscription):
    """A member of a shared subscription (kind="shared"): `async for` its messages as any
    subscription's and `await ack(message)` each one when it is done (only that one:
    acks go out in batches of ranges, and `ack_delay` after the last); one not
    acknowledged within the subscription's ack_timeout, or held when this member goes
    away, comes again (to any member) with its `delivery_count`; `nack` sends it back now."""

    async def nack(self, message_or_seq) -> None:
        """Give this message back: the hub delivers it again now (maybe to this member)."""
        self._nack(message_or_seq)


@implementer(ISharedSubscriber)
class PullSubscription(Subscription):
    """A pull subscription (deliver="pull"): nothing is pushed; `await fetch(...)` asks."""

    receive = _pushed_nothing
    __aiter__ = _iterates_nothing
    nack = SharedSubscription.nack  # (acknowledged and given back as a shared member is)

    def __init__(self, client, position):
        super().__init__(client, position)
        self._inbox = FetchInbox(client._waiting)

    async def fetch(self, max_messages: int = 100, timeout: float = 30.0) -> list:
        """Up to `max_messages` messages: those the hub has for this subscription now, or,
        when it has none, the first that come within `timeout` seconds; an empty list
        when the timeout passes first. `ack` each when done."""
        return await self._client._waiting.run(self._fetch_steps(max_messages, timeout))


class PartitionedSubscription(BasePartitioned):
    """A subscription of every partition of a partitioned topic (hedwig.client.partitioned),
    read as one: `async for`, or `await receive(timeout)`; `await ack(message)` on its
    partition's (and `nack`, when shared)."""

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def _before_waiting(self) -> None:
        for partition in self.partitions:
            partition._before_waiting()

    async def ack(self, message_or_seq) -> None:
        await self.partition_of(message_or_seq).ack(message_or_seq)

    async def nack(self, message_or_seq) -> None:
        await BasePartitioned.nack(self, message_or_seq)

    async def close(self) -> None:
        await BasePartitioned.close(self)

    receive = Subscription.receive
    __aiter__ = Subscription.__aiter__
    __anext__ = Subscription.__anext__
    __aenter__ = Subscription.__aenter__
    __aexit__ = Subscription.__aexit__
