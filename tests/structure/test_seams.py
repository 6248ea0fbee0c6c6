"""Every seam of the hub is a declared interface, and what the hub is built from provides it."""

from twisted.internet.task import Clock
from zope.interface.verify import verifyClass, verifyObject

from hedwig.cache import CachedTopicLog, ICachedTopicLog, ReadAheadCache
from hedwig.client import aio_subscriptions, blocking_subscriptions, twisted_subscriptions
from hedwig.client.blocking import Subscription as BlockingSubscription
from hedwig.client.twisted_subscriptions import Subscription as TwistedSubscription
from hedwig.delivery import DeliveryManager
from hedwig.delivery.interface import IDeliveryManager, ISharedDeliveryChannel
from hedwig.hub.connection import HubConnection
from hedwig.hub.interface import ITopicManager
from hedwig.hub.relays import IRelays
from hedwig.hub.topics import TopicManager
from hedwig.protocol.messageset import encode_message_set
from hedwig.protocol.session import ISharedSubscriber, ISubscriber
from hedwig.region.manager import RegionManager
from hedwig.region.session import RelaySubscription
from hedwig.testing.deferreds import fired
from hedwig.topiclog.interface import ITopicLog
from hedwig.topiclog.topic_log import TopicLog
from tests.hub.harness import HubHarness


def test_the_parts_declare_their_interfaces(tmp_path):
    assert verifyClass(ITopicLog, TopicLog)
    assert verifyClass(ICachedTopicLog, CachedTopicLog)
    assert verifyClass(IDeliveryManager, DeliveryManager)
    assert verifyClass(ITopicManager, TopicManager)
    assert verifyClass(IRelays, RegionManager)
    # Every subscription a protocol session hands frames to: both clients' and the link's.
    for subscription in (BlockingSubscription, TwistedSubscription, RelaySubscription):
        assert verifyClass(ISubscriber, subscription)
    # Shared and pull subscriptions (work queues) of all three clients, and the connection
    # that holds their members on the hub.
    for module in (blocking_subscriptions, twisted_subscriptions, aio_subscriptions):
        for subscription in (module.SharedSubscription, module.PullSubscription):
            assert verifyClass(ISharedSubscriber, subscription)

    # The connection's IDeliveryChannel methods are its delivery flow's, handed over as
    # they are when it is made (no call in between on the delivery path): an object's.
    assert verifyObject(ISharedDeliveryChannel, HubConnection(HubHarness(tmp_path).hub))


def test_the_cache_decorates_the_topic_log_and_hands_out_one_decorator_per_log(tmp_path):
    harness = HubHarness(tmp_path)
    topic_log = fired(harness.topics.acquire("t"))
    assert verifyObject(ICachedTopicLog, topic_log)
    assert ITopicLog.providedBy(topic_log.inner)
    assert harness.topics.get("t") is topic_log
    entry = fired(harness.hub.publish("t", encode_message_set([b"x"])))
    assert topic_log.get(entry.first_seq) is entry, "the published entry is in the cache"


def test_a_decorator_is_made_anew_for_a_new_log_of_the_topic():
    cache = ReadAheadCache(Clock())

    class Log:  # (what a decorator takes of its log: its name, appends and acknowledgements)
        topic = "t"
        append = append_now = acknowledge_to = staticmethod(lambda *args, **options: None)

    first, second = Log(), Log()
    assert cache.wrap(first) is cache.wrap(first)
    assert cache.wrap(second) is not cache.wrap(first)
