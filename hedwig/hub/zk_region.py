"""A hub's membership of a region of several hubs on ZooKeeper: the parts, built from
`[zookeeper]`, and their lifecycle around the hub's (HubService calls it).

    ZkSession (kazoo, answers on the reactor)  -- hedwig.meta.zk_session
      ZkMetadataStore (IMetadataStore)          -- hedwig.meta.zk_store
      HubRegistry (this hub's znode; the view)  -- zk_hubs.py
      ZkTopicManager (ITopicManager)            -- zk_topics.py
    SharedLedgerStore (the shared storage root) -- hedwig.ledger.shared_store
      or RadosLedgerStore (one RADOS pool)      -- hedwig.ledger.rados_store

Start: connect (one clear line and exit 1 when no server answers within
`connect_timeout_s`), make sure the root is this region's (two regions sharing one root
are refused: each would take the other's topics for its own), create the tree's
branches; then, once the hub listens and knows its address, register it. Stop: deregister
and close the session, whose end deletes every owner znode still held.
"""

import json
import time

from twisted.internet.defer import inlineCallbacks
from twisted.logger import Logger

from hedwig.config.zookeeper import server_list
from hedwig.hub.zk_hubs import HubRegistry
from hedwig.hub.zk_topics import ZkTopicManager
from hedwig.meta.interface import MetadataError
from hedwig.meta.zk_layout import LAYOUT_VERSION
from hedwig.meta.zk_session import ZkSession, kazoo_client
from hedwig.meta.zk_store import ZkMetadataStore, translate


class RootTaken(MetadataError):
    """The ZooKeeper root belongs to another region (or is not a hedwig region's)."""


class ZkRegion:
    log = Logger()

    def __init__(self, config, reactor):
        zk = config.zookeeper
        self.config = config
        self.reactor = reactor
        self.servers = server_list(zk)
        self.region = config.region.name
        self.session = ZkSession(
            kazoo_client(self.servers, zk.session_timeout_ms), reactor, servers=self.servers
        )
        self.store = ZkMetadataStore(self.session, zk.root)
        self.registry = HubRegistry(
            self.session, self.store.layout, reactor, name="", region=self.region, load=self._load
        )
        self.topics = None  # the ZkTopicManager, once the hub is assembled
        self.ledgers = None
        self.hub = None
        self._rate_mark = (time.monotonic(), 0)
        self._rate = 0.0

    @property
    def root(self) -> str:
        return self.store.layout.root

    def ledger_store(self, data_dir: str):
        """The region's ledgers: under the shared storage root, or in the region's RADOS
        pool ([ledger] store = rados), which its hubs share instead."""
        from hedwig.hub.assembly import ledger_store

        self.ledgers = ledger_store(self.config, self.reactor, data_dir, shared=True)
        return self.ledgers

    def topic_manager(self, local, topic_logs) -> ZkTopicManager:
        self.topics = ZkTopicManager(
            local,
            topic_logs,
            session=self.session,
            store=self.store,
            registry=self.registry,
            clock=self.reactor,
            ledgers=self.ledgers,
        )
        return self.topics

    def _load(self):
        """(topics owned, messages published per second since the last time asked)."""
        owned = self.topics.load if self.topics is not None else 0
        if self.hub is not None:
            now, published = time.monotonic(), self.hub.stats.messages_published
            then, before = self._rate_mark
            if now - then >= 1.0:
                self._rate = (published - before) / (now - then)
                self._rate_mark = (now, published)
        return owned, self._rate

    # -- start and stop ---------------------------------------------------------------------

    @inlineCallbacks
    def connect(self):
        """Connect, check the root is this region's, make the tree's branches."""
        yield self.session.start(self.config.zookeeper.connect_timeout_s)
        self.log.info(
            "ZooKeeper {servers}: session {session} ({timeout} ms), region {region} under {root}",
            servers=self.servers,
            session=self.session.session_id,
            timeout=self.config.zookeeper.session_timeout_ms,
            region=self.region,
            root=self.root,
        )
        yield self._claim_root().addErrback(translate)
        yield self.store.ensure_layout()

    @inlineCallbacks
    def _claim_root(self):
        """The root's data names its region: created with this one's, or refused when it
        names another (or holds something else)."""
        from kazoo.exceptions import BadVersionError, NodeExistsError

        mine = json.dumps({"region": self.region, "layout": LAYOUT_VERSION}).encode("utf-8")
        for _attempt in range(3):
            try:
                yield self.session.call("create", self.root, mine, makepath=True)
                return
            except NodeExistsError:
                pass
            data, stat = yield self.session.call("get", self.root)
            if not data:  # made by hand, or as a parent: this region takes it
                try:
                    yield self.session.call("set", self.root, mine, stat.version)
                    return
                except BadVersionError:
                    continue
            try:
                region = json.loads(data.decode("utf-8"))["region"]
            except (ValueError, TypeError, KeyError, AttributeError):
                raise RootTaken(
                    f"ZooKeeper root {self.root} holds something other than a hedwig region: give"
                    " [zookeeper] root a path of this region's own"
                ) from None
            if region != self.region:
                raise RootTaken(
                    f"ZooKeeper root {self.root} belongs to region {region!r}, not {self.region!r}:"
                    " two regions cannot share a root; give each its own [zookeeper] root"
                    + self._unnamed_hint(region)
                )
            return
        raise RootTaken(f"ZooKeeper root {self.root} kept changing while this hub read it")

    def _unnamed_hint(self, recorded: str) -> str:
        """For a hub named after its root ([region] name not set), how to join the region
        that root records (one whose hubs were named otherwise, or before names were
        taken from roots: "standalone")."""
        if self.region != self.root.rsplit("/", 1)[-1]:
            return ""
        return f" (a hub of region {recorded!r} on this root: set [region] name = {recorded})"

    def joined(self, hub, name: str, tls_port=None):
        """The hub listens as `name` ("host:port"): register it. Deferred."""
        self.hub = hub
        self.registry.name = name
        self.registry.tls_port = tls_port
        self.registry.http = hub.http_url
        if self.ledgers is not None:
            self.ledgers.writer = name
        registered = self.registry.register()
        if self.topics is not None:  # (topics handed to this hub by rebalancing: claimed as they come)
            registered.addCallback(lambda _: self.topics.watch_handoffs())
        return registered

    @inlineCallbacks
    def leave(self):
        """Deregister and close the session (its owner znodes go with it)."""
        self.registry.stop()
        try:
            yield self.registry.deregister()
        finally:
            yield self.session.stop()
