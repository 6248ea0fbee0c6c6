"""The Twisted client against real hub processes, on the real reactor (trial)."""

from twisted.internet import defer, reactor

from hedwig.client.errors import InvalidTopic, TooManyRedirects
from hedwig.client.twisted import Client
from hedwig.testing.hubprocess import HubProcess
from tests import trial as unittest
from tests.client.redirector import Redirector


class HubTestCase(unittest.TestCase):
    timeout = 60

    def setUp(self):
        self.hub = HubProcess(self.mktemp()).start()
        self.addCleanup(self.hub.stop)

    @defer.inlineCallbacks
    def client(self, address=None, **options):
        client = Client(reactor, address or self.hub.address, **options)
        yield client.connect()
        self.addCleanup(client.close)
        return client

    def wait_for(self, predicate, what):
        """A Deferred that fires once predicate() holds, checked after each reactor turn
        that delivered something (the handler calls `self.poke`)."""
        d = defer.Deferred()
        self._waiting = (predicate, d, what)
        self.poke()
        return d

    def poke(self, *_):
        waiting = getattr(self, "_waiting", None)
        if waiting is not None and waiting[0]():
            self._waiting = None
            waiting[1].callback(None)


class PublishSubscribe(HubTestCase):
    @defer.inlineCallbacks
    def test_many_publishes_in_flight_get_dense_seq_ids_in_call_order(self):
        client = yield self.client(max_in_flight=1000)
        got = []

        def handler(message):
            got.append(message)
            subscription.ack(message)
            self.poke()

        subscription = yield client.subscribe("inflight", "s", handler=handler)
        seqs = yield defer.gatherResults([client.publish("inflight", b"%d" % i) for i in range(5000)])
        self.assertEqual(seqs, list(range(1, 5001)))
        yield self.wait_for(lambda: len(got) == 5000, "every message")
        self.assertEqual([m.seq for m in got], list(range(1, 5001)))
        self.assertEqual([m.payload for m in got[:3]], [b"0", b"1", b"2"])

    @defer.inlineCallbacks
    def test_publish_many_and_a_queue_subscription(self):
        client = yield self.client()
        subscription = yield client.subscribe("queue", "s", start="earliest")
        seqs = yield client.publish_many("queue", [b"a", b"b", b"c"])
        self.assertEqual(seqs, [1, 2, 3])
        messages = []
        for _ in range(3):
            message = yield subscription.queue.get()
            subscription.ack(message)
            messages.append(message.payload)
        self.assertEqual(messages, [b"a", b"b", b"c"])
        info = yield client.describe("queue")
        self.assertEqual(info["last_seq"], 3)
        read = yield client.read("queue")
        self.assertEqual([m.seq for m in read], [1, 2, 3])

    @defer.inlineCallbacks
    def test_errors_are_typed(self):
        client = yield self.client()
        with self.assertRaises(InvalidTopic):
            yield client.publish("not a topic", b"x")
        seq = yield client.publish("fine", b"x")
        self.assertEqual(seq, 1)


class Reconnect(HubTestCase):
    @defer.inlineCallbacks
    def test_a_subscription_resumes_after_the_hub_is_killed_and_restarted(self):
        client = yield self.client(ack_every=10)
        got = []

        def handler(message):
            got.append(message.seq)
            subscription.ack(message)
            self.poke()

        subscription = yield client.subscribe("crash", "s", handler=handler, window=20)
        yield client.publish_many("crash", [b"x"] * 100)
        yield self.wait_for(lambda: len(got) == 100, "the first hundred")
        self.hub.kill()
        self.hub.restart()
        # The subscription reconnects on its own; publishing reconnects on demand.
        publisher = yield self.client()
        yield publisher.publish_many("crash", [b"y"] * 100)
        yield self.wait_for(lambda: len(got) == 200, "the second hundred")
        self.assertEqual(got, list(range(1, 201)))
        self.assertTrue(subscription.attached)


class Redirects(HubTestCase):
    @defer.inlineCallbacks
    def test_a_redirect_is_followed(self):
        redirector = Redirector(self.hub.address).__enter__()
        self.addCleanup(redirector.__exit__)
        client = yield self.client(redirector.address)
        seq = yield client.publish("elsewhere", b"x")
        self.assertEqual(seq, 1)

    @defer.inlineCallbacks
    def test_a_redirect_loop_fails(self):
        a = Redirector().__enter__()
        b = Redirector(a.address).__enter__()
        a.owner = b.address
        self.addCleanup(a.__exit__)
        self.addCleanup(b.__exit__)
        client = yield self.client(a.address)
        with self.assertRaises(TooManyRedirects):
            yield client.publish("loop", b"x")
