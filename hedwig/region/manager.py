"""The region manager: this hub's place in the region tree, and every relay through it.

It holds the region's interest (interest.py, loaded from the metadata store at start and
kept up to date by the delivery manager's subscription notices), the link to the parent
region (link.py, session.py) when there is one, the links of child regions
(children.py), and the inboxes every relayed entry goes through (inbox.py). The hub
calls it for REGION_LINK and RELAY_PUBLISH, and for the relay rows of DESCRIBE_TOPIC and
STATS; the delivery manager asks it which entries a relay subscriber must not be sent.

A relay subscriber `__region__N` is sent every entry whose `via` is not N: an entry goes
to each neighbour except the one it came from, so in a tree every region receives it
once, and per origin in origin order (each region stores an origin's entries in the
order it received them, and a link delivers in log order).
"""

from twisted.internet.defer import Deferred, inlineCallbacks, maybeDeferred, succeed
from twisted.internet.task import deferLater
from twisted.logger import Logger
from zope.interface import implementer

from hedwig.concurrency.deferreds import Waiters
from hedwig.config.tls_settings import parent_tls
from hedwig.hub.relays import IRelays
from hedwig.protocol.entry import decode_entry_header
from hedwig.protocol.ops import Op
from hedwig.protocol.requests import RequestRefused, encode_published
from hedwig.protocol.responses import response_frame
from hedwig.protocol.status import Status
from hedwig.region.children import Children
from hedwig.region.entries import via_filter
from hedwig.region.inbox import Inboxes
from hedwig.region.interest import InterestTable
from hedwig.region.options import TopicOptions
from hedwig.region.ownership import RelayOwnership
from hedwig.region.parents import ParentLinks
from hedwig.region.path import RegionPath
from hedwig.region.settings import relay_peer, relay_subscriber_id
from hedwig.region.wire import decode_relay_publish

_logger = Logger()

_LOAD_STEP = 500  # topics whose subscriptions are listed per reactor turn at start
# A hub that released a topic waits this long before it claims the topic's relays again
# (the others and the topic's requests place it first).
KEEP_AFTER_RELEASE_S = 5.0

# A relay subscription's cursor state (hedwig.delivery.cursor), as a relay row says it.
_RELAY_STATES = {
    "waiting": "relaying (caught up)",
    "delivering": "relaying",
    "window_full": "relaying (window full)",
    "retrying": "relaying (retrying a read)",
    "paused": "paused: the peer is not reading",
    "detached": "detached",
    "idle": "relaying",
}


@implementer(IRelays)
class RegionManager:
    """This hub's relaying between regions: the hub's IRelays (hedwig.hub.relays), attached
    by the assembly with Hub.attach_relays."""

    def __init__(self, hub, config, reactor, *, data_dir: str | None = None, rng=None):
        self.hub = hub
        self.settings = config.region
        self.name = config.region.name
        self.parent = config.region.parent
        self.reactor = reactor
        self.path = RegionPath(self.name, self.parent, data_dir)
        self.interest = InterestTable()
        self.inboxes = Inboxes(hub, self.name, reactor)
        self.ownership = RelayOwnership(hub)  # which topics' relays run here
        self.ownership.listen(self._claimed, self._released)
        self.children = Children(self)
        self.options = TopicOptions(self)  # a topic's compaction, along the tree with its relay
        self.parents = None  # the links to the parent region's hubs (parents.py)
        if self.parent:
            self.parents = ParentLinks(
                self,
                self.settings,
                reactor,
                max_frame_bytes=hub.max_frame_bytes,
                tls=parent_tls(config),
                rng=rng,
            )
        self._kept = set()  # topics waiting for their owner to go (keep)
        self._filters = {}
        self._loaded = False
        self._early_changes = []  # subscription notices that arrived while loading
        self._ready = Waiters()  # fired once the interest is loaded

    def request_handlers(self) -> dict:
        return {
            Op.REGION_LINK: self._on_region_link,
            Op.RELAY_PUBLISH: self._on_relay_publish,
            Op.TOPIC_OPTIONS: self._on_topic_options,
        }

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Deferred:
        """Load the interest of every topic, then link to the parent. Fires once loaded."""
        d = self._load()
        d.addCallback(self._started)
        return d

    @inlineCallbacks
    def _load(self):
        metadata = self.hub.delivery.metadata
        topics = yield metadata.list_topics()
        now = self.now_us()
        for done, topic in enumerate(topics, 1):
            subscriptions = yield metadata.list_subscriptions(topic)
            for subscriber_id, record in subscriptions.items():
                # Since the subscription began (a record from before that was kept: now).
                since = record.value.preferences.get("created_us") or now
                self.interest.add(topic, subscriber_id, since)
            if not done % _LOAD_STEP:  # (an embedded store answers at once: let others run)
                yield deferLater(self.reactor, 0, lambda: None)
        _logger.info(
            "region {region}: path {path}; {count} topic(s) with subscribers",
            region=self.name,
            path=self.path.describe(),
            count=len(self.interest),
        )

    def _started(self, _) -> None:
        self._loaded = True
        changes, self._early_changes = self._early_changes, []
        for topic, subscriber_id, added in changes:
            self._apply(topic, subscriber_id, added)
        self._ready.fire()
        if self.parents is not None:
            self.parents.start()
            if self.ownership.shared:  # relays from the parent of topics nobody here owns yet
                for topic, _since in self.interest.wanted_from(self.parent):
                    self.keep(topic)

    @property
    def link(self):
        """The link over `[region] parent_address` (None for the root region)."""
        return self.parents.primary if self.parents is not None else None

    @property
    def session(self):
        """That link's LinkSession while it is up."""
        return self.parents.session_of(self.parents.primary) if self.parents is not None else None

    def now_us(self) -> int:
        return int(self.reactor.seconds() * 1_000_000)

    def _when_ready(self) -> Deferred:
        if self._loaded:
            return succeed(None)
        return self._ready.wait()

    def stop(self) -> Deferred:
        """Close the parent links (their relay subscriptions here are detached and their
        pointers written). Child links are connections: the hub closes them."""
        if self.parents is None:
            return succeed(None)
        return self.parents.stop()

    # -- hooks of the delivery manager ------------------------------------------------------------

    def entry_filter(self, subscriber_id: str):
        """Entries not sent to a relay subscriber: those that came from its region."""
        peer = relay_peer(subscriber_id)
        if peer is None:
            return None
        came_from = self._filters.get(peer)
        if came_from is None:
            came_from = self._filters[peer] = via_filter(peer)
        return came_from

    def subscription_changed(self, topic: str, subscriber_id: str, added: bool) -> None:
        if not self._loaded:
            self._early_changes.append((topic, subscriber_id, added))
            return
        self._apply(topic, subscriber_id, added)

    def _apply(self, topic: str, subscriber_id: str, added: bool) -> None:
        interest = self.interest
        neighbours = list(self.children.links)
        if self.parent:
            neighbours.append(self.parent)
        before = [interest.wants(topic, n) for n in neighbours]
        if added:
            interest.add(topic, subscriber_id, self.now_us())
        else:
            interest.remove(topic, subscriber_id)
        for neighbour, was in zip(neighbours, before, strict=True):
            now = interest.wants(topic, neighbour)
            if now != was:
                if neighbour == self.parent:
                    if self.ownership.owns(topic):
                        self.parents.want_down(topic, now)
                else:
                    self.children.interest_changed(topic, neighbour, now)

    # -- a region of several hubs: relays move with their topic ---------------------------------

    def _claimed(self, topic: str) -> None:
        """This hub claimed `topic`: its interest as the metadata says it now, then its
        relays (announced to the child regions, subscribed at the parent, sent up)."""
        listed = self.hub.delivery.metadata.list_subscriptions(topic)
        listed.addCallbacks(self._take_up, lambda f: _logger.failure("relays of {t}", f, t=topic), (topic,))

    def _take_up(self, records, topic: str) -> None:
        if not self.ownership.owns(topic):
            return  # (released again meanwhile)
        now = self.now_us()
        self.interest.reset(
            topic, {sid: r.value.preferences.get("created_us") or now for sid, r in records.items()}
        )
        self.children.claimed(topic)
        if self.parents is None:
            return
        if self.interest.wants(topic, self.parent):
            self.parents.want_down(topic, True)
        for session in list(self.parents.sessions.values()):
            if topic in session.parent_wants:
                session.up.set(topic, True)

    def _released(self, topic: str) -> None:
        """`topic` left this hub: its relays stop here (its new owner takes them up: the
        hubs that keep it, or the one its next request reaches). This hub keeps it too,
        from a little later, so that it does not take back what it let go."""
        if self.parents is not None:
            self.parents.leave_down(topic)
            for session in self.parents.sessions.values():
                session.up.on.discard(topic)  # (its relay subscription ended with TOPIC_MOVED)
            if self.wanted_here(topic):
                self.reactor.callLater(KEEP_AFTER_RELEASE_S, self.keep, topic)

    def wanted_here(self, topic: str) -> bool:
        """Whether this region relays `topic` with the parent (either way)."""
        if self.parents is None:
            return False
        up = any(topic in session.parent_wants for session in self.parents.sessions.values())
        return up or self.interest.wants(topic, self.parent)

    def keep(self, topic: str) -> None:
        """A topic whose relays another hub of this region runs: once nobody owns it (the
        owner left, or released it), this hub claims it and takes its relays up."""
        if topic in self._kept or not self.ownership.shared:
            return
        self._kept.add(topic)
        waiting = self.ownership.when_unowned(topic)

        def unowned(_):
            self._kept.discard(topic)
            if not self.wanted_here(topic) or self.ownership.owns(topic):
                return None
            claiming = self.ownership.acquire_for_relay(topic)  # (the claim tells _claimed)
            return claiming.addErrback(lambda _f: self.keep(topic))

        waiting.addCallback(unowned).addErrback(lambda f: _logger.failure("keeping {t}", f, t=topic))

    # -- the parent link ---------------------------------------------------------------------------

    def path_learned(self, parent_path: list[str], complete: bool) -> None:
        if self.path.learned(parent_path, complete):
            _logger.info("region {region}: path {path}", region=self.name, path=self.path.describe())
            if self.children.links:
                self.children.drop_all(f"region {self.name}'s path to the root changed")

    def link_up(self, link):
        return self.parents.link_up(link)

    def link_down(self, link) -> None:
        self.parents.link_down(link)

    # -- child links (requests the hub hands over) ---------------------------------------------------

    def _on_region_link(self, connection, request_id, body, started) -> None:
        connection.answer(
            self.link_child(connection, body),
            request_id,
            Op.REGION_LINK,
            started,
            lambda payload: response_frame(request_id, Op.REGION_LINK, payload=payload),
        )

    def _on_relay_publish(self, connection, request_id, body, started) -> None:
        connection.answer(
            maybeDeferred(self.relay_publish, connection, body),
            request_id,
            Op.RELAY_PUBLISH,
            started,
            lambda stored: response_frame(request_id, Op.RELAY_PUBLISH, payload=encode_published(*stored)),
        )

    def _on_topic_options(self, connection, request_id, body, started) -> None:
        connection.answer(
            maybeDeferred(self.options.request, connection, body),
            request_id,
            Op.TOPIC_OPTIONS,
            started,
            lambda payload: response_frame(request_id, Op.TOPIC_OPTIONS, payload=payload),
        )

    def link_child(self, connection, body) -> Deferred:
        """REGION_LINK: Deferred[reply payload]."""
        return self._when_ready().addCallback(lambda _: self.children.accept(connection, body))

    def relay_publish(self, connection, body) -> Deferred:
        """RELAY_PUBLISH: Deferred[(first_seq, last_seq)], (0, 0) when held already."""
        source = self.children.source_of(connection)
        if source is None:
            raise RequestRefused(
                Status.REGION_REFUSED, "RELAY_PUBLISH is taken only on a region link (send REGION_LINK first)"
            )
        topic, start, stop, entry = decode_relay_publish(body, self.hub.max_frame_bytes)
        self.children.check_origin(connection, decode_entry_header(entry).origin_region or source.name)
        return self.inboxes.receive(topic, entry, start, stop, source)

    # -- observation ---------------------------------------------------------------------------------

    def describe_relays(self, topic: str, subscribers: list) -> Deferred:
        """Deferred[list]: one row per relay link of the topic here: peer, direction ("out":
        relayed from here to peer, "in": from peer to here), consumed seq-id, lag, state."""
        rows = []
        link = self.link
        for row in subscribers:
            peer = relay_peer(row["subscriber_id"])
            if peer is None:
                continue
            state = _RELAY_STATES.get(row["state"], row["state"])
            if peer == self.parent:
                if link is not None and not link.is_up:
                    state = f"{link.state}: {link.reason}" if link.reason else link.state
            elif peer not in self.children.links:
                state = "child region not linked"
            rows.append(
                {
                    "peer": peer,
                    "direction": "out",
                    "subscriber_id": row["subscriber_id"],
                    "consumed_seq": row["consumed_seq"],
                    "lag": row["backlog"],
                    "state": state,
                }
            )
        inbox = self.inboxes.inbox(topic)
        high = inbox.high_water if inbox is not None else None
        for child in sorted(self.children.links):
            if self.interest.wants(topic, child):
                # The relay's pointer is the child's (its `__region__<this region>`
                # subscription there): what is known here is what arrived of its messages.
                rows.append(
                    {
                        "peer": child,
                        "direction": "in",
                        "subscriber_id": relay_subscriber_id(self.name),
                        "consumed_seq": None,
                        "received_origin_seq": high.mark(child) if high is not None else None,
                        "peer_hubs": sorted(hub for hub in self.children.links[child] if hub),
                        "lag": None,
                        "state": "linked",
                    }
                )
        if not self.parent or not self.interest.wants(topic, self.parent):
            return succeed(rows)
        row = {
            "peer": self.parent,
            "direction": "in",
            "subscriber_id": relay_subscriber_id(self.name),
            "consumed_seq": None,
            "lag": None,
            "state": link.state if not link.reason else f"{link.state}: {link.reason}",
        }
        rows.append(row)
        session = self.session
        if session is None:
            return succeed(rows)
        down = session.down_state(topic)
        if down is not None:
            row["consumed_seq"] = down["consumed_seq"]
        else:
            row["state"] = "subscribing"

        def parent_said(description):
            for sub in (description or {}).get("subscribers", []):
                if sub.get("subscriber_id") == row["subscriber_id"]:
                    row["lag"] = sub.get("backlog")
                    if row["consumed_seq"] is None or sub.get("consumed_seq", 0) > row["consumed_seq"]:
                        row["consumed_seq"] = sub.get("consumed_seq")
                    row["state"] = "relaying" if sub.get("state") != "detached" else "detached"
            return rows

        return session.parent_description(topic).addCallback(parent_said)

    def stats(self) -> dict:
        link = self.link
        session = self.session
        parent = None
        if link is not None:
            parent = link.describe()
            if session is not None:
                parent["interest_synced"] = session.synced
                parent["relayed_down_entries"] = session.received_entries
                parent["topics_down"] = len(session.down.on)
                parent["topics_up"] = len(session.up.on)
                parent["up"] = session.up_channel.describe()
        return {
            "region": self.name,
            "parent": parent,
            # every link to the parent region: one per hub when it runs on several
            "parent_links": self.parents.describe() if self.parents is not None else [],
            "path": self.path.names,
            "path_complete": self.path.complete,
            "children": self.children.describe(),
            "refused_links": self.children.refused,
            "relay": {**self.inboxes.stats(), "compaction_adopted": self.options.adopted},
            "interest_topics": len(self.interest),
        }
