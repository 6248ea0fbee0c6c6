"""The asyncio client: every operation is a coroutine; one connection per hub.

    async with Client("127.0.0.1:4080") as client:
        seq = await client.publish("orders", b"...")
        async with await client.subscribe("orders", "billing") as subscription:
            async for message in subscription:
                ...
                await subscription.ack(message)

The client core (core.py) run as coroutines: AsyncioWaiting drives its steps, awaiting
what they wait for, and each hub is reached through an AioHubProtocol
(aio_protocol.py), with the same positions, redirect rule and typed errors as the
blocking and Twisted clients. Publishes are batched as the Twisted client batches them
(batching.py): every `publish` of a topic made before the event loop runs again goes
out as one message set (one PUBLISH, one stored entry), and each caller gets its own
seq-id; at most `max_in_flight` messages are sent and unanswered, later ones wait their
turn, up to `max_queued`. Requests follow redirects; after a lost connection the client
connects again (with backoff) and resubscribes every live subscription from its last
acknowledgement.
"""

import asyncio
import inspect
import logging

from zope.interface import implementer

from hedwig.client import aio_subscriptions
from hedwig.client.aio_protocol import AioHubProtocol
from hedwig.client.aio_subscriptions import (
    AckOnlySubscription,
    PullSubscription,
    SharedSubscription,
    Subscription,
)
from hedwig.client.batching import Batcher
from hedwig.client.config import ClientConfig
from hedwig.client.core import ClientCore, LoopConnections
from hedwig.client.waiting import NO_TURN, IWaiting
from hedwig.protocol.addresses import format_address
from hedwig.protocol.errors import CouldNotConnect

__all__ = ["AckOnlySubscription", "Client", "PullSubscription", "SharedSubscription", "Subscription"]

log = logging.getLogger(__name__)  # (the asyncio client imports no Twisted)


class Client(ClientCore):
    """An asyncio client of one or more hubs (the first that answers is asked first).

    Made from a hedwig.client.config.ClientConfig (`config`), or its options as keyword
    arguments. `tls` (a hedwig.config.tls.ClientTls): reach every hub over TLS (the
    addresses name the hubs' [tls] ports), verifying its certificate with the standard
    library's ssl. `compression`: as the blocking client's.
    """

    def __init__(self, hubs=None, *, config: ClientConfig | None = None, **options):
        """`hubs` and `options` over `config`. Nothing connects before connect() (or
        `async with`, or the first request)."""
        config = ClientConfig.of(hubs, config, options)
        self._ssl_context = config.tls.ssl_context() if config.tls is not None else None
        self._client_name = config.name_for("aio")  # (said in HELLO)
        waiting = AsyncioWaiting()
        super().__init__(config, waiting, LoopConnections(waiting, self._open), aio_subscriptions, Batcher)

    async def __aenter__(self):
        await self.connect()
        return self

    async def __aexit__(self, *exc_info):
        await self.close()

    async def _open(self, address) -> AioHubProtocol:
        """An AioHubProtocol to `address`, HELLO answered (CouldNotConnect saying why not)."""
        config = self.config
        loop = asyncio.get_running_loop()
        host, port = address
        tls = {}
        if self._ssl_context is not None:
            tls = {"ssl": self._ssl_context, "server_hostname": config.tls.name_for(host)}
        where = format_address(address)
        try:
            _transport, protocol = await asyncio.wait_for(
                loop.create_connection(
                    lambda: AioHubProtocol(
                        loop, address, self._client_name, config.timeout, config.credentials
                    ),
                    host,
                    port,
                    **tls,
                ),
                config.connect_timeout,
            )
        except TimeoutError:
            raise CouldNotConnect(message=f"{where}: no answer in {config.connect_timeout} s") from None
        except OSError as e:
            raise CouldNotConnect(message=f"{where}: {e.strerror or e}") from None
        try:
            await asyncio.wait_for(asyncio.shield(protocol.ready), config.connect_timeout)
        except TimeoutError:
            protocol.close()  # connected, but HELLO went unanswered
            raise CouldNotConnect(
                message=f"{where}: HELLO unanswered in {config.connect_timeout} s"
            ) from None
        return protocol

    async def publish(self, topic: str, payload, properties=None, key=None, **schedule) -> int:
        """Publish one message (bytes, or str sent as UTF-8); its seq-id once stored
        (ClientCore.publish, as a coroutine: `properties`, `key`, `deliver_after`,
        `deliver_at` and `ttl` as it takes them)."""
        return await super().publish(topic, payload, properties, key, **schedule)


@implementer(IWaiting)
class AsyncioWaiting:
    """The asyncio client's waiting: a coroutine runs the steps, awaiting each Future or
    coroutine they yield; time and timers from the running loop."""

    background = True

    def __init__(self):
        self._tasks = set()  # spawned steps running (asyncio keeps only weak references)

    async def run(self, steps):
        """Drive the steps: await what they yield that is awaitable, hand the rest back."""
        try:
            yielded = steps.send(None)
            while True:
                if not inspect.isawaitable(yielded):
                    yielded = steps.send(yielded)
                    continue
                try:
                    answer = await yielded
                except Exception as e:
                    yielded = steps.throw(e)
                else:
                    yielded = steps.send(answer)
        except StopIteration as done:
            return done.value

    def spawn(self, steps) -> asyncio.Task:
        task = asyncio.ensure_future(self.run(steps))
        self._tasks.add(task)
        task.add_done_callback(self._spawned_done)
        return task

    def _spawned_done(self, task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("steps of the asyncio client failed", exc_info=task.exception())

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def sleep(self, seconds: float):
        return asyncio.sleep(seconds)

    def call_later(self, delay: float, function, *args):
        return asyncio.get_running_loop().call_later(delay, function, *args)

    new_result = asyncio.Future  # (of the running loop; publish makes one per message)

    def settle(self, result, value) -> None:
        if not result.done():
            result.set_result(value)

    def fail(self, result, error) -> None:
        if not result.done():
            result.set_exception(error)

    def settle_seqs(self, results, first_seq: int) -> None:
        for result in results:
            if not result.done():
                result.set_result(first_seq)
            first_seq += 1

    def fail_all(self, results, error) -> None:
        for result in results:
            if not result.done():
                result.set_exception(error)

    def turn(self, key):
        return NO_TURN
