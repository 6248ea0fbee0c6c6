"""The Twisted client: every operation returns a Deferred; one connection per hub.

    client = Client(reactor, "127.0.0.1:4080")
    await client.connect()
    seq = await client.publish("orders", b"...")
    subscription = await client.subscribe("orders", "billing", handler=on_message)

The client core (core.py) run on Deferreds: DeferredWaiting runs its steps with
Twisted's inlineCallbacks machinery, and each hub is reached through a HubProtocol
(protocol.py). Publishes are batched (batching.py): every `publish` of a topic made in
one turn of the reactor goes out as one message set, and each Deferred fires with its
own seq-id; at most `max_in_flight` messages are sent and unanswered, later ones wait
in the client, up to `max_queued`, beyond which publish fails at once with
PublishQueueFull. A producer registered with `registerProducer` is paused while the
client holds `max_in_flight` messages or more and resumed below half.

Subscriptions hand each message to a handler, or put it on a DeferredQueue
(`subscription.queue`) when no handler is given (twisted_subscriptions.py); `window`
bounds what the hub sends ahead of acknowledgements, and so what the client holds.
Requests follow redirects; after a dropped connection the client connects again (with
backoff) and resubscribes every live subscription from its last acknowledgement,
without gap or duplicate.
"""

from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol, wrapClientTLS
from twisted.internet.task import deferLater
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from hedwig.client import twisted_subscriptions
from hedwig.client.batching import Batcher
from hedwig.client.config import ClientConfig
from hedwig.client.core import ClientCore, LoopConnections
from hedwig.client.protocol import HubProtocol
from hedwig.client.twisted_subscriptions import (
    AckOnlySubscription,
    PullSubscription,
    SharedSubscription,
    Subscription,
)
from hedwig.client.waiting import NO_TURN, IWaiting
from hedwig.protocol.addresses import format_address
from hedwig.protocol.errors import CouldNotConnect, HedwigError

__all__ = ["AckOnlySubscription", "Client", "PullSubscription", "SharedSubscription", "Subscription"]

log = Logger()


class Client(ClientCore):
    """A Twisted client of one or more hubs. `reactor` gives connections and time.

    Made from a hedwig.client.config.ClientConfig (`config`), or its options as keyword
    arguments. `tls` (a hedwig.config.tls.ClientTls): reach every hub over TLS (the
    addresses name the hubs' [tls] ports), verifying its certificate; needs pyOpenSSL
    and service_identity (hedwig's `tls` extra). The files are read here (TlsError
    naming one that cannot be used); a handshake that fails makes CouldNotConnect
    saying why. `compression`: as the blocking client's.
    """

    def __init__(self, reactor, hubs=None, *, config: ClientConfig | None = None, **options):
        """`hubs` and `options` over `config`. Nothing connects before connect() (or the
        first request)."""
        config = ClientConfig.of(hubs, config, options)
        if config.tls is not None:
            from hedwig.config.tls import INSTALL_HINT, TlsError, tls_available

            if not tls_available():
                raise TlsError(INSTALL_HINT)
            config.tls.check()
        self._reactor = reactor
        self._tls_creators = {}  # host -> Twisted's client connection creator for it
        self._client_name = config.name_for("twisted")  # (said in HELLO)
        waiting = DeferredWaiting(reactor)
        super().__init__(
            config, waiting, LoopConnections(waiting, self._open), twisted_subscriptions, Batcher
        )

    def _open(self, address) -> Deferred:
        """A Deferred of a HubProtocol to `address`, HELLO answered (CouldNotConnect
        saying why not)."""
        config = self.config
        host, port = address
        endpoint = TCP4ClientEndpoint(self._reactor, host, port, timeout=config.connect_timeout)
        if config.tls is not None:
            creator = self._tls_creators.get(host)
            if creator is None:
                creator = self._tls_creators[host] = config.tls.creator(host)
            endpoint = wrapClientTLS(creator, endpoint)
        protocol = HubProtocol(self._reactor, self._client_name, config.timeout, address, config.credentials)

        def failed(failure):
            if failure.check(HedwigError):
                return failure
            return Failure(CouldNotConnect(message=f"{format_address(address)}: {failure.getErrorMessage()}"))

        d = connectProtocol(endpoint, protocol).addCallback(lambda _: protocol.ready)
        return d.addErrback(failed)

    # -- a producer held back (batching.py) ------------------------------------------------

    def registerProducer(self, producer, streaming: bool = True) -> None:
        """Pause `producer` (an IPushProducer) while the client holds max_in_flight
        messages or more; resume it below half of that."""
        self._batcher.register_producer(producer)

    def unregisterProducer(self) -> None:
        self._batcher.unregister_producer()

    # -- subscribing -----------------------------------------------------------------------

    def subscribe(self, topic: str, subscriber_id: str, handler=None, *arguments, **options) -> Deferred:
        """Attach to (or create) a durable subscription; fires with a Subscription.

        `handler(message)` is called for each message; without one, messages go to
        `subscription.queue`. A subscription with deliver=False (acknowledgement only)
        or deliver="pull" takes no handler. The other arguments (mode, start, window,
        force_attach, deliver; kind and the work-queue options) are the blocking
        client's: hedwig.client.core.ClientCore.subscribe.
        """
        make = lambda position: twisted_subscriptions.made(self, position, handler)  # noqa: E731
        return self._subscribe(make, topic, subscriber_id, arguments, options)


def _log_unless_cancelled(failure) -> None:
    if not failure.check(CancelledError):
        log.failure("steps of the Twisted client failed", failure)


class _Timer:
    """A reactor's delayed call that may be cancelled after it ran (the core does)."""

    __slots__ = ("_call",)

    def __init__(self, call):
        self._call = call

    def cancel(self) -> None:
        if self._call.active():
            self._call.cancel()


@implementer(IWaiting)
class DeferredWaiting:
    """The Twisted client's waiting: steps run by inlineCallbacks' machinery
    (Deferred.fromCoroutine takes a generator), time from the reactor."""

    background = True

    def __init__(self, clock):
        self._clock = clock

    def run(self, steps) -> Deferred:
        return Deferred.fromCoroutine(steps)

    def spawn(self, steps) -> Deferred:
        running = Deferred.fromCoroutine(steps)
        running.addErrback(_log_unless_cancelled)
        return running

    def now(self) -> float:
        return self._clock.seconds()

    def sleep(self, seconds: float) -> Deferred:
        return deferLater(self._clock, seconds)

    def call_later(self, delay: float, function, *args) -> _Timer:
        return _Timer(self._clock.callLater(delay, function, *args))

    new_result = Deferred  # (the class: publish makes one per message)

    def settle(self, result: Deferred, value) -> None:
        if not result.called:
            result.callback(value)

    def fail(self, result: Deferred, error) -> None:
        if not result.called:
            result.errback(Failure(error))

    def settle_seqs(self, results, first_seq: int) -> None:
        for result in results:
            if not result.called:
                result.callback(first_seq)
            first_seq += 1

    def fail_all(self, results, error) -> None:
        failure = Failure(error)
        for result in results:
            if not result.called:
                result.errback(failure)

    def turn(self, key):
        return NO_TURN
