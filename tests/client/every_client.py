"""The three clients behind one blocking face, so that one black-box suite runs against each.

The blocking client is called as it is. The Twisted client runs on a reactor of its own
(a SelectReactor that is not the global one, so trial's tests are untouched) in a
thread; the asyncio client on an event loop of its own in a thread. Each adapter waits
for its client's Deferred or coroutine with a deadline, so a test fails instead of
hanging.
"""

import asyncio
import threading

from twisted.internet import threads
from twisted.internet.defer import Deferred
from twisted.internet.defer import TimeoutError as DeferredTimeout
from twisted.internet.selectreactor import SelectReactor

from hedwig.client import Client as BlockingClient
from hedwig.client.aio import Client as AioClient
from hedwig.client.twisted import Client as TwistedClient

WAIT_S = 30.0


class Blocking:
    name = "blocking"

    def __init__(self, address, **options):
        self.client = BlockingClient(address, **options).connect()

    def call(self, method, *args, **kwargs):
        return getattr(self.client, method)(*args, **kwargs)

    def subscribe(self, *args, **kwargs):
        return _BlockingSubscription(self.client.subscribe(*args, **kwargs))

    def close(self):
        self.client.close()


class _BlockingSubscription:
    def __init__(self, subscription):
        self.subscription = subscription

    def receive(self, timeout=WAIT_S):
        return self.subscription.receive(timeout=timeout)

    def ack(self, message):
        self.subscription.ack(message)

    def nack(self, message):
        self.subscription.nack(message)

    def fetch(self, max_messages, timeout):
        return self.subscription.fetch(max_messages, timeout)

    def close(self):
        self.subscription.close()


class Twisted:
    """The Twisted client on a private reactor running in a thread."""

    name = "twisted"

    def __init__(self, address, **options):
        self.reactor = SelectReactor()
        self._thread = threading.Thread(target=self.reactor.run, kwargs={"installSignalHandlers": False})
        self._thread.daemon = True
        self._thread.start()
        self.client = TwistedClient(self.reactor, address, **options)
        self.wait(self.client.connect)

    def wait(self, make, *args, **kwargs):
        """make(*args) on the reactor thread; its Deferred's result here (or its error)."""

        def bounded():
            d = make(*args, **kwargs)
            if isinstance(d, Deferred):
                d.addTimeout(WAIT_S, self.reactor)
            return d

        return threads.blockingCallFromThread(self.reactor, bounded)

    def call(self, method, *args, **kwargs):
        return self.wait(getattr(self.client, method), *args, **kwargs)

    def subscribe(self, *args, **kwargs):
        return _TwistedSubscription(self, self.call("subscribe", *args, **kwargs))

    def close(self):
        try:
            self.wait(self.client.close)
        finally:
            self.reactor.callFromThread(self.reactor.stop)
            self._thread.join(WAIT_S)


class _TwistedSubscription:
    def __init__(self, owner, subscription):
        self.owner = owner
        self.subscription = subscription

    def receive(self, timeout=WAIT_S):
        reactor = self.owner.reactor

        def get():
            d = self.subscription.queue.get()
            d.addTimeout(timeout, reactor)
            return d.addErrback(lambda f: None if f.check(DeferredTimeout) else f)

        return threads.blockingCallFromThread(reactor, get)

    def ack(self, message):
        self.owner.wait(self.subscription.ack, message)

    def nack(self, message):
        self.owner.wait(self.subscription.nack, message)

    def fetch(self, max_messages, timeout):
        return self.owner.wait(self.subscription.fetch, max_messages, timeout)

    def close(self):
        self.owner.wait(self.subscription.close)


class Aio:
    """The asyncio client on an event loop of its own, running in a thread."""

    name = "asyncio"

    def __init__(self, address, **options):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.client = AioClient(address, **options)
        self.wait(self.client.connect())

    def wait(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(WAIT_S)

    def call(self, method, *args, **kwargs):
        return self.wait(getattr(self.client, method)(*args, **kwargs))

    def subscribe(self, *args, **kwargs):
        return _AioSubscription(self, self.call("subscribe", *args, **kwargs))

    def close(self):
        try:
            self.wait(self.client.close())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(WAIT_S)
            self.loop.close()


class _AioSubscription:
    def __init__(self, owner, subscription):
        self.owner = owner
        self.subscription = subscription

    def receive(self, timeout=WAIT_S):
        return self.owner.wait(self.subscription.receive(timeout=timeout))

    def ack(self, message):
        self.owner.wait(self.subscription.ack(message))

    def nack(self, message):
        self.owner.wait(self.subscription.nack(message))

    def fetch(self, max_messages, timeout):
        return self.owner.wait(self.subscription.fetch(max_messages, timeout))

    def close(self):
        self.owner.wait(self.subscription.close())


CLIENTS = (Blocking, Twisted, Aio)
