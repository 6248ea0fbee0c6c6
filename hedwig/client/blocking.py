"""The blocking client, for scripts: `with Client("127.0.0.1:4080") as c: c.publish(...)`.

One socket per hub (connection.py) carries every publish and subscription of the
client, read by whichever calling thread waits: no background thread, no thread switch
between a reply and its caller.

Requests are sent again to the owner a hub names in NOT_RESPONSIBLE_FOR_TOPIC (at most
`max_redirects` times, never to a hub already asked). A lost connection is opened again
on next use; a subscription on it resumes from its last acknowledged seq-id (see
resume.py). A publish in flight when a connection drops raises ConnectionLost: it may
have been stored, and sending it again could store it twice.
"""

import threading
import time
from collections import deque

from hedwig.client.addresses import parse_addresses
from hedwig.client.connection import BlockingConnection
from hedwig.client.defaults import (
    DEFAULT_ACK_EVERY,
    DEFAULT_HUB,
    DEFAULT_MAX_REDIRECTS,
    DEFAULT_READ_BYTES,
    DEFAULT_TIMEOUT,
    DEFAULT_WINDOW,
)
from hedwig.client.errors import (
    ClientClosed,
    ClientNotSubscribed,
    ConnectionLost,
    CouldNotConnect,
    HedwigError,
    MessageTooLarge,
    RequestTimeout,
    ServiceDown,
    SubscriptionClosed,
    TopicBusy,
    error_for,
)
from hedwig.client.redirects import next_owner
from hedwig.client.resume import SubscriptionPosition
from hedwig.client.start import wire_start
from hedwig.protocol import Message, Op, Status, decode_entry, encode_message_set
from hedwig.protocol.requests import (
    encode_close_subscription,
    encode_consume,
    encode_describe_topic,
    encode_read_range,
    encode_subscribe,
    encode_unsubscribe,
)

_BACKOFF_FIRST = 0.05
_BACKOFF_MAX = 2.0


class Subscription:
    """A live subscription: iterate it, or `receive(timeout)`; `ack` what you processed.

    Messages come in seq-id order with no gap, across reconnects. Iteration ends when the
    subscription is closed; `receive` then raises SubscriptionClosed.
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

    topic = property(lambda self: self._position.topic)
    subscriber_id = property(lambda self: self._position.subscriber_id)

    @property
    def closed(self) -> bool:
        return self._closed is not None

    # -- called by the connection, on the reading thread ------------------------------------

    def _attached(self, connection, subscribed) -> None:
        self._connection = connection
        self._handle = subscribed.handle
        self._detached_at = None
        self._position.on_subscribed(subscribed)

    def _delivered(self, start, stop, entry) -> None:
        self._queue.extend(self._position.messages(start, stop, entry))

    def _detached(self, topic_moved: bool = False) -> None:
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
            if self._closed is not None:
                raise self._closed
            connection = self._connection
            if connection is None:
                self._client._resubscribe(self, deadline)
                if self._connection is None and deadline is not None and time.monotonic() >= deadline:
                    return None
                continue
            self._flush_ack(connection)
            ready = connection.wait_for(
                lambda connection=connection: queue or self._connection is not connection, deadline
            )
            if queue:
                return queue.popleft()
            if not ready and (deadline is not None and time.monotonic() >= deadline):
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

    def ack(self, message_or_seq) -> None:
        """Acknowledge this message and every one before it (cumulative)."""
        seq = message_or_seq.seq if isinstance(message_or_seq, Message) else int(message_or_seq)
        to_send = self._position.ack(seq)
        if to_send is not None and self._connection is not None:
            self._send_consume(self._connection, to_send)

    def _flush_ack(self, connection) -> None:
        to_send = self._position.unsent_ack()
        if to_send is not None:
            self._send_consume(connection, to_send)

    def _send_consume(self, connection, seq) -> None:
        handle = self._handle
        if handle is None:
            return
        try:
            connection.send(Op.CONSUME, encode_consume(handle, seq))
        except HedwigError:
            # Resubscribing sends the pointer again (sent_ack drops to the hub's value).
            self._position.sent_ack = min(self._position.sent_ack, seq - 1)

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
        connection.subscriptions.pop(handle, None)
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
        return f"<Subscription {self.topic}/{self.subscriber_id} {state}>"


class Client:
    """A blocking client of one or more hubs (the first that answers is asked first).

    `timeout` bounds every request; `reconnect_timeout` how long a subscription keeps
    trying to get its connection back before `receive` raises CouldNotConnect; `window`
    is the default number of delivered-but-unacknowledged messages per subscription,
    which also bounds what the client holds for a slow reader (0: unlimited).
    """

    def __init__(
        self,
        hubs=DEFAULT_HUB,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = 5.0,
        reconnect_timeout: float = 60.0,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        window: int = DEFAULT_WINDOW,
        ack_every: int = DEFAULT_ACK_EVERY,
        client_name: str = "",
    ):
        self._addresses = parse_addresses(hubs)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.reconnect_timeout = reconnect_timeout
        self.max_redirects = max_redirects
        self.window = window
        self.ack_every = ack_every
        self.client_name = client_name
        self._lock = threading.RLock()
        self._connections = {}  # address -> BlockingConnection
        self._routes = {}  # topic -> owner address learned from a redirect
        self._subscriptions = set()
        self._closed = False
        self._default = self._connect_any()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    # -- connections -----------------------------------------------------------------------

    def _connect_any(self):
        """The first address of the list that accepts a connection."""
        reasons = []
        for address in self._addresses:
            try:
                self._connection(address)
                return address
            except CouldNotConnect as e:
                reasons.append(e.message)
        raise CouldNotConnect(message="no hub reachable: " + "; ".join(reasons))

    def _connection(self, address) -> BlockingConnection:
        with self._lock:
            if self._closed:
                raise ClientClosed(message="the client is closed")
            connection = self._connections.get(address)
            if connection is None or connection.closed_by_hub():
                connection = BlockingConnection(address, self.connect_timeout, self.timeout, self.client_name)
                self._connections[address] = connection
            return connection

    def _connection_for(self, topic) -> BlockingConnection:
        address = self._routes.get(topic, self._default) if topic is not None else self._default
        try:
            return self._connection(address)
        except CouldNotConnect:
            if address != self._default:
                self._routes.pop(topic, None)  # the owner we were told of is gone: ask again
            self._default = self._connect_any()
            return self._connection(self._default)

    def _forget_route(self, topic) -> None:
        self._routes.pop(topic, None)

    def _request(self, topic, send, retry: bool):
        """`send(connection) -> Response` on the topic's hub, following redirects.

        `retry`: the request may be sent again after its connection dropped with it in
        flight (reads, subscribes); a publish may not: it may have been stored.
        """
        connection = self._connection_for(topic)
        asked = []
        retried = False
        while True:
            try:
                response = send(connection)
            except ConnectionLost:
                if not retry or retried:
                    raise
                retried = True
                connection = self._connection_for(topic)
                continue
            if response.status is Status.SUCCESS:
                return response.value
            if response.status is not Status.NOT_RESPONSIBLE_FOR_TOPIC or topic is None:
                raise error_for(response.status, response.message)
            asked.append(connection.address)
            connection = self._connection(self._redirect(topic, response.message, asked))

    def _redirect(self, topic, owner, asked):
        address = next_owner(topic, owner, asked, self.max_redirects)
        self._routes[topic] = address
        return address

    # -- publishing ------------------------------------------------------------------------

    def publish(self, topic: str, payload: bytes, properties=None) -> int:
        """Publish one message; its seq-id, once the hub has stored it."""
        self._check_size(topic, len(payload))
        if properties:
            message_set = encode_message_set([payload], [properties])
            return self._request(topic, lambda c: c.publish(topic, message_set), retry=False).first_seq
        return self._request(topic, lambda c: c.publish_one(topic, payload), retry=False).first_seq

    def publish_many(self, topic: str, payloads, properties=None) -> list[int]:
        """Publish messages as one message set, stored as one entry; their seq-ids.

        `properties`: None, or one mapping (or None) per payload.
        """
        if not payloads:
            return []
        self._check_size(topic, max(map(len, payloads)))
        message_set = encode_message_set(payloads, properties)
        published = self._request(topic, lambda c: c.publish(topic, message_set), retry=False)
        return list(range(published.first_seq, published.last_seq + 1))

    def _check_size(self, topic, largest: int) -> None:
        """Refuse a message over the hub's limit here, before it costs a round trip."""
        connection = self._connections.get(self._routes.get(topic, self._default))
        if connection is not None and largest > connection.hello.max_message_bytes:
            raise MessageTooLarge(
                message=f"a message of {largest} bytes exceeds the hub's limit of "
                f"{connection.hello.max_message_bytes}"
            )

    # -- subscribing -----------------------------------------------------------------------

    def subscribe(
        self,
        topic: str,
        subscriber_id: str,
        mode: str = "create_or_attach",
        start=None,
        window: int | None = None,
        force_attach: bool = False,
    ) -> Subscription:
        """Attach to (or create) the durable subscription (topic, subscriber_id).

        `start`: None (after the topic's last seq-id for a new subscription, consumed+1
        for an existing one), "earliest", "latest", a seq-id or a datetime.
        `window`: delivered-but-unacknowledged messages at most (None: the client's).
        """
        position = SubscriptionPosition(
            topic,
            subscriber_id,
            mode,
            wire_start(start),
            self.window if window is None else window,
            force_attach,
            self.ack_every,
        )
        subscription = Subscription(self, position)
        self._subscribe(subscription)
        self._subscriptions.add(subscription)
        return subscription

    def _subscribe(self, subscription) -> None:
        body = encode_subscribe(**subscription._position.subscribe_args())
        self._request(subscription.topic, lambda c: c.call(Op.SUBSCRIBE, body, subscription), retry=True)

    def _resubscribe(self, subscription, deadline) -> None:
        """Attach a subscription whose connection dropped again, from its last ack.

        Returns when attached, or when `deadline` passed (the caller returns None);
        raises CouldNotConnect after `reconnect_timeout` of failures, and
        SubscriptionClosed when the hub no longer has the subscription.
        """
        give_up = (subscription._detached_at or time.monotonic()) + self.reconnect_timeout
        backoff = _BACKOFF_FIRST
        while subscription._connection is None and subscription._closed is None:
            try:
                self._subscribe(subscription)
                return
            except (CouldNotConnect, ConnectionLost, RequestTimeout, TopicBusy, ServiceDown) as e:
                last_error = e
            except ClientNotSubscribed as e:
                subscription._ended(SubscriptionClosed(message=f"the hub no longer has it: {e.message}"))
                raise subscription._closed from None
            now = time.monotonic()
            if now >= give_up:
                raise CouldNotConnect(
                    message=f"could not resubscribe {subscription.topic}/{subscription.subscriber_id} "
                    f"in {self.reconnect_timeout} s: {last_error}"
                )
            if deadline is not None and now >= deadline:
                return
            pause = min(backoff, give_up - now, (deadline - now) if deadline is not None else backoff)
            time.sleep(max(pause, 0))
            backoff = min(backoff * 2, _BACKOFF_MAX)

    def unsubscribe(self, topic: str, subscriber_id: str) -> None:
        """Delete the durable subscription: its consumed seq-id is forgotten."""
        for subscription in list(self._subscriptions):
            if subscription.topic == topic and subscription.subscriber_id == subscriber_id:
                subscription.close()
        body = encode_unsubscribe(topic, subscriber_id)
        self._request(topic, lambda c: c.call(Op.UNSUBSCRIBE, body), retry=False)

    # -- reading without a subscription, and admin reads --------------------------------------

    def read_range(self, topic: str, from_seq: int, to_seq: int = 0, max_bytes: int = DEFAULT_READ_BYTES):
        """Stored entries holding seq-ids from_seq..to_seq (0: to the last), raw.

        Returns hedwig.protocol.requests.ReadRangeReply(first_seq, last_seq, entries):
        the topic's retained range, and (start, stop, entry bytes) per entry, meaning
        messages [start, stop) of that entry (decode with hedwig.protocol.decode_entry).
        The reply holds at least one entry when any is in range, and stops adding entries
        once `max_bytes` is reached.
        """
        body = encode_read_range(topic, from_seq, to_seq, max_bytes)
        return self._request(topic, lambda c: c.call(Op.READ_RANGE, body), retry=True)

    def read(self, topic: str, from_seq: int = 1, to_seq: int | None = None) -> list:
        """Messages from_seq..to_seq (None: up to the last published when asked) as Messages."""
        messages = []
        next_seq = from_seq
        limit = to_seq
        while limit is None or next_seq <= limit:
            reply = self.read_range(topic, next_seq, limit or 0)
            if limit is None:
                limit = reply.last_seq
            if not reply.entries:
                break
            for start, stop, entry in reply.entries:
                for message in decode_entry(topic, entry, start, stop):
                    if next_seq <= message.seq <= limit:
                        messages.append(message)
                        next_seq = message.seq + 1
            if next_seq <= reply.first_seq - 1:
                break
        return messages

    def topics(self) -> list:
        """The topics the hub holds (see docs/protocol.md for each item's fields)."""
        return self._request(None, lambda c: c.call(Op.LIST_TOPICS, b""), retry=True)

    def describe(self, topic: str) -> dict:
        """A topic's last seq-id, ledger ranges and subscribers (consumed seq-id, backlog)."""
        body = encode_describe_topic(topic)
        return self._request(topic, lambda c: c.call(Op.DESCRIBE_TOPIC, body), retry=True)

    def stats(self) -> dict:
        """The hub's counters."""
        return self._request(None, lambda c: c.call(Op.STATS, b""), retry=True)

    # -- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Flush acknowledgements, close subscriptions (they stay durable) and connections."""
        if self._closed:
            return
        for subscription in list(self._subscriptions):
            subscription.close()
        with self._lock:
            self._closed = True
            connections = list(self._connections.values())
            self._connections.clear()
        for connection in connections:
            connection.close()
