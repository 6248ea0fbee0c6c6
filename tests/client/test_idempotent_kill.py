"""Idempotent publishing through hub crashes: a Twisted client publishes pipelined
message sets while its hub is killed (SIGKILL) and started again on the same data
directory and port, 20 times; every message is stored exactly once, in publish order.

Without idempotence the sets in flight at each kill fail with ConnectionLost (stored or
not, nobody knows); with it the client sends them again and the hub answers the ones it
stored with their first seq-ids (real hub processes, the real reactor, trial)."""

from twisted.internet import defer, reactor
from twisted.internet.task import deferLater

from hedwig.client.twisted import Client
from hedwig.testing.hubprocess import HubProcess
from tests import trial as unittest

KILLS = 20
SETS_PER_ROUND = 6
MESSAGES_PER_SET = 25


def answered(outcome) -> defer.Deferred:
    """Fires once `outcome` does, leaving its result to the test."""
    d = defer.Deferred()

    def tell(result):
        d.callback(None)
        return result

    outcome.addBoth(tell)
    return d


class IdempotentPublishThroughKills(unittest.TestCase):
    timeout = 240

    def setUp(self):
        self.hub = HubProcess(self.mktemp()).start()
        self.addCleanup(self.hub.stop)

    @defer.inlineCallbacks
    def test_every_message_once_in_order_through_twenty_sigkills(self):
        client = Client(reactor, self.hub.address, idempotent=True, timeout=30)
        yield client.connect()
        self.addCleanup(client.close)
        topic = "idempotent-kills"
        published = []  # payloads, in publish order
        outcomes = []  # Deferreds of their seq-ids, in the same order
        counter = 0
        for _round in range(KILLS):
            for set_number in range(SETS_PER_ROUND):
                for _ in range(MESSAGES_PER_SET):
                    payload = b"m%d" % counter
                    counter += 1
                    published.append(payload)
                    outcomes.append(client.publish(topic, payload))
                if set_number == 1:
                    yield answered(outcomes[-1])  # two sets answered; the next go out behind them
                else:
                    yield deferLater(reactor, 0, lambda: None)  # this turn's set goes out
            # Sets on the wire: stored or not, answered or not, when the hub dies.
            self.hub.kill()
            self.hub.restart()
        seqs = yield defer.gatherResults(outcomes)
        self.assertEqual(seqs, list(range(1, len(published) + 1)))
        self.assertGreater(client._idempotent.resends, 0)  # (the kills did catch sets in flight)
        stored = yield client.read(topic)
        self.assertEqual([m.payload for m in stored], published)
        self.assertEqual([m.seq for m in stored], list(range(1, len(published) + 1)))

    @defer.inlineCallbacks
    def test_a_producer_out_of_numbers_goes_on_as_a_new_one_in_order(self):
        client = Client(reactor, self.hub.address, idempotent=True)
        yield client.connect()
        self.addCleanup(client.close)
        client._idempotent.max_sequence = 2  # (as if 2^32 sets had been numbered)
        topic = "idempotent-renumbered"
        outcomes = []
        for i in range(10):  # ten sets: one per reactor turn
            outcomes.append(client.publish(topic, b"%d" % i))
            yield deferLater(reactor, 0, lambda: None)
        seqs = yield defer.gatherResults(outcomes)
        self.assertEqual(seqs, list(range(1, 11)))
        stored = yield client.read(topic)
        self.assertEqual([m.payload for m in stored], [b"%d" % i for i in range(10)])
        lane = client._idempotent._lanes[topic]
        self.assertNotIn(lane.producer_id, (None, client._idempotent.producer_id))
