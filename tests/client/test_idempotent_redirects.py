"""Idempotent publishing follows redirects in all three clients: a hub that owns nothing
(tests/client/redirector.py) sends every request to the real owner (a hub process); the
client asks it for a producer id, is redirected, and its numbered sets are stored at the
owner once, in order."""

import asyncio

from twisted.internet import defer, reactor

from hedwig.client import Client as BlockingClient
from hedwig.client.aio import Client as AioClient
from hedwig.client.twisted import Client as TwistedClient
from hedwig.protocol import Op
from tests import trial as unittest
from tests.client.redirector import Redirector


def test_the_blocking_client_publishes_through_a_redirect(hub):
    with Redirector(hub.address) as redirector, BlockingClient(redirector.address, idempotent=True) as client:
        first = client.publish_many("idem-redirect-blocking", [b"a", b"b"])
        second = client.publish("idem-redirect-blocking", b"c")
        stored = client.read("idem-redirect-blocking")
    assert redirector.requests[0] is Op.INIT_PRODUCER  # (redirected; the topic's owner asked since)
    assert first == [1, 2] and second == 3
    assert [m.payload for m in stored] == [b"a", b"b", b"c"]


def test_the_asyncio_client_publishes_through_a_redirect(hub):
    async def scenario(address):
        async with AioClient(address, idempotent=True) as client:
            seqs = await asyncio.gather(*(client.publish("idem-redirect-aio", b"%d" % i) for i in range(50)))
            return seqs, await client.read("idem-redirect-aio")

    with Redirector(hub.address) as redirector:
        seqs, stored = asyncio.run(asyncio.wait_for(scenario(redirector.address), 60))
    assert redirector.requests[0] is Op.INIT_PRODUCER  # (redirected; the topic's owner asked since)
    assert seqs == list(range(1, 51))
    assert [m.payload for m in stored] == [b"%d" % i for i in range(50)]


class TwistedRedirect(unittest.TestCase):
    timeout = 60

    def setUp(self):
        from hedwig.testing.hubprocess import HubProcess

        self.hub = HubProcess(self.mktemp()).start()
        self.addCleanup(self.hub.stop)
        self.redirector = Redirector(self.hub.address).__enter__()
        self.addCleanup(self.redirector.__exit__)

    @defer.inlineCallbacks
    def test_the_twisted_client_publishes_through_a_redirect(self):
        client = TwistedClient(reactor, self.redirector.address, idempotent=True)
        yield client.connect()
        self.addCleanup(client.close)
        seqs = yield defer.gatherResults([client.publish("idem-redirect-tw", b"%d" % i) for i in range(50)])
        stored = yield client.read("idem-redirect-tw")
        self.assertEqual(self.redirector.requests[0], Op.INIT_PRODUCER)  # (redirected, then the owner)
        self.assertEqual(seqs, list(range(1, 51)))
        self.assertEqual([m.payload for m in stored], [b"%d" % i for i in range(50)])
