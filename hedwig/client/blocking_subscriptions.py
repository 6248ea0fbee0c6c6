"""The blocking client's subscriptions: iterate one, or `receive(timeout)`; `ack` what you
processed. Every method may be called from any thread; the calling thread reads the
connection while it waits (hedwig.client.connection).

`Subscription` is exclusive and acknowledged cumulatively; `AckOnlySubscription`
(deliver=False) receives nothing; `SharedSubscription` (kind="shared") is one member of
a work queue, acknowledged message by message; `PullSubscription` (deliver="pull")
receives only what `fetch` asks for. What they share with the other clients'
subscriptions (attaching, events, acknowledgements, closing) is subscription.py's;
here is how a thread waits for messages, and acknowledgements without a timer:

Acknowledgements go to the hub in one CONSUME per `ack_every` seq-ids, and when the
subscription would wait: then, unless the oldest unsent one is already `ack_delay`
old, it waits up to `ack_delay` for a message first (one read with that constant
timeout: BlockingConnection.read_briefly) and sends them only if none came. A subscriber
keeping up with a stream so sends one CONSUME per `ack_every` messages, not one per
delivery (each of which would cost it a send, and the hub a wake-up and a read, beside
the publishes the stream is made of), and an idle one's pointer is current `ack_delay`
after its last ack. The window never waits on this: `ack_every` is at most half of it
(hedwig.protocol.position).
"""

import time
from collections import deque
from itertools import repeat, starmap

from zope.interface import implementer

from hedwig.client.connection import wait_for_any
from hedwig.client.partitioned import PartitionedSubscription as BasePartitioned
from hedwig.client.subscription import BaseSubscription
from hedwig.protocol import Op, Status
from hedwig.protocol.errors import HedwigError, SubscriptionClosed, error_for
from hedwig.protocol.position import SubscriptionPosition, seq_of
from hedwig.protocol.session import ISharedSubscriber
from hedwig.protocol.work_requests import check_fetch, encode_fetch

# A fetch without a timeout asks the hub for this long at a time, until something comes.
FETCH_SLICE_S = 30.0


class _Inbox(deque):
    """A blocking subscription's messages, handed over by the thread that reads."""

    __slots__ = ("fetch_over",)

    def __init__(self):
        super().__init__()
        self.fetch_over = False  # a pull subscription's fetch is over

    def end(self, error, here: bool) -> None:
        if here:
            self.clear()  # closed means no more messages, even those already here

    def fetch_done(self) -> None:
        self.fetch_over = True


class Subscription(BaseSubscription):
    """A live subscription: iterate it, or `receive(timeout)`; `ack` what you processed.

    Messages come in seq-id order with no gap, across reconnects. Iteration ends when the
    subscription is closed; `receive` then raises SubscriptionClosed. Acknowledgements
    are batched (see the module's docstring).
    """

    def __init__(self, client, position: SubscriptionPosition):
        super().__init__(client, position, _Inbox())
        self._ack_since = None  # time.monotonic() of the oldest acknowledgement not sent
        self._ack_delay = client.config.ack_delay if client is not None else 0.0

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def receive(self, timeout: float | None = None):
        """The next message, or None when `timeout` seconds pass first (None: wait)."""
        queue = self._inbox
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
            self._ack_since = None
            self._flush_ack()
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
        queue = self._inbox
        count = len(queue) if max_messages is None else min(len(queue), max_messages - 1)
        batch = [first]
        # Each popleft is atomic (another thread's read may be extending the inbox), and
        # starmap makes the calls in C: the batch is taken in one step, not one per message.
        batch += starmap(queue.popleft, repeat((), count))
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

    def ack(self, message_or_seq) -> None:
        """Acknowledge this message and every one before it (cumulative): sent with the
        `ack_every`-th, or when the subscription waits (see the module's docstring)."""
        position = self._position
        to_send = position.ack(seq_of(message_or_seq))
        if to_send is not None:
            self._ack_since = None
            self._send_ack(to_send)
        elif self._ack_since is None and position.acked > position.sent_ack:
            self._ack_since = time.monotonic()

    def _ack_waits(self, connection, ready, deadline) -> bool:
        """Before waiting with an acknowledgement unsent: wait up to the client's
        ack_delay for a message instead of sending it, unless it is that old already.
        True when something came (the acknowledgement stays due)."""
        delay = self._ack_delay
        now = time.monotonic()
        if now - self._ack_since >= delay:
            return False
        if deadline is not None and deadline - now < delay:
            delay = max(deadline - now, 0.0)
        return connection.read_briefly(ready, delay)

    def close(self) -> None:
        """Flush acknowledgements and detach (the subscription stays, durable)."""
        self._client._waiting.run(self._close_steps())

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def _pushed_nothing(self, *args, **kwargs):
    """receive, receive_batch and iteration of a subscription the hub pushes nothing to."""
    raise self._refusal()


class AckOnlySubscription(Subscription):
    """A subscription attached with deliver=False: it holds the durable subscription (the
    hub keeps what it has not acknowledged) and receives nothing. `ack(seq)` sends the
    CONSUME at once, and may name any seq-id up to the topic's last; a hub that went away
    is attached to again first, and while it cannot be reached `ack` raises (CouldNotConnect,
    ConnectionLost, ...) with the acknowledgement kept: it goes out with the next `ack`.
    """

    receive = receive_batch = __iter__ = _pushed_nothing

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
            self._client._waiting.run(self._client._attach_again(self))
        seq = self._position.unsent_ack()
        if seq is None:
            return
        try:
            self._connection.consume(self._handle, seq)
        except HedwigError:
            self._position.not_sent(seq)
            raise


@implementer(ISharedSubscriber)
class SharedSubscription(Subscription):
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
            self._send_ack(to_send)

    def nack(self, message_or_seq) -> None:
        """Give this message back: the hub delivers it again now (maybe to this member)."""
        self._nack(message_or_seq)


@implementer(ISharedSubscriber)
class PullSubscription(Subscription):
    """A pull subscription (deliver="pull"): the hub sends nothing until `fetch` asks."""

    receive = receive_batch = __iter__ = _pushed_nothing
    ack = SharedSubscription.ack  # (acknowledged and given back as a shared member is)
    nack = SharedSubscription.nack

    def fetch(self, max_messages: int = 100, timeout: float | None = None) -> list:
        """Up to `max_messages` messages: those the hub has for this subscription now, or,
        when it has none, the first that come within `timeout` seconds (None: until some
        come); an empty list when the timeout passes first. `ack` each when done."""
        check_fetch(max_messages, FETCH_SLICE_S if timeout is None else timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        inbox = self._inbox
        while True:
            connection = self._attached(deadline)
            if connection is None:
                return []
            self._flush_ack()
            wait = FETCH_SLICE_S if deadline is None else max(0.0, deadline - time.monotonic())
            inbox.fetch_over = False
            body = encode_fetch(self._handle, max_messages, round(wait * 1000))
            response = connection.call(Op.FETCH, body)
            if response.status is not Status.SUCCESS:
                raise error_for(response.status, response.message)
            connection.wait_for(
                lambda connection=connection: inbox.fetch_over or self._connection is not connection,
                time.monotonic() + wait + connection.request_timeout,
            )
            messages = list(inbox)
            inbox.clear()
            if messages or (deadline is not None and time.monotonic() >= deadline):
                return messages


class PartitionedSubscription(BasePartitioned):
    """A subscription of every partition of a partitioned topic (hedwig.client.partitioned),
    read as one: iterate it, or `receive(timeout)`; `ack(message)` on its partition's
    (and `nack`, when shared). The waiting thread reads every partition's connection."""

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def receive(self, timeout: float | None = None):
        """The next message of any partition, or None when `timeout` seconds pass first."""
        queue = self._inbox
        if queue:
            return queue.popleft()
        deadline = None if timeout is None else time.monotonic() + timeout
        partitions = self.partitions
        arrived = lambda: queue or any(p._connection is None for p in partitions)  # noqa: E731
        while True:
            connections = self._attached(deadline)
            if connections is None:
                return None
            due = [p._ack_since for p in partitions if getattr(p, "_ack_since", None) is not None]
            if due:
                # (as Subscription.receive: a message coming within ack_delay of the oldest
                # acknowledgement unsent takes it along later)
                until = min(due) + partitions[0]._ack_delay
                if deadline is not None:
                    until = min(until, deadline)
                if time.monotonic() < until and wait_for_any(connections, arrived, until) and queue:
                    return queue.popleft()
                for partition in partitions:
                    partition._ack_since = None
            self._flush_ack()
            ready = wait_for_any(connections, arrived, deadline)
            if queue:
                return queue.popleft()
            if not ready and (deadline is not None and time.monotonic() >= deadline):
                return None

    def _attached(self, deadline):
        """The connections every partition's subscription is attached on (attaching those
        that are not); None when `deadline` passes first; what ended one, once one ended."""
        connections = []
        for partition in self.partitions:
            if self._closed is not None:
                raise self._closed
            connection = partition._attached(deadline)
            if connection is None:
                return None
            if connection not in connections:
                connections.append(connection)
        return connections

    receive_batch = Subscription.receive_batch
    __iter__ = Subscription.__iter__
    __enter__ = Subscription.__enter__
    __exit__ = Subscription.__exit__
