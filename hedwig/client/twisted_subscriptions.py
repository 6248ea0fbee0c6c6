"""The Twisted client's subscriptions: messages to a handler or a DeferredQueue, `ack`
that moves the hub's consumed seq-id, the acknowledgement-only kind (deliver=False), and
the work-queue kinds: shared (kind="shared", acknowledged message by message) and pull
(deliver="pull", messages only as `fetch` asks).

Attaching, the hub's events, acknowledgements (sent every `ack_every`, and `ack_delay`
after the first one unsent, on the reactor's clock), closing and fetching are the
subscriptions' of every client (subscription.py); here is where messages go and what
the application holds: a handler or a queue, and `closed`.
"""

from twisted.internet.defer import Deferred, DeferredList, DeferredQueue, fail
from twisted.python.failure import Failure
from zope.interface import implementer

from hedwig.client.partitioned import PartitionedSubscription as BasePartitioned
from hedwig.client.start import subscription_kind
from hedwig.client.subscription import BaseSubscription, FetchInbox
from hedwig.protocol.position import SubscriptionPosition
from hedwig.protocol.session import ISharedSubscriber


class MessageQueue(DeferredQueue):
    """A subscription's DeferredQueue that can end: once the subscription ended, readers
    waiting fail with the reason at once (SubscriptionClosed when it was closed here),
    and so does every later `get()`, when the hub ended it once the messages that came
    before are taken (a reader never waits for ever on a subscription that is gone)."""

    def __init__(self):
        super().__init__()
        self.ended = None  # the Failure the subscription ended with

    def extend(self, messages) -> None:
        """A delivery's messages (a list): to the readers waiting, one each, in order;
        the rest join the queue in one step (the queue has no size limit)."""
        waiting = self.waiting
        given = 0
        while waiting and given < len(messages):
            waiting.pop(0).callback(messages[given])
            given += 1
        self.pending.extend(messages[given:] if given else messages)

    def end(self, error, here: bool) -> None:
        if here:
            self.pending.clear()  # closed means no more messages, even those already here
        self.ended = reason = Failure(error)
        while self.waiting:
            self.waiting.pop(0).errback(reason)

    def get(self) -> Deferred:
        if self.ended is not None and not self.pending:
            return fail(self.ended)
        return super().get()


class _Handler:
    """The inbox of a subscription given a handler: each message to it, as it comes."""

    __slots__ = ("_handler",)

    def __init__(self, handler):
        self._handler = handler

    def extend(self, messages) -> None:
        handler = self._handler
        for message in messages:
            handler(message)

    def end(self, error, here: bool) -> None:
        pass


class Subscription(BaseSubscription):
    """A live subscription. Messages go to the handler, or to `queue` (a DeferredQueue:
    `await subscription.queue.get()`). `ack` is cumulative; `closed` fires when the
    subscription ends: with None when closed here, else with the reason (a
    SubscriptionClosed), as a result rather than a failure, so nobody has to listen."""

    def __init__(self, client, position: SubscriptionPosition, handler=None):
        self._queue = MessageQueue() if handler is None else None
        super().__init__(client, position, self._queue if handler is None else _Handler(handler))
        self.closed = Deferred()

    @property
    def queue(self) -> DeferredQueue | None:
        """The messages, when no handler was given (None when one was)."""
        return self._queue

    def _finish(self, error) -> None:
        if self._closed is None:
            super()._finish(error)
            self.closed.callback(None if self._closed_here else error)

    def ack(self, message_or_seq) -> None:
        """Acknowledge this message and every one before it (a shared or pull
        subscription's: this message alone; deliver=False: every message up to this
        seq-id, sent now, or as soon as the subscription is attached again)."""
        self._ack(message_or_seq)

    def close(self) -> Deferred:
        """Flush acknowledgements and detach; the subscription stays (durable)."""
        return self._client._waiting.run(self._close_steps())


def _pushed_nothing(self):
    raise self._refusal()


class AckOnlySubscription(Subscription):
    """A subscription attached with deliver=False: it holds the durable subscription (the
    hub keeps what it has not acknowledged) and receives nothing, so it has no handler
    and no queue. `ack(seq)` sends the CONSUME at once and may name any seq-id up to the
    topic's last; while the connection is being made again the acknowledgement waits and
    goes out as soon as the subscription is attached."""

    queue = property(_pushed_nothing)


@implementer(ISharedSubscriber)
class SharedSubscription(Subscription):
    """A member of a shared subscription (kind="shared"): messages to the handler or the
    queue as any subscription's; `ack` each one when it is done (only that one: acks go
    out in batches of ranges, and `ack_delay` after the last); one not acknowledged within
    the subscription's ack_timeout, or held when this member goes away, comes again (to
    any member) with its `delivery_count`; `nack(message)` sends it back now."""

    def nack(self, message_or_seq) -> None:
        """Give this message back: the hub delivers it again now (maybe to this member)."""
        self._nack(message_or_seq)


@implementer(ISharedSubscriber)
class PullSubscription(Subscription):
    """A pull subscription (deliver="pull"): nothing is pushed; `fetch` asks for messages
    and fires with a list of them. No handler, no queue."""

    queue = property(_pushed_nothing)
    nack = SharedSubscription.nack  # (acknowledged and given back as a shared member is)

    def __init__(self, client, position):
        super().__init__(client, position)
        self._queue = None
        self._inbox = FetchInbox(client._waiting)

    def fetch(self, max_messages: int = 100, timeout: float = 30.0) -> Deferred:
        """Fires with up to `max_messages` messages: those the hub has for this
        subscription now, or, when it has none, the first that come within `timeout`
        seconds; an empty list when the timeout passes first. `ack` each when done."""
        return self._client._waiting.run(self._fetch_steps(max_messages, timeout))


class PartitionedSubscription(BasePartitioned):
    """A subscription of every partition of a partitioned topic (hedwig.client.partitioned):
    every partition's messages to the one handler, or to `queue`; `ack(message)` on its
    partition's (and `nack`, when shared); `closed` fires once every partition's has ended
    (with the first reason the hub gave, else None)."""

    def __init__(self, client, topic, partitions):
        super().__init__(client, topic, partitions)
        self._queue = partitions[0]._queue
        self.closed = DeferredList([partition.closed for partition in partitions])
        self.closed.addCallback(lambda ended: next((why for _, why in ended if why is not None), None))

    queue = Subscription.queue


_CLASSES = {
    "exclusive": Subscription,
    "shared": SharedSubscription,
    "ack_only": AckOnlySubscription,
    "pull": PullSubscription,
}


def made(client, position, handler=None):
    """The subscription of the kind `position` asks for; a handler only for those that
    are pushed messages (ValueError for the others)."""
    kind = subscription_kind(position)
    if kind in ("exclusive", "shared"):
        return _CLASSES[kind](client, position, handler)
    if handler is not None:
        deliver = "pull" if kind == "pull" else False
        raise ValueError(f"a subscription with deliver={deliver!r} is pushed nothing: give no handler")
    return _CLASSES[kind](client, position)
