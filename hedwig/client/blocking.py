"""The blocking client, for scripts: `with Client("127.0.0.1:4080") as c: c.publish(...)`.

One socket per hub (connection.py) carries every publish and subscription of the
client, read by whichever calling thread waits: no background thread, no thread switch
between a reply and its caller.

Requests are sent again to the owner a hub names in NOT_RESPONSIBLE_FOR_TOPIC (at most
`max_redirects` times, never to a hub already asked). A lost connection is opened again
on next use; a subscription on it resumes from its last acknowledged seq-id (see
hedwig.protocol.position). A publish in flight when a connection drops raises ConnectionLost: it may
have been stored, and sending it again could store it twice.

`subscribe(..., deliver=False)` gives an AckOnlySubscription: the hub delivers nothing
on it, and `ack(seq)` moves its consumed seq-id at once, for applications that read the
topic another way (read_range) and hold a subscription so the hub keeps what they have
not processed yet.
"""

import threading
import time

from hedwig.client import blocking_subscriptions
from hedwig.client.blocking_idempotent import BlockingIdempotence, IdempotentPublishing
from hedwig.client.blocking_subscriptions import (
    AckOnlySubscription,
    PullSubscription,
    SharedSubscription,
    Subscription,
)
from hedwig.client.config import BATCHING_OPTIONS, ClientConfig
from hedwig.client.connection import BlockingConnection
from hedwig.client.operations import ClientOperations
from hedwig.client.payloads import encode_payloads, payload_bytes
from hedwig.client.reads import ReadCollector
from hedwig.client.settings import ClientSettings
from hedwig.client.start import position_as_asked, subscription_class
from hedwig.client.tls_connection import TlsConnection
from hedwig.protocol import Status
from hedwig.protocol.compression import encode_published_set
from hedwig.protocol.errors import (
    ClientClosed,
    ClientNotSubscribed,
    ConnectionLost,
    CouldNotConnect,
    MessageTooLarge,
    RequestTimeout,
    ServiceDown,
    SubscriptionClosed,
    TopicBusy,
)
from hedwig.protocol.redirects import Routes

__all__ = ["AckOnlySubscription", "Client", "PullSubscription", "SharedSubscription", "Subscription"]
_BACKOFF_FIRST = 0.05
_BACKOFF_MAX = 2.0


class Client(IdempotentPublishing, ClientSettings, ClientOperations):
    """A blocking client of one or more hubs (the first that answers is asked first).

    `timeout` bounds every request; `reconnect_timeout` how long a subscription keeps
    trying to get its connection back before `receive` raises CouldNotConnect; `window`
    is the default number of delivered-but-unacknowledged messages per subscription,
    which also bounds what the client holds for a slow reader (0: unlimited);
    acknowledgements go out every `ack_every` seq-ids, and after at most `ack_delay`
    seconds of a subscription's waiting (blocking_acks.py).

    `tls` (a hedwig.config.tls.ClientTls): reach every hub over TLS, verifying its certificate;
    the addresses then name the hubs' [tls] ports. Its files are read here, once (a
    TlsError, naming the file, when one cannot be used), not at each connection.

    `compression` ("zstd", "lz4", "gzip" or None): compress every message set this
    client publishes with that codec (hedwig/protocol/compression.py; zstd and lz4 need
    hedwig's `compression` extra, CompressionUnavailable naming it when missing).
    Subscribers decompress whatever they receive, whatever this is.
    """

    def __init__(self, hubs=None, *, config: ClientConfig | None = None, **options):
        """`hubs` and `options` (hedwig.client.config.ClientConfig's fields) over `config`.
        Nothing connects before connect() (or `with`, or the first request)."""
        config = self.config = ClientConfig.of(hubs, config, options, refused=BATCHING_OPTIONS)
        self._codec = config.codec  # (CompressionUnavailable when made, not at publish)
        self._addresses = config.addresses
        self.tls = tls = config.tls
        self._ssl_context = tls.ssl_context() if tls is not None else None
        self.credentials = config.credentials  # hedwig.protocol.auth_request.Credentials: AUTH after HELLO
        self._take_settings(config)
        self.reconnect_timeout = config.reconnect_timeout
        self.ack_delay = config.ack_delay
        self._idempotent = BlockingIdempotence(self) if config.idempotent else None  # blocking_idempotent.py
        self._lock = threading.RLock()
        self._connections = {}  # address -> BlockingConnection
        self._subscriptions = set()
        self._closed = False
        self._routes = Routes(self._addresses[0], tls=tls is not None)

    def connect(self) -> "Client":
        """Connect to the first hub of the list that answers (CouldNotConnect saying why
        none did); the client."""
        self._routes.default = self._connect_any()
        return self

    def __enter__(self):
        return self.connect()

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
        connection = self._connections.get(address)  # (a dict read: no lock needed)
        if connection is not None and connection.in_use():
            return connection  # the usual case: no lock, no system call
        with self._lock:
            if self._closed:
                raise ClientClosed(message="the client is closed")
            connection = self._connections.get(address)
            if connection is None or connection.closed_by_hub():
                connection = self._open(address)
                self._connections[address] = connection
            return connection

    def _open(self, address) -> BlockingConnection:
        if self.tls is None:
            return BlockingConnection(
                address, self.connect_timeout, self.timeout, self.client_name, self.credentials
            )
        return TlsConnection(
            address,
            self.connect_timeout,
            self.timeout,
            self.client_name,
            self.tls,
            self._ssl_context,
            self.credentials,
        )

    def _connection_for(self, topic) -> BlockingConnection:
        routes = self._routes
        address = routes.address(topic)
        try:
            return self._connection(address)
        except CouldNotConnect:
            if address != routes.default:
                routes.forget(topic)  # the owner we were told of is gone: ask again
            routes.default = self._connect_any()
            return self._connection(routes.default)

    def _forget_route(self, topic) -> None:
        self._routes.forget(topic)

    def _request(self, topic, send, retry: bool, connection=None, response=None):
        """`send(connection) -> Response` on the topic's hub, following redirects.

        `retry`: the request may be sent again after its connection dropped with it in
        flight (reads, subscribes); a publish may not: it may have been stored.
        `connection`, `response`: where it was sent already, and what that answered.
        """
        if connection is None:
            connection = self._connection_for(topic)
        asked = []
        retried = False
        while True:
            if response is None:
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
            asked.append(connection.address)
            connection = self._connection(self._routes.follow(topic, response, asked, self.max_redirects))
            response = None

    # -- publishing ------------------------------------------------------------------------

    def publish(self, topic: str, payload: bytes, properties=None) -> int:
        """Publish one message (bytes, or str sent as UTF-8); its seq-id, once the hub has
        stored it."""
        if type(payload) is not bytes:  # (the usual case costs no call)
            payload = payload_bytes(payload)
        if properties or self._codec or self._idempotent:
            self._check_size(topic, len(payload))
            message_set = encode_published_set([payload], [properties], self._codec)
            return self._publish_set(topic, message_set).first_seq
        connection = self._connection_for(topic)
        if len(payload) > connection.hello.max_message_bytes:
            self._check_size(topic, len(payload))  # (raises MessageTooLarge)
        answer = connection.publish_one_quick(topic, payload)  # (the seq-id, usually)
        if answer.__class__ is int:
            return answer
        send = lambda c: c.publish_one(topic, payload)  # noqa: E731 (a redirect sends it again)
        return self._request(topic, send, retry=False, connection=connection, response=answer).first_seq

    def publish_many(self, topic: str, payloads, properties=None) -> list[int]:
        """Publish messages as one message set, stored as one entry; their seq-ids.

        `payloads`: bytes, or str sent as UTF-8. `properties`: None, or one mapping (or
        None) per payload.
        """
        if not payloads:
            return []
        message_set, _count, largest = encode_payloads(payloads, properties, self._codec)
        self._check_size(topic, largest)
        published = self._publish_set(topic, message_set)
        return list(range(published.first_seq, published.last_seq + 1))

    def _check_size(self, topic, largest: int) -> None:
        """Refuse a message over the hub's limit here, before it costs a round trip."""
        connection = self._connections.get(self._routes.address(topic))
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
        deliver=True,
        *,
        kind: str = "exclusive",
        **options,
    ) -> Subscription:
        """Attach to (or create) the durable subscription (topic, subscriber_id).

        `start`: None (after the topic's last seq-id for a new subscription, consumed+1
        for an existing one), "earliest", "latest", a seq-id or a datetime.
        `window`: delivered-but-unacknowledged messages at most (None: the client's).
        `deliver=False`: acknowledgement only; returns an AckOnlySubscription.

        `kind="shared"`: a work queue; any number of members (on any connections) share
        the subscription, each message going to one of them: a SharedSubscription, whose
        messages are acknowledged one by one. `deliver="pull"`: nothing is pushed; take
        messages with `fetch` (a PullSubscription; exclusive or shared). Options:
        `ack_timeout` (seconds before an unacknowledged message goes out again; the
        hub's default is 30), `max_deliveries` (then to the dead-letter topic, default
        "<topic>.dlq", and acknowledged; `dead_letter_topic` names another) and
        `message_bound` (any kind: at most that many unconsumed messages are kept for it,
        the oldest skipped). A shared subscription's `start` applies when it is created.
        """
        position = position_as_asked(
            self, topic, subscriber_id, mode, start, window, force_attach, deliver, kind, **options
        )
        subscription = subscription_class(blocking_subscriptions, position)(self, position)
        self._subscribe(subscription)
        self._subscriptions.add(subscription)
        return subscription

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
                self._attach_again(subscription)
                return
            except (CouldNotConnect, ConnectionLost, RequestTimeout, TopicBusy, ServiceDown) as e:
                last_error = e
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

    def _attach_again(self, subscription) -> None:
        """One attempt to attach a detached subscription again; raises what stopped it,
        and SubscriptionClosed (ending it) when the hub no longer has it."""
        try:
            self._subscribe(subscription)
        except ClientNotSubscribed as e:
            subscription._ended(SubscriptionClosed(message=f"the hub no longer has it: {e.message}"))
            raise subscription._closed from None

    # -- reading without a subscription (read_range, and the admin reads, are in operations.py)

    def read(self, topic: str, from_seq: int = 1, to_seq: int | None = None) -> list:
        """Messages from_seq..to_seq (None: up to the last published when asked) as Messages."""
        collector = ReadCollector(topic, from_seq, to_seq)
        while (asked := collector.next_range()) is not None:
            collector.add(self.read_range(topic, *asked))
        return collector.messages

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
