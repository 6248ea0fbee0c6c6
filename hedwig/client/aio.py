"""The asyncio client: every operation is a coroutine; one connection per hub.

    async with Client("127.0.0.1:4080") as client:
        seq = await client.publish("orders", b"...")
        async with await client.subscribe("orders", "billing") as subscription:
            async for message in subscription:
                ...
                await subscription.ack(message)

It drives the same sans-IO protocol session as the blocking and Twisted clients
(hedwig/protocol/session.py, through aio_protocol.py), with the same positions,
redirect rule and typed errors. Publishes are batched as the Twisted client batches
them: every `publish` of a topic made before the event loop runs again goes out as one
message set (one PUBLISH, one stored entry), and each caller gets its own seq-id; at
most `max_in_flight` messages are sent and unanswered, later ones wait their turn.
Requests follow redirects; after a lost connection the client connects again (with
backoff) and resubscribes every live subscription from its last acknowledgement.
"""

import asyncio

from hedwig.client import aio_subscriptions
from hedwig.client.aio_idempotent import AioIdempotentPublisher, IdempotentPublishing
from hedwig.client.aio_protocol import AioHubProtocol
from hedwig.client.aio_subscriptions import (
    AckOnlySubscription,
    PullSubscription,
    SharedSubscription,
    Subscription,
)
from hedwig.client.config import ClientConfig
from hedwig.client.operations import ClientOperations
from hedwig.client.payloads import PublishBatch, encode_payloads, payload_bytes
from hedwig.client.reads import ReadCollector
from hedwig.client.settings import BatchingClientSettings
from hedwig.client.start import position_as_asked, subscription_class
from hedwig.protocol import Status
from hedwig.protocol.addresses import format_address
from hedwig.protocol.compression import encode_published_set
from hedwig.protocol.errors import (
    AuthenticationFailed,
    ClientClosed,
    ClientNotSubscribed,
    ConnectionLost,
    CouldNotConnect,
    HedwigError,
    MessageTooLarge,
    SubscriptionClosed,
)

__all__ = ["AckOnlySubscription", "Client", "PullSubscription", "SharedSubscription", "Subscription"]
_BACKOFF_FIRST = 0.05
_BACKOFF_MAX = 5.0


class Client(IdempotentPublishing, BatchingClientSettings, ClientOperations):
    """An asyncio client of one or more hubs (the first that answers is asked first).

    `tls` (a hedwig.config.tls.ClientTls): reach every hub over TLS (the addresses name the hubs'
    [tls] ports), verifying its certificate with the standard library's ssl.

    `compression` ("zstd", "lz4", "gzip" or None): compress every message set this
    client publishes with that codec (hedwig/protocol/compression.py; zstd and lz4 need
    hedwig's `compression` extra, CompressionUnavailable naming it when missing).
    Subscribers decompress whatever they receive, whatever this is.
    """

    def __init__(self, hubs=None, *, config: ClientConfig | None = None, **options):
        """`hubs` and `options` (hedwig.client.config.ClientConfig's fields) over `config`.
        Nothing connects before connect() (or `async with`, or the first request)."""
        config = self.config = ClientConfig.of(hubs, config, options)
        self._codec = config.codec  # (CompressionUnavailable when made, not at publish)
        self._addresses = config.addresses
        self.tls = tls = config.tls
        self._ssl_context = tls.ssl_context() if tls is not None else None
        self.credentials = config.credentials  # hedwig.protocol.auth_request.Credentials: AUTH after HELLO
        self._take_settings(config)
        self._start_batching(config)
        self._idempotent = AioIdempotentPublisher(self) if config.idempotent else None  # aio_idempotent.py
        self._flush_scheduled = False
        self._resubscribing = set()  # the tasks attaching detached subscriptions again

    async def __aenter__(self):
        await self.connect()
        return self

    async def __aexit__(self, *exc_info):
        await self.close()

    # -- connections -----------------------------------------------------------------------

    async def connect(self) -> "Client":
        """Connect to the first hub of the list that answers."""
        await self._connect_any()
        return self

    async def _connect_any(self, skip=None) -> AioHubProtocol:
        reasons = []
        for address in self._addresses:
            if address == skip:
                continue
            try:
                protocol = await self._protocol_for(address)
            except AuthenticationFailed:
                raise  # (another hub of the list would say the same)
            except HedwigError as e:
                reasons.append(e.message)
                continue
            self._routes.default = address
            return protocol
        raise CouldNotConnect(message="no hub reachable: " + "; ".join(reasons))

    async def _protocol_for(self, address) -> AioHubProtocol:
        """The connected protocol for a hub address; callers asking while a connection is
        being made share that attempt."""
        if self._closed:
            raise ClientClosed(message="the client is closed")
        protocol = self._protocols.get(address)
        if protocol is not None and protocol.lost is None:
            return protocol
        connecting = self._connecting.get(address)
        if connecting is None:
            connecting = self._connecting[address] = asyncio.ensure_future(self._open(address))
            connecting.add_done_callback(lambda _f: self._connecting.pop(address, None))
        return await asyncio.shield(connecting)

    async def _open(self, address) -> AioHubProtocol:
        loop = asyncio.get_running_loop()
        host, port = address
        tls = {}
        if self._ssl_context is not None:
            tls = {"ssl": self._ssl_context, "server_hostname": self.tls.name_for(host)}
        where = format_address(address)
        try:
            _transport, protocol = await asyncio.wait_for(
                loop.create_connection(
                    lambda: AioHubProtocol(loop, address, self.client_name, self.timeout, self.credentials),
                    host,
                    port,
                    **tls,
                ),
                self.connect_timeout,
            )
        except TimeoutError:
            raise CouldNotConnect(message=f"{where}: no answer in {self.connect_timeout} s") from None
        except OSError as e:
            raise CouldNotConnect(message=f"{where}: {e.strerror or e}") from None
        try:
            await asyncio.wait_for(asyncio.shield(protocol.ready), self.connect_timeout)
        except TimeoutError:
            protocol.close()  # connected, but HELLO went unanswered
            raise CouldNotConnect(message=f"{where}: HELLO unanswered in {self.connect_timeout} s") from None
        protocol.on_lost = self._lost
        self._protocols[address] = protocol
        return protocol

    def _lost(self, protocol) -> None:
        for address, known in list(self._protocols.items()):
            if known is protocol:
                del self._protocols[address]

    async def _protocol_for_topic(self, topic) -> AioHubProtocol:
        address = self._routes.address(topic)
        try:
            return await self._protocol_for(address)
        except CouldNotConnect:
            if address != self._routes.default:
                self._routes.forget(topic)  # the owner we were sent to is gone: ask again
                return await self._protocol_for_topic(topic)
            if len(self._addresses) == 1:
                raise
            return await self._connect_any(skip=address)

    async def _request(self, topic, send, retry: bool):
        """`send(protocol) -> Future[Response]` on the topic's hub, following redirects;
        the response's value. `retry`: it may be sent again after a lost connection
        (reads, subscribes), which a publish may not (it may have been stored)."""
        protocol = await self._protocol_for_topic(topic)
        asked = []
        retried = False
        while True:
            try:
                response = await send(protocol)
            except ConnectionLost:
                if not retry or retried:
                    raise
                retried = True
                protocol = await self._protocol_for_topic(topic)
                continue
            if response.status is Status.SUCCESS:
                return response.value
            asked.append(protocol.address)
            owner = self._routes.follow(topic, response, asked, self.max_redirects)
            protocol = await self._protocol_for(owner)

    # -- publishing ------------------------------------------------------------------------

    async def publish(self, topic: str, payload, properties=None) -> int:
        """Publish one message (bytes, or str sent as UTF-8); its seq-id once stored."""
        if type(payload) is not bytes:  # (the usual case costs no call)
            payload = payload_bytes(payload)
        if self._closed:
            raise ClientClosed(message="the client is closed")
        self._check_size(topic, len(payload))
        batch = self._batches.get(topic)
        if batch is None or batch.size >= self.max_batch_bytes:
            if batch is not None:
                self._waiting.append((topic, batch))
            batch = self._batches[topic] = PublishBatch()
        if properties:
            if batch.properties is None:
                batch.properties = [None] * len(batch.payloads)
            batch.properties.append(properties)
        elif batch.properties is not None:
            batch.properties.append(None)
        batch.payloads.append(payload)
        batch.size += len(payload)
        future = asyncio.get_running_loop().create_future()
        batch.waiters.append(future)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)
        return await future

    async def publish_many(self, topic: str, payloads, properties=None) -> list[int]:
        """Publish messages (str goes as UTF-8) as one message set (one stored entry); their
        seq-ids."""
        if not payloads:
            return []
        if self._closed:
            raise ClientClosed(message="the client is closed")
        message_set, count, largest = encode_payloads(payloads, properties, self._codec)
        self._check_size(topic, largest)
        published = await self._publish_set(topic, message_set, count)
        return list(range(published.first_seq, published.last_seq + 1))

    def _check_size(self, topic, largest: int) -> None:
        protocol = self._protocols.get(self._routes.address(topic))
        if protocol is not None and protocol.hello is not None and largest > protocol.hello.max_message_bytes:
            limit = protocol.hello.max_message_bytes
            raise MessageTooLarge(message=f"a message of {largest} bytes exceeds the hub's limit of {limit}")

    def _flush(self) -> None:
        self._flush_scheduled = False
        batches, self._batches = self._batches, {}
        self._waiting.extend(batches.items())
        self._send_waiting()

    def _send_waiting(self) -> None:
        waiting = self._waiting
        while waiting and self.in_flight < self.max_in_flight:
            topic, batch = waiting.popleft()
            self.in_flight += len(batch.payloads)
            message_set = encode_published_set(batch.payloads, batch.properties, self._codec)
            sent = asyncio.ensure_future(self._publish_set(topic, message_set, len(batch.payloads)))
            sent.add_done_callback(lambda outcome, batch=batch: self._answered(outcome, batch))

    def _answered(self, outcome, batch) -> None:
        self.in_flight -= len(batch.payloads)
        error = outcome.exception() if not outcome.cancelled() else ClientClosed(message="cancelled")
        if error is not None:
            for future in batch.waiters:
                if not future.done():
                    future.set_exception(error)
        else:
            seq = outcome.result().first_seq
            for future in batch.waiters:
                if not future.done():
                    future.set_result(seq)
                seq += 1
        if self._waiting:
            self._send_waiting()
        self._check_idle()

    def _check_idle(self) -> None:
        if self._idle_waiters and self.in_flight == 0 and not self._waiting and not self._batches:
            waiters, self._idle_waiters = self._idle_waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    # -- subscribing -----------------------------------------------------------------------

    async def subscribe(
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
        for an existing one), "earliest", "latest", a seq-id or a datetime. `window`:
        delivered-but-unacknowledged messages at most (None: the client's).
        `deliver=False`: acknowledgement only; an AckOnlySubscription.

        `kind="shared"`: a work queue, whose members (any number, on any connections) each
        get some of the messages: a SharedSubscription, acknowledged message by message.
        `deliver="pull"`: nothing is pushed; `await fetch(...)` asks (a PullSubscription).
        `options`: ack_timeout (seconds), max_deliveries, dead_letter_topic and
        message_bound, as the blocking client's subscribe says.
        """
        if self._closed:
            raise ClientClosed(message="the client is closed")
        position = position_as_asked(
            self, topic, subscriber_id, mode, start, window, force_attach, deliver, kind, **options
        )
        subscription = subscription_class(aio_subscriptions, position)(self, position)
        await self._subscribe(subscription)
        self._subscriptions.add(subscription)
        return subscription

    def _resubscribe_later(self, subscription, topic_moved: bool) -> None:
        """Attach a subscription whose connection dropped (or whose topic moved) again,
        with exponential backoff, until it is attached, closed or ended."""
        if topic_moved:
            self._routes.forget(subscription.topic)
        if not self._closed:
            task = asyncio.ensure_future(self._resubscribe(subscription))
            self._resubscribing.add(task)
            task.add_done_callback(self._resubscribing.discard)

    async def _resubscribe(self, subscription) -> None:
        backoff = 0.0
        while not (self._closed or subscription.closed or subscription.attached):
            await asyncio.sleep(backoff)
            if self._closed or subscription.closed or subscription.attached:
                return
            try:
                await self._subscribe(subscription)
                return
            except ClientNotSubscribed as e:
                subscription._ended(SubscriptionClosed(message=f"the hub no longer has it: {e.message}"))
                return
            except ClientClosed:
                return
            except HedwigError:
                backoff = min(max(backoff * 2, _BACKOFF_FIRST), _BACKOFF_MAX)

    async def unsubscribe(self, topic: str, subscriber_id: str):
        """Delete the durable subscription (one attached through this client is closed first)."""
        for subscription in list(self._subscriptions):
            if subscription.topic == topic and subscription.subscriber_id == subscriber_id:
                await subscription.close()
        return await ClientOperations.unsubscribe(self, topic, subscriber_id)

    # -- reads (read_range, and the admin reads, are in operations.py) ----------------------

    async def read(self, topic: str, from_seq: int = 1, to_seq: int | None = None) -> list:
        """The Messages from_seq..to_seq (None: up to the last published when asked)."""
        collector = ReadCollector(topic, from_seq, to_seq)
        while (asked := collector.next_range()) is not None:
            collector.add(await self.read_range(topic, *asked))
        return collector.messages

    # -- closing ---------------------------------------------------------------------------

    async def close(self) -> None:
        """Send every publish made so far and wait for its reply, then close subscriptions
        (flushing acknowledgements; they stay durable) and connections."""
        if self._closed:
            return
        if self._flush_scheduled:
            self._flush()
        idle = asyncio.get_running_loop().create_future()
        self._idle_waiters.append(idle)
        self._check_idle()
        await idle  # every publish answered or failed (each bounded by the timeout)
        for subscription in list(self._subscriptions):
            await subscription.close()
        self._closed = True
        for protocol in list(self._protocols.values()):
            protocol.on_lost = None
            protocol.close()
        self._protocols.clear()
