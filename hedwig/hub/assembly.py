"""The one assembly of a hub: every part built and wired here, from validated settings.

`assemble_hub` is the only place that knows how the parts fit: the topic log manager
over the ledger and metadata stores, the read-ahead cache decorating every topic log
(ITopicLog), the topic manager handing those out (ITopicManager), the delivery manager
(IDeliveryManager), the Hub they serve, region relays attached through the relay seam
(IRelays) and garbage collection. HubService (the process), the twistd plugin and the
tests' harnesses all build a hub through it, so what runs in production is what is
tested. Listeners and the data directory's lock are the service's business (service.py).

    ILedgerStore + IMetadataStore -> TopicLogManager -> CachedTopicLog (cache)
        -> TopicManager [-> ZkTopicManager] -> Hub <- DeliveryManager
        ; RegionManager via Hub.attach_relays
"""

from dataclasses import dataclass

from hedwig.auth.dead_letters import OwnersDeadLetters
from hedwig.auth.settings import hub_credentials
from hedwig.cache import ReadAheadCache
from hedwig.config.rados import on_rados
from hedwig.config.settings import Config
from hedwig.delivery import DeliveryManager
from hedwig.hub.compactions import BackgroundCompaction
from hedwig.hub.core import Hub
from hedwig.hub.forwarding import OwnerPublishing
from hedwig.hub.gc import GarbageCollector
from hedwig.hub.peers import PeerClients
from hedwig.hub.topics import TopicManager
from hedwig.topiclog import TopicLogManager


@dataclass
class HubParts:
    """What assemble_hub built, for the service that runs it and for tests that look in."""

    hub: Hub
    topic_logs: TopicLogManager
    cache: ReadAheadCache
    topics: object  # ITopicManager: a TopicManager, or a ZkTopicManager over one
    delivery: DeliveryManager
    gc: GarbageCollector
    compaction: BackgroundCompaction = None  # of the compacted topics
    relays: object = None  # IRelays (hedwig.region.RegionManager) when the hub relays
    forwarding: object = None  # OwnerPublishing (dead letters) in a region of several hubs


def assemble_hub(
    config: Config,
    reactor,
    *,
    ledgers,
    metadata,
    name: str = "",
    relays: bool = True,
    relay_reactor=None,
    data_dir: str | None = None,
    rng=None,
    zk_region=None,
) -> HubParts:
    """A hub over `ledgers` (ILedgerStore) and `metadata` (IMetadataStore), on `reactor`
    (its clock, and its threads where parts use them; a task.Clock in unit tests).

    `relays`: attach region relays (hedwig.region), which link to the parent through
    `relay_reactor` (default `reactor`) and keep the region's path under `data_dir`.
    `name`: the hub's "host:port", once known. `zk_region`: a hedwig.hub.zk_region.ZkRegion
    when the hub is one of a region of several (its topic manager owns topics through
    ZooKeeper; `metadata` is its store)."""
    topic_logs = TopicLogManager(ledgers, metadata, config.log, config.region.name, reactor)
    cache = ReadAheadCache(reactor, config.cache)
    topics = TopicManager(topic_logs, metadata, cache)
    if zk_region is not None:
        topics = zk_region.topic_manager(topics, topic_logs)
    delivery = DeliveryManager(metadata, reactor, config.delivery)
    hub = Hub(topics=topics, cache=cache, delivery=delivery, config=config, clock=reactor, name=name)
    hub.topic_logs = topic_logs
    parts = HubParts(
        hub=hub,
        topic_logs=topic_logs,
        cache=cache,
        topics=topics,
        delivery=delivery,
        gc=GarbageCollector(topics, delivery, reactor, config.log.gc_interval_s),
        compaction=BackgroundCompaction(topics, reactor, config.log.compaction_interval_s),
    )
    hub.compaction = parts.compaction
    if config.auth.enabled:
        hub.auth = _access_gate(config, reactor)
    # Dead letters go through the one publish path (in a region, on their topic's owner,
    # another hub, if need be), as their subscription's owner may (hedwig/auth/dead_letters.py).
    dead_letters = hub.publish
    if zk_region is not None:
        topics.on_release = delivery.release_topic  # subscribers move with their topic
        hub.peers = PeerClients(hub, reactor, hub_credentials(config))
        parts.forwarding = OwnerPublishing(hub, hub.peers)
        dead_letters = parts.forwarding.publish
    authenticator = hub.auth.authenticator if hub.auth is not None else None
    delivery.use_publisher(OwnersDeadLetters(dead_letters, authenticator, hub.topics).publish)
    if relays:
        from hedwig.region.manager import RegionManager  # (the region package builds on the hub)

        parts.relays = RegionManager(hub, config, relay_reactor or reactor, data_dir=data_dir, rng=rng)
        hub.attach_relays(parts.relays)
    return parts


def ledger_store(config: Config, reactor, ledgers_dir: str, *, shared: bool = False):
    """The ledger store `[ledger] store` names: page files under `ledgers_dir` (mmap; on a
    region's shared storage root when `shared`), or a RADOS pool ([rados]; a region's hubs
    share the pool: nothing under ledgers_dir), which must be connected (its connect(), a
    Deferred) before the hub is assembled over it."""
    if on_rados(config):
        from hedwig.ledger.rados_store import RadosLedgerStore

        return RadosLedgerStore.from_settings(config.rados, reactor)
    if shared:
        from hedwig.ledger.shared_store import SharedLedgerStore

        return SharedLedgerStore.from_settings(ledgers_dir, config.ledger, reactor)
    from hedwig.ledger.mmap_store import MmapLedgerStore

    return MmapLedgerStore.from_settings(ledgers_dir, config.ledger, reactor)


def _access_gate(config: Config, reactor):
    """The IAuthorizer of a hub with [auth] enabled: the users file's authenticator."""
    from hedwig.auth.authenticator import UsersFileAuthenticator
    from hedwig.auth.gate import AccessGate
    from hedwig.auth.throttle import LoginThrottle
    from hedwig.auth.waiting_room import WaitingRoom

    auth = config.auth
    throttle = LoginThrottle(
        reactor,
        window_s=auth.failure_window_s,
        max_failures_per_source=auth.max_failures_per_source,
        max_failures_per_user=auth.max_failures_per_user,
    )
    authenticator = UsersFileAuthenticator(
        auth.users_file,
        reactor,
        max_concurrent=auth.max_concurrent_checks,
        max_waiting=auth.max_waiting_checks,
        allow_anonymous=auth.allow_anonymous,
        throttle=throttle,
    )
    room = WaitingRoom(auth.max_unauthenticated, known_good=throttle.is_known_good)
    return AccessGate(authenticator, reactor, auth.failure_delay_s, room, hub_user=auth.hub_user)
