"""The blocking client, for scripts: `with Client("127.0.0.1:4080") as c: c.publish(...)`.

The client core (core.py) run in the calling thread (waiting.BlockingWaiting). One
socket per hub (connection.py) carries every publish and subscription of the client,
read by whichever calling thread waits: no background thread, no thread switch between
a reply and its caller. A one-message publish goes straight to its connection: one
send, and in the usual case one read that is its reply.

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

from zope.interface import implementer

from hedwig.client import blocking_subscriptions
from hedwig.client.blocking_subscriptions import (
    AckOnlySubscription,
    PullSubscription,
    SharedSubscription,
    Subscription,
)
from hedwig.client.config import BATCHING_OPTIONS, ClientConfig
from hedwig.client.connection import BlockingConnection
from hedwig.client.core import ClientCore, IConnections, by_partition, picked
from hedwig.client.payloads import encode_payloads, payload_bytes
from hedwig.client.tls_connection import TlsConnection
from hedwig.client.waiting import BlockingWaiting
from hedwig.protocol import Status
from hedwig.protocol.compression import encode_published_set
from hedwig.protocol.errors import ClientClosed, CouldNotConnect
from hedwig.protocol.messageset import key_bytes
from hedwig.protocol.partitions import partition_for_key, partition_topic
from hedwig.protocol.schedule import scheduled_properties

__all__ = ["AckOnlySubscription", "Client", "PullSubscription", "SharedSubscription", "Subscription"]


class Client(ClientCore):
    """A blocking client of one or more hubs (the first that answers is asked first):
    every method returns its answer (or raises its typed error), and may be called from
    any thread.

    Made from a hedwig.client.config.ClientConfig (`config`), or its options as keyword
    arguments: `timeout` bounds every request; `reconnect_timeout` how long a
    subscription keeps trying to get its connection back before `receive` raises
    CouldNotConnect; `window` the default number of delivered-but-unacknowledged
    messages per subscription; acknowledgements go out every `ack_every` seq-ids, and
    after at most `ack_delay` seconds of a subscription's waiting
    (blocking_subscriptions.py); `tls` (a hedwig.config.tls.ClientTls): every hub over
    TLS (its files are read here, once: a TlsError naming one that cannot be used);
    `compression` ("zstd", "lz4", "gzip" or None) for every set published;
    `idempotent`: sets numbered, sent again until stored once.
    """

    def __init__(self, hubs=None, *, config: ClientConfig | None = None, **options):
        """`hubs` and `options` over `config`. Nothing connects before connect() (or
        `with`, or the first request)."""
        config = ClientConfig.of(hubs, config, options, refused=BATCHING_OPTIONS)
        connections = BlockingConnections(config, config.name_for("blocking"))
        super().__init__(config, BlockingWaiting(), connections, blocking_subscriptions)

    def __enter__(self):
        return self.connect()

    def __exit__(self, *exc_info):
        self.close()

    # -- publishing ------------------------------------------------------------------------

    def publish(self, topic: str, payload: bytes, properties=None, key=None, **schedule) -> int:
        """Publish one message (bytes, or str sent as UTF-8); its seq-id, once the hub has
        stored it. `properties`, `key`, `deliver_after`, `deliver_at` and `ttl` as
        ClientCore.publish takes them."""
        if schedule:
            properties = scheduled_properties(properties, time.time(), **schedule)
        if type(payload) is not bytes:  # (the usual case costs no call)
            payload = payload_bytes(payload)
        if properties or key is not None or self._codec or self._idempotent:
            if key is not None and (partitions := self._waiting.run(self._partition_count_steps(topic))) > 1:
                # (a partitioned topic's keyed message: to its key's partition)
                topic = partition_topic(topic, partition_for_key(key_bytes(key), partitions))
            self._check_size(topic, len(payload))
            keys = None if key is None else [key]
            message_set = encode_published_set([payload], [properties], self._codec, keys)
            return self._published(topic, message_set).first_seq
        # The one-message path: straight to the topic's connection, one send, one read.
        try:
            connection = self._connections.get(self._routes.address(topic))
        except CouldNotConnect:
            connection = self._waiting.run(self._connection_for(topic))  # (the default hub, or any)
        if len(payload) > connection.hello.max_message_bytes:
            self._check_size(topic, len(payload))  # (raises MessageTooLarge)
        answer = connection.publish_one_quick(topic, payload)  # (the seq-id, usually)
        if answer.__class__ is int:
            return answer
        send = lambda c: c.publish_one(topic, payload)  # noqa: E731 (a redirect sends it again)
        steps = self._request_steps(topic, send, retry=False, connection=connection, response=answer)
        return self._waiting.run(steps).first_seq

    def publish_many(self, topic: str, payloads, properties=None, keys=None) -> list[int]:
        """Publish messages as one message set, stored as one entry; their seq-ids.

        `payloads`: bytes, or str sent as UTF-8. `properties`: None, or one mapping (or
        None) per payload. `keys`: None, or one key (bytes, str, or None) per payload. A
        partitioned topic's keyed messages go to their keys' partitions, one set per
        partition (their seq-ids, each its partition's, in the order given).
        """
        if not payloads:
            return []
        if self._closing is not None:
            raise ClientClosed(message="the client is closed")
        if keys is not None and (partitions := self._waiting.run(self._partition_count_steps(topic))) > 1:
            return self._publish_partitioned(topic, partitions, payloads, properties, keys)
        return self._publish_many_to(topic, payloads, properties, keys)

    def _publish_many_to(self, topic, payloads, properties, keys) -> list[int]:
        """publish_many's messages as one set of `topic`."""
        message_set, _count, largest = encode_payloads(payloads, properties, self._codec, keys)
        self._check_size(topic, largest)
        published = self._published(topic, message_set)
        return list(range(published.first_seq, published.last_seq + 1))

    def _publish_partitioned(self, topic, partitions, payloads, properties, keys) -> list[int]:
        """publish_many's messages to a partitioned topic, each keyed one to its key's
        partition (an unkeyed one to partition 0), one set per partition."""
        seqs = [0] * len(payloads)
        for target, indexes in by_partition(topic, partitions, keys).items():
            published = self._publish_many_to(target, *picked(indexes, payloads, properties, keys))
            for index, seq in zip(indexes, published, strict=True):
                seqs[index] = seq
        return seqs

    def _published(self, topic, message_set):
        """Published of one set, straight to the topic's connection as a one-message
        publish goes; the core's steps for the rest (an idempotent client's numbered
        sets, a redirect, a hub that cannot be reached)."""
        if self._idempotent is not None:
            return self._waiting.run(self._send_set_steps(topic, message_set, 1))
        try:
            connection = self._connections.get(self._routes.address(topic))
        except CouldNotConnect:
            connection = self._waiting.run(self._connection_for(topic))
        response = connection.publish(topic, message_set)
        if response.status is Status.SUCCESS:
            return response.value
        send = lambda c: c.publish(topic, message_set)  # noqa: E731 (a redirect sends it again)
        return self._waiting.run(self._request_steps(topic, send, False, connection, response))

    # -- subscriptions ---------------------------------------------------------------------

    def _resubscribe(self, subscription, deadline) -> None:
        """Attach a subscription whose connection dropped again, from its last ack, in
        the calling thread (core.py's _reattach_steps): returns when attached, or when
        `deadline` passed (the caller returns None); raises CouldNotConnect after
        `reconnect_timeout` of failures, and SubscriptionClosed when the hub no longer
        has the subscription."""
        self._waiting.run(self._reattach_steps(subscription, deadline))


@implementer(IConnections)
class BlockingConnections:
    """The blocking client's connections, one per hub, shared by its threads: a usable
    one is found without a lock (the one-message publish's path), a new one is made
    under it."""

    def __init__(self, config: ClientConfig, client_name: str):
        self._config = config
        self._client_name = client_name  # (said in HELLO)
        tls = config.tls
        self._ssl_context = tls.ssl_context() if tls is not None else None  # (its files read once, here)
        self._lock = threading.RLock()
        self._open = {}  # address -> BlockingConnection
        self.closed = False

    def get(self, address) -> BlockingConnection:
        connection = self._open.get(address)  # (a dict read: no lock needed)
        if connection is not None and connection.in_use():
            return connection  # the usual case: no lock, no system call
        with self._lock:
            if self.closed:
                raise ClientClosed(message="the client is closed")
            connection = self._open.get(address)
            if connection is None or connection.closed_by_hub():
                connection = self._make(address)
                self._open[address] = connection
            return connection

    def _make(self, address) -> BlockingConnection:
        config = self._config
        if config.tls is None:
            return BlockingConnection(
                address, config.connect_timeout, config.timeout, self._client_name, config.credentials
            )
        return TlsConnection(
            address,
            config.connect_timeout,
            config.timeout,
            self._client_name,
            config.tls,
            self._ssl_context,
            config.credentials,
        )

    def known(self, address):
        return self._open.get(address)

    def addresses(self) -> list:
        return [address for address, connection in list(self._open.items()) if connection.lost is None]

    def close_all(self) -> None:
        with self._lock:
            self.closed = True
            connections = list(self._open.values())
            self._open.clear()
        for connection in connections:
            connection.close()
