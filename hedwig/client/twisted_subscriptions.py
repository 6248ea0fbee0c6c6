"""The Twisted client's subscriptions: messages to a handler or a DeferredQueue, acks that
move the hub's consumed seq-id, the acknowledgement-only kind (deliver=False), and the
work-queue kinds: shared (kind="shared", acknowledged message by message) and pull
(deliver="pull", messages only as `fetch` asks).

The client (twisted.py) makes them and routes each delivery to its subscription by the
channel-local handle; a subscription keeps its position so a reconnect resumes it from
its last acknowledgement (hedwig.protocol.position).
"""

from twisted.internet.defer import Deferred, DeferredQueue, fail, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure
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
from hedwig.protocol.errors import ConnectionLost, FetchInProgress, SubscriptionClosed, error_for
from hedwig.protocol.position import SubscriptionPosition, seq_of
from hedwig.protocol.requests import encode_close_subscription
from hedwig.protocol.session import ISharedSubscriber, ISubscriber
from hedwig.protocol.work_requests import check_fetch, encode_fetch

log = Logger()


class MessageQueue(DeferredQueue):
    """A subscription's DeferredQueue that can end: once the hub ended the subscription,
    readers waiting fail with the reason at once, and so does every later `get()` when
    the messages that came before are taken (a reader never waits for ever on a
    subscription that is gone)."""

    def __init__(self):
        super().__init__()
        self.ended = None  # the Failure the subscription ended with

    def end(self, reason: Failure) -> None:
        self.ended = reason
        while self.waiting:
            self.waiting.pop(0).errback(reason)

    def get(self) -> Deferred:
        if self.ended is not None and not self.pending:
            return fail(self.ended)
        return super().get()


@implementer(ISubscriber)
class Subscription(AttachedOnProtocol, PositionedSubscription):
    """A live subscription. Messages go to the handler, or to `queue` (a DeferredQueue:
    `await subscription.queue.get()`). `ack` is cumulative; `closed` fires when the
    subscription ends: with None when closed here, else with the reason (a
    SubscriptionClosed), as a result rather than a failure, so nobody has to listen."""

    def __init__(self, client, position: SubscriptionPosition, handler=None):
        self._client = client
        self._position = position
        self._handler = handler
        self._queue = None if handler is not None else MessageQueue()
        self._protocol = None
        self._handle = None
        self._ack_call = None
        self.closed = Deferred()
        self._done = False

    @property
    def queue(self) -> DeferredQueue | None:
        """The messages, when no handler was given (None when one was)."""
        return self._queue

    # -- ISubscriber: called by the connection's protocol session -------------------------------

    def on_delivery(self, start, stop, entry) -> None:
        self._hand_over(self._position.messages(start, stop, entry))

    def _hand_over(self, messages) -> None:
        if self._handler is not None:
            handler = self._handler
            for message in messages:
                handler(message)
        else:
            put = self._queue.put
            for message in messages:
                put(message)

    def _has_ended(self) -> bool:
        return self._done

    def _ended(self, error) -> None:
        self._let_go()
        self._finish(Failure(error))

    def _finish(self, result) -> None:
        if self._done:
            return
        self._done = True
        if self._ack_call is not None and self._ack_call.active():
            self._ack_call.cancel()
        self._client._subscriptions.discard(self)
        self.closed.callback(None if result is None else result.value)
        if self._queue is not None and isinstance(result, Failure):
            self._queue.end(result)

    # -- the application's side --------------------------------------------------------------

    def ack(self, message_or_seq) -> None:
        """Acknowledge this message and every one before it."""
        to_send = self._position.ack(seq_of(message_or_seq))
        if to_send is not None:
            self._send_consume(to_send)
        elif self._position.acked > self._position.sent_ack and self._ack_call is None:
            self._ack_call = self._client._clock.callLater(self._client.ack_delay, self._flush_ack)

    def close(self) -> Deferred:
        """Flush acknowledgements and detach; the subscription stays (durable)."""
        if self._done:
            return succeed(None)
        protocol, handle = self._protocol, self._handle
        if self._ack_call is not None and self._ack_call.active():
            self._ack_call.cancel()
        self._ack_call = None
        self._finish(None)
        if protocol is None:
            return succeed(None)
        to_send = self._position.unsent_ack()
        if to_send is not None:
            self._send_consume(to_send)
        protocol.release(handle)
        self._protocol = None
        d = protocol.call(Op.CLOSE_SUBSCRIPTION, encode_close_subscription(handle))
        d.addErrback(lambda _failure: None)  # a lost connection detached it anyway
        return d.addCallback(lambda _response: None)

    def __repr__(self) -> str:
        state = "closed" if self._done else ("attached" if self._protocol else "detached")
        return f"<{type(self).__name__} {self.topic}/{self.subscriber_id} {state}>"


class AckOnlySubscription(FlushesAckOnAttach, AcknowledgesOnly, Subscription):
    """A subscription attached with deliver=False: it holds the durable subscription (the
    hub keeps what it has not acknowledged) and receives nothing, so it has no handler
    and no queue. `ack(seq)` sends the CONSUME at once and may name any seq-id up to the
    topic's last; while the connection is being made again the acknowledgement waits and
    goes out as soon as the subscription is attached."""

    def __init__(self, client, position: SubscriptionPosition):
        super().__init__(client, position)
        self._queue = None

    @property
    def queue(self):
        raise self._no_deliveries()

    def ack(self, message_or_seq) -> None:
        """Acknowledge every message up to this seq-id, now."""
        self._position.acknowledge(seq_of(message_or_seq))
        self._flush_ack()


@implementer(ISharedSubscriber)
class SharedSubscription(AcksOnProtocol, FlushesAckOnAttach, AcknowledgesEach, Subscription):
    """A member of a shared subscription (kind="shared"): messages to the handler or the
    queue as any subscription's; `ack` each one when it is done (only that one: acks go
    out in batches of ranges, and `ack_delay` after the last); one not acknowledged within
    the subscription's ack_timeout, or held when this member goes away, comes again (to
    any member) with its `delivery_count`; `nack(message)` sends it back now."""

    def ack(self, message_or_seq) -> None:
        """Acknowledge this message, and no other."""
        to_send = self._position.ack(seq_of(message_or_seq))
        if to_send is not None:
            self._send_consume(to_send)
        elif self._position.ack_due and self._ack_call is None:
            self._ack_call = self._client._clock.callLater(self._client.ack_delay, self._flush_ack)

    def nack(self, message_or_seq) -> None:
        """Give this message back: the hub delivers it again now (maybe to this member)."""
        self._nack_now(message_or_seq)


class PullSubscription(PullsOnly, SharedSubscription):
    """A pull subscription (deliver="pull"): nothing is pushed; `fetch` asks for messages
    and fires with a list of them. No handler, no queue."""

    def __init__(self, client, position):
        super().__init__(client, position)
        self._queue = None
        self._fetching = None  # (the Deferred of the fetch in progress, its messages, its guard)

    @property
    def queue(self):
        raise self._not_pushed()

    def fetch(self, max_messages: int = 100, timeout: float = 30.0) -> Deferred:
        """Fires with up to `max_messages` messages: those the hub has for this
        subscription now, or, when it has none, the first that come within `timeout`
        seconds; an empty list when the timeout passes first. `ack` each when done."""
        try:
            check_fetch(max_messages, timeout)
        except ValueError as e:
            return fail(e)
        if self._done:
            return fail(SubscriptionClosed(message="the subscription is closed"))
        if self._fetching is not None:
            return fail(FetchInProgress(message="a fetch of this subscription is in progress"))
        if self._protocol is None:
            return fail(ConnectionLost(message="the subscription is attaching again; fetch once it is"))
        self._flush_ack()
        fetched = Deferred()
        guard = self._client._clock.callLater(timeout + self._client.timeout, self._end_fetch)
        self._fetching = (fetched, [], guard)
        body = encode_fetch(self._handle, max_messages, round(timeout * 1000))
        self._protocol.call(Op.FETCH, body).addCallbacks(self._fetch_answered, lambda _f: self._end_fetch())
        return fetched

    def _fetch_answered(self, response) -> None:
        if response.status is not Status.SUCCESS and self._fetching is not None:
            fetched, _messages, guard = self._fetching
            self._fetching = None
            guard.cancel()
            fetched.errback(Failure(error_for(response.status, response.message)))

    def _hand_over(self, messages) -> None:
        if self._fetching is not None:
            self._fetching[1].extend(messages)

    def _fetch_ended(self) -> None:
        self._end_fetch()

    def _end_fetch(self) -> None:
        """The fetch is over (FETCH_DONE, its guard, a lost connection): what came."""
        fetching, self._fetching = self._fetching, None
        if fetching is not None:
            fetched, messages, guard = fetching
            if guard.active():
                guard.cancel()
            fetched.callback(messages)

    def on_detached(self, topic_moved: bool = False) -> None:
        self._end_fetch()
        super().on_detached(topic_moved)
