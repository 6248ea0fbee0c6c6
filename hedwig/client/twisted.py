"""The Twisted client: every operation returns a Deferred; one connection per hub.

    client = Client(reactor, "127.0.0.1:4080")
    await client.connect()
    seq = await client.publish("orders", b"...")
    subscription = await client.subscribe("orders", "billing", handler=on_message)

Publishes are batched as a Kafka producer batches them: every `publish` of a topic made
in one turn of the reactor goes out as one message set (one PUBLISH, one stored entry),
and each Deferred fires with its own seq-id. At most `max_in_flight` messages are sent
and unanswered; later ones wait in the client, up to `max_queued`, beyond which publish
fails at once with PublishQueueFull. A producer registered with `registerProducer` is
paused while the client holds `max_in_flight` messages or more and resumed below half.

Subscriptions hand each message to a handler, or put it on a DeferredQueue
(`subscription.queue`) when no handler is given; `window` bounds what the hub sends
ahead of acknowledgements, and so what the client holds. Requests follow redirects;
after a dropped connection the client connects again (with backoff) and resubscribes
every live subscription from its last acknowledgement, without gap or duplicate.
`subscribe(..., deliver=False)` gives an AckOnlySubscription (twisted_subscriptions.py).
"""

from twisted.internet.defer import Deferred, fail, gatherResults, succeed
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol, wrapClientTLS
from twisted.logger import Logger
from twisted.python.failure import Failure

from hedwig.client.config import ClientConfig
from hedwig.client.operations import ClientOperations
from hedwig.client.payloads import PublishBatch, encode_payloads, payload_bytes
from hedwig.client.protocol import HubProtocol
from hedwig.client.reads import ReadCollector
from hedwig.client.settings import BatchingClientSettings
from hedwig.client.start import position_as_asked, subscription_kind
from hedwig.client.twisted_backpressure import ProducerBackpressure
from hedwig.client.twisted_idempotent import IdempotentPublisher, IdempotentPublishing
from hedwig.client.twisted_subscriptions import (
    AckOnlySubscription,
    PullSubscription,
    SharedSubscription,
    Subscription,
)
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
    PublishQueueFull,
    SubscriptionClosed,
)
from hedwig.protocol.messageset import message_set_count

__all__ = ["AckOnlySubscription", "Client", "PullSubscription", "SharedSubscription", "Subscription"]
_BACKOFF_FIRST = 0.05
_BACKOFF_MAX = 5.0

log = Logger()


class Client(IdempotentPublishing, ProducerBackpressure, BatchingClientSettings, ClientOperations):
    """A Twisted client of one or more hubs. `reactor` gives connections and time.

    `tls` (a hedwig.config.tls.ClientTls): reach every hub over TLS (the addresses name the
    hubs' [tls] ports), verifying its certificate; needs pyOpenSSL and service_identity
    (hedwig's `tls` extra). The files are read here (TlsError naming one that cannot be
    used); a handshake that fails makes CouldNotConnect saying why.

    `compression` ("zstd", "lz4", "gzip" or None): as the blocking client's.
    """

    def __init__(self, reactor, hubs=None, *, config: ClientConfig | None = None, **options):
        """`hubs` and `options` (hedwig.client.config.ClientConfig's fields) over `config`.
        Nothing connects before connect() (or the first request)."""
        config = self.config = ClientConfig.of(hubs, config, options)
        self._codec = config.codec  # (CompressionUnavailable when made, not at publish)
        tls = config.tls
        if tls is not None:
            from hedwig.config.tls import INSTALL_HINT, TlsError, tls_available

            if not tls_available():
                raise TlsError(INSTALL_HINT)
            tls.check()
        self.tls = tls
        self._tls_creators = {}  # host -> Twisted's client connection creator for it
        self._reactor = reactor
        self._clock = reactor
        self._addresses = config.addresses
        self.credentials = config.credentials  # hedwig.protocol.auth_request.Credentials: AUTH after HELLO
        self._take_settings(config)
        self._start_batching(config)
        self._idempotent = IdempotentPublisher(self, reactor) if config.idempotent else None  # numbered sets
        self.max_queued = config.max_queued
        self._flush_call = None
        self.queued = 0  # messages held, not sent
        self._closing = None  # the Deferred of close(), once called

    # -- connections -----------------------------------------------------------------------

    def connect(self) -> Deferred:
        """Connect to the first hub of the list that answers; fires with the client."""
        return self._connect_any().addCallback(lambda _protocol: self)

    def _connect_any(self, skip=None) -> Deferred:
        """The protocol of the first hub of the list (but `skip`) that answers."""
        reasons = []
        addresses = iter([a for a in self._addresses if a != skip])

        def attempt(_=None):
            address = next(addresses, None)
            if address is None:
                return fail(CouldNotConnect(message="no hub reachable: " + "; ".join(reasons)))

            def chosen(protocol):
                self._routes.default = address
                return protocol

            def failed(failure):
                failure.trap(HedwigError)
                if failure.check(AuthenticationFailed):  # (another hub would say the same)
                    return failure
                reasons.append(failure.value.message)
                return attempt()

            return self._protocol_for(address).addCallbacks(chosen, failed)

        return attempt()

    def _protocol_for(self, address) -> Deferred:
        """A Deferred firing with the connected protocol for a hub address; callers asking
        while a connection is being made share that attempt."""
        if self._closed:
            return fail(ClientClosed(message="the client is closed"))
        protocol = self._protocols.get(address)
        if protocol is not None and protocol.lost is None:
            return succeed(protocol)
        d = Deferred()
        waiters = self._connecting.get(address)
        if waiters is None:
            waiters = self._connecting[address] = []
            self._open(address).addBoth(self._opened, address)
        waiters.append(d)
        return d

    def _opened(self, result, address) -> None:
        for waiter in self._connecting.pop(address, ()):
            waiter.callback(result)

    def _open(self, address) -> Deferred:
        host, port = address
        endpoint = TCP4ClientEndpoint(self._reactor, host, port, timeout=self.connect_timeout)
        if self.tls is not None:
            creator = self._tls_creators.get(host)
            if creator is None:
                creator = self._tls_creators[host] = self.tls.creator(host)
            endpoint = wrapClientTLS(creator, endpoint)
        protocol = HubProtocol(self._clock, self.client_name, self.timeout, address, self.credentials)
        protocol.on_lost = self._lost

        def ready(protocol):
            self._protocols[address] = protocol
            return protocol

        def failed(failure):
            if failure.check(HedwigError):
                return failure
            return Failure(CouldNotConnect(message=f"{format_address(address)}: {failure.getErrorMessage()}"))

        d = connectProtocol(endpoint, protocol).addCallback(lambda _: protocol.ready)
        return d.addCallbacks(ready, failed)

    def _lost(self, protocol) -> None:
        for address, known in list(self._protocols.items()):
            if known is protocol:
                del self._protocols[address]
        # Batches that were sent on it failed with ConnectionLost (outcome unknown);
        # those still waiting go out on the next connection.
        if self._waiting and not self._closed:
            self._clock.callLater(0, self._send_waiting)

    def _protocol_for_topic(self, topic) -> Deferred:
        address = self._routes.address(topic)

        def unreachable(failure):
            failure.trap(CouldNotConnect)
            if address != self._routes.default:
                # The owner we were sent to is gone: ask the default hub again.
                self._routes.forget(topic)
                return self._protocol_for_topic(topic)
            if len(self._addresses) == 1:
                return failure
            return self._connect_any(skip=address)

        return self._protocol_for(address).addErrback(unreachable)

    def _request(self, topic, send, retry: bool, asked=None, retried=False) -> Deferred:
        """`send(protocol) -> Deferred[Response]` on the topic's hub, following redirects;
        fires with the response's value. `retry`: may be sent again after a connection
        loss (reads, subscribes), which a publish may not."""
        asked = [] if asked is None else asked

        def answered(response, protocol):
            if response.status is Status.SUCCESS:
                return response.value
            asked.append(protocol.address)
            address = self._routes.follow(topic, response, asked, self.max_redirects)
            return self._protocol_for(address).addCallback(lambda p: send(p).addCallback(answered, p))

        def lost(failure):
            failure.trap(ConnectionLost)
            if not retry or retried:
                return failure
            return self._request(topic, send, retry, asked, True)

        d = self._protocol_for_topic(topic)
        d.addCallback(lambda protocol: send(protocol).addCallback(answered, protocol))
        return d.addErrback(lost)

    # -- publishing ------------------------------------------------------------------------

    def publish(self, topic: str, payload: bytes, properties=None) -> Deferred:
        """Publish one message (str goes as UTF-8); fires with its seq-id once stored."""
        if type(payload) is not bytes:  # (the usual case costs no call; a TypeError is raised at once)
            payload = payload_bytes(payload)
        if self._closing is not None:
            return fail(ClientClosed(message="the client is closed"))
        if self.queued >= self.max_queued:
            return fail(PublishQueueFull(message=f"{self.queued} messages wait to be sent"))
        limit = self._message_limit(topic)
        if limit is not None and len(payload) > limit:
            return fail(MessageTooLarge(message=f"a message of {len(payload)} bytes exceeds {limit}"))
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
        deferred = Deferred()
        batch.waiters.append(deferred)
        self.queued += 1
        if self._flush_call is None:
            self._flush_call = self._clock.callLater(0, self._flush)
        self._check_producer()
        return deferred

    def publish_many(self, topic: str, payloads, properties=None) -> Deferred:
        """Publish messages (str goes as UTF-8) as one message set; fires with their seq-ids."""
        if not payloads:
            return succeed([])
        if self._closing is not None:
            return fail(ClientClosed(message="the client is closed"))
        message_set, _count, largest = encode_payloads(payloads, properties, self._codec)
        limit = self._message_limit(topic)
        if limit is not None and largest > limit:
            return fail(MessageTooLarge(message=f"a message of {largest} bytes exceeds the limit of {limit}"))
        return self.publish_set(topic, message_set)

    def publish_set(self, topic: str, message_set: bytes) -> Deferred:
        """Publish a message set already encoded (hedwig.protocol.messageset, plain or
        compressed: as a hub stores it) as it is; fires with its seq-ids. The hub checks
        it (MessageSetError statuses). A hub handing a set on to the topic's owner uses it."""
        if self._closing is not None:
            return fail(ClientClosed(message="the client is closed"))
        count = message_set_count(message_set)
        self.in_flight += count
        d = self._publish_set(topic, message_set, count)

        def done(result):
            self.in_flight -= count
            self._check_producer()
            self._check_idle()
            return result

        d.addBoth(done)
        return d.addCallback(lambda published: list(range(published.first_seq, published.last_seq + 1)))

    def _message_limit(self, topic):
        protocol = self._protocols.get(self._routes.address(topic))
        return None if protocol is None or protocol.hello is None else protocol.hello.max_message_bytes

    def _flush(self) -> None:
        self._flush_call = None
        batches, self._batches = self._batches, {}
        self._waiting.extend(batches.items())
        self._send_waiting()

    def _send_waiting(self) -> None:
        waiting = self._waiting
        while waiting and self.in_flight < self.max_in_flight:
            topic, batch = waiting.popleft()
            count = len(batch.payloads)
            self.queued -= count
            self.in_flight += count
            message_set = encode_published_set(batch.payloads, batch.properties, self._codec)
            d = self._publish_set(topic, message_set, count)
            d.addCallbacks(self._published, self._publish_failed, (batch,), None, (batch,))

    def _published(self, published, batch) -> None:
        self.in_flight -= len(batch.payloads)
        seq = published.first_seq
        for deferred in batch.waiters:
            deferred.callback(seq)
            seq += 1
        self._after_publish()

    def _publish_failed(self, failure, batch) -> None:
        self.in_flight -= len(batch.payloads)
        for deferred in batch.waiters:
            deferred.errback(failure)
        self._after_publish()

    def _after_publish(self) -> None:
        if self._waiting:
            self._send_waiting()
        self._check_producer()
        self._check_idle()

    # -- subscribing -----------------------------------------------------------------------

    def subscribe(
        self,
        topic: str,
        subscriber_id: str,
        handler=None,
        mode: str = "create_or_attach",
        start=None,
        window: int | None = None,
        force_attach: bool = False,
        deliver=True,
        *,
        kind: str = "exclusive",
        **options,
    ) -> Deferred:
        """Attach to (or create) a durable subscription; fires with a Subscription.

        `handler(message)` is called for each message; without one, messages go to
        `subscription.queue`. `start`: None, "earliest", "latest", a seq-id or a datetime.
        `deliver=False`: acknowledgement only (no handler); fires with an AckOnlySubscription.

        `kind="shared"`: a work queue, whose members (any number, on any connections) each
        get some of the messages: a SharedSubscription, acknowledged message by message.
        `deliver="pull"`: nothing is pushed; `fetch` asks (a PullSubscription, no
        handler). `options`: ack_timeout (seconds), max_deliveries, dead_letter_topic and
        message_bound, as the blocking client's subscribe says.
        """
        if self._closing is not None:
            return fail(ClientClosed(message="the client is closed"))
        if deliver in (False, "pull") and handler is not None:
            return fail(
                ValueError(f"a subscription with deliver={deliver!r} is pushed nothing: give no handler")
            )
        try:
            position = position_as_asked(
                self, topic, subscriber_id, mode, start, window, force_attach, deliver, kind, **options
            )
        except (TypeError, ValueError) as e:
            return fail(e)
        made = subscription_kind(position)
        if made in ("exclusive", "shared"):
            subscription = (Subscription if made == "exclusive" else SharedSubscription)(
                self, position, handler
            )
        else:
            subscription = (AckOnlySubscription if made == "ack_only" else PullSubscription)(self, position)

        def subscribed(_value):
            self._subscriptions.add(subscription)
            return subscription

        return self._subscribe(subscription).addCallback(subscribed)

    def _resubscribe_later(self, subscription, topic_moved: bool, backoff: float = 0.0) -> None:
        """Attach a subscription whose connection dropped (or whose topic moved) again,
        retrying with exponential backoff until it is attached, closed or ended."""
        if topic_moved:
            self._routes.forget(subscription.topic)
        if self._closing is not None or subscription._done:
            return

        def attempt():
            if self._closing is not None or subscription._done or subscription.attached:
                return
            d = self._subscribe(subscription)
            d.addErrback(retry_or_end)

        def retry_or_end(failure):
            if failure.check(ClientNotSubscribed):
                subscription._ended(SubscriptionClosed(message=f"the hub no longer has it: {failure.value}"))
                return None
            if failure.check(HedwigError) and not failure.check(ClientClosed):
                log.info(
                    "resubscribing {topic}/{subscriber} failed ({reason}); retrying",
                    topic=subscription.topic,
                    subscriber=subscription.subscriber_id,
                    reason=failure.getErrorMessage(),
                )
                next_backoff = min(max(backoff * 2, _BACKOFF_FIRST), _BACKOFF_MAX)
                self._resubscribe_later(subscription, False, next_backoff)
                return None
            return failure

        self._clock.callLater(backoff, attempt)

    # -- reads (read_range, and the admin reads, are in operations.py) ----------------------

    def read(self, topic: str, from_seq: int = 1, to_seq: int | None = None) -> Deferred:
        """Fires with the Messages from_seq..to_seq (None: up to the last when asked)."""
        collector = ReadCollector(topic, from_seq, to_seq)

        def step(_=None):
            asked = collector.next_range()
            if asked is None:
                return collector.messages
            return self.read_range(topic, *asked).addCallback(collector.add).addCallback(step)

        return step()

    # -- closing ---------------------------------------------------------------------------

    def close(self) -> Deferred:
        """Send every publish made so far and wait for its reply (its Deferred fires as
        usual), then close subscriptions (flushing acknowledgements) and connections.
        Publishes and subscribes after close() fail with ClientClosed."""
        if self._closing is not None:
            d = Deferred()
            self._closing.addBoth(lambda result: (d.callback(None), result)[1])
            return d
        if self._flush_call is not None and self._flush_call.active():
            self._flush_call.cancel()
            self._flush()
        idle = Deferred()
        self._idle_waiters.append(idle)
        self._check_idle()

        def close_subscriptions(_):
            return gatherResults(
                [subscription.close() for subscription in list(self._subscriptions)], consumeErrors=True
            )

        def disconnect(_):
            self._closed = True
            protocols = list(self._protocols.values())
            self._protocols.clear()
            for protocol in protocols:
                protocol.on_lost = None
            return gatherResults([p.disconnect() for p in protocols], consumeErrors=True)

        self._closing = idle.addCallback(close_subscriptions).addBoth(disconnect).addBoth(lambda _: None)
        return self.close()

    def _check_idle(self) -> None:
        if self._idle_waiters and self.in_flight == 0 and self.queued == 0:
            waiters, self._idle_waiters = self._idle_waiters, []
            for waiter in waiters:
                waiter.callback(None)
