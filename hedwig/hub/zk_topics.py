"""The topic manager of a hub in a region of several hubs: topics owned through ZooKeeper,
as Hedwig's ZkTopicManager owned them (ITopicManager, hedwig/hub/interface.py).

Ownership. A topic's owner holds the ephemeral znode `<root>/owners/<topic>` (naming
the hub, hedwig.meta.zk_layout). A request for a topic not open here looks it up once:

- owned by another hub: NOT_RESPONSIBLE_FOR_TOPIC naming it (NotOwner);
- owned under this hub's own name (left by an earlier session of this address): the
  znode is deleted and the topic claimed again;
- owned by nobody: the least loaded live hub should own it (HubRegistry.place, from the
  view kept by watches: no ZooKeeper read). If that is this hub, it claims the topic; if
  not, the request is redirected there, and that hub claims it when the request comes.

A claim is one transaction: create the owner znode and bump `<root>/epochs/<topic>`,
whose new version is this hub's ownership epoch. When several hubs race only one create
succeeds; the others read the winner and redirect. The epoch fences the metadata: every
write of the topic's records checks it (hedwig.meta.zk_store), so a hub that lost the
topic while paused changes nothing. Then the topic log is acquired as in an embedded
hub: the previous owner's open ledger is fenced on the shared storage and recovered
(hedwig.ledger.fencing), closed in the ranges, and a new ledger opened.

Requests for an owned, open topic never touch ZooKeeper: `get` is the local manager's
dictionary lookup.

Release. A topic leaves this hub when it has been idle `topic_release_s`, when the hub
sheds topics to a hub that joined (zk_balance.py), when another hub took it over (its
log failed TopicFenced), and all at once when the session is LOST: its live
subscriptions get TOPIC_MOVED and their consume pointers are written, its log is
closed, and its owner znode deleted (a lost session's went with it). Requests for it
meanwhile wait, then look for the owner again.

Handing over. A topic shed by rebalancing goes to a hub chosen for it (`hand_over`): it
is assigned to that hub first (so requests meanwhile are sent there), released, then
handed off (`handoffs/<hub>/<topic>`); that hub watches its handoffs and claims each at
once, so a hub that joins takes its share then, not when each topic is next used.

Every move is named, in the log and in STATS: "topic T taken over from A (why)" where a
hub claims a topic another hub held (the epoch znode names the last claimer: a hub that
released it, or one that left the region and was fenced), "topic T released to B (why)"
where this hub handed it over; `zookeeper_stats` counts them by hub and keeps the last
few (RECENT_MOVES).

Connection states: while SUSPENDED the hub claims nothing (SERVICE_DOWN) and holds every
acknowledgement (hedwig.topiclog.ack_gate); CONNECTED lets them go; LOST releases every
topic (what was stored before any other hub fenced its ledger is acknowledged: the new
owner's recovery keeps it).
"""

import time
from collections import deque

from twisted.internet.defer import DeferredList, fail, inlineCallbacks, maybeDeferred, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from hedwig.concurrency.deferreds import SharedOperations, Waiters
from hedwig.delivery.filtering import FILTER_PREFERENCE
from hedwig.hub.errors import HubUnavailable, NotOwner
from hedwig.hub.interface import ITopicManager
from hedwig.hub.zk_owners import OwnerZnodes
from hedwig.meta.interface import LedgerRange, MetadataUnavailable, OwnershipLost
from hedwig.meta.zk_layout import decode_name
from hedwig.meta.zk_session import CONNECTED, LOST, SUSPENDED
from hedwig.meta.zk_store import translate
from hedwig.region.settings import relay_peer
from hedwig.topiclog.errors import TopicFenced


def _errors():
    from kazoo import exceptions

    return exceptions


RECENT_MOVES = 20  # the moves STATS lists (the counts by hub cover them all)


class _HandedTopicGone(Exception):
    """A topic handed to this hub no longer exists (deleted meanwhile): nothing to claim."""


@implementer(ITopicManager)
class ZkTopicManager:
    """ITopicManager over the local TopicManager (which opens the logs of the topics this
    hub owns) and ZooKeeper (which says who owns what)."""

    log = Logger()

    def __init__(self, local, logs, *, session, store, registry, clock, ledgers=None):
        self._local = local  # hedwig.hub.topics.TopicManager: the logs open here
        self._logs = logs  # hedwig.topiclog.TopicLogManager: its ack gate, its closed logs
        self.session = session
        self._store = store
        self._layout = store.layout
        self.registry = registry
        self._ledgers = ledgers  # a SharedLedgerStore: forgets a released topic's ledgers
        self._epochs = store.epochs = {}  # topic -> this hub's ownership epoch
        self._claims = set()  # topics being claimed here (counted in the load meanwhile)
        self._claimed_at = {}  # topic -> when this hub claimed it (rebalancing spares new ones)
        self.znodes = OwnerZnodes(session, store.layout, registry)  # who owns what, in ZooKeeper
        self._claiming = SharedOperations()  # topic -> its lookup and claim
        self._releasing = SharedOperations()  # topic -> its release
        # callable(topic) -> Deferred, before a released topic's log closes: the delivery
        # manager ends its live subscriptions (TOPIC_MOVED) and writes their pointers.
        self.on_release = None
        # (claimed(topic), released(topic)) told as topics come and go (region relays)
        self.ownership_listeners = []
        self.stopping = False
        self._connected = Waiters()  # told when the session is (re)connected
        self._clock = clock
        # claims, redirects, releases, and topics taken over from here by another hub
        self.counts = {"claims": 0, "redirects": 0, "releases": 0, "taken_over": 0}
        self.taken_over_from = {}  # hub -> topics this hub took from it
        self.released_to = {}  # hub -> topics this hub handed to it
        self.moves = deque(maxlen=RECENT_MOVES)  # {"at", "topic", "from", "to", "why"}
        self._handed = {}  # topic -> {"from", "why"} of a handoff to this hub being claimed
        logs.on_log_closed = self._log_closed
        session.add_listener(self._state_changed)

    @property
    def on_open(self):
        return self._local.on_open

    @on_open.setter
    def on_open(self, value):
        self._local.on_open = value

    @property
    def name(self) -> str:
        return self.registry.name

    @property
    def store(self):
        """The region's metadata store (topic records read without opening: Kafka's Metadata)."""
        return self._store

    @property
    def session_state(self) -> str:
        """The ZooKeeper session's state (metrics: hedwig_zookeeper_session_state)."""
        return self.session.state

    def zookeeper_stats(self) -> dict:
        """STATS' "zookeeper" section (and the metrics of hedwig.observe.metrics)."""
        return {
            "servers": self.session.servers,
            "root": self._layout.root,
            "session": self.session.state,
            "session_id": self.session.session_id,
            "sessions": self.session.sessions,
            "hubs": len(set(self.registry.hubs) | {self.name}),
            "owned": len(self._epochs),
            "acks_held": self._logs.gate.held,
            "claims": self.counts["claims"],
            "releases": self.counts["releases"],
            "redirects": self.counts["redirects"],
            "taken_over_here": sum(self.taken_over_from.values()),
            "taken_over_from": dict(self.taken_over_from),
            "released_to": dict(self.released_to),
            "taken_over_by_others": self.counts["taken_over"],
            "recent_moves": list(self.moves),
        }

    def _moved(self, topic: str, source: str, target: str, why: str) -> None:
        """Remember a move of `topic` from hub `source` to hub `target` (one is this hub)."""
        move = {"at": round(time.time(), 3), "topic": topic, "from": source, "to": target, "why": why}
        self.moves.append(move)

    def owned_topics(self) -> list:
        """The topics this hub has claimed (open, or being opened), sorted."""
        return sorted(self._epochs)

    def claimed_at(self, topic: str) -> float:
        """When this hub claimed an owned topic (its clock's seconds)."""
        return self._claimed_at.get(topic, 0.0)

    @property
    def load(self) -> int:
        """Topics owned, and being claimed: what placement compares between hubs."""
        return len(self._epochs) + len(self._claims)

    # -- requests ---------------------------------------------------------------------------

    def get(self, topic: str):
        if self._releasing.running(topic):
            return None
        return self._local.get(topic)

    def owns(self, topic: str) -> bool:
        """Whether this hub owns the topic (claimed, not being released)."""
        return topic in self._epochs and not self._releasing.running(topic)

    def acquire(self, topic: str, place: bool = True):
        """As ITopicManager.acquire. `place` False: a topic nobody owns is claimed here,
        whatever the loads (a region relay must run somewhere)."""
        topic_log = self.get(topic)
        if topic_log is not None:
            return succeed(topic_log)
        return self._owned_then(topic, self._local.acquire, topic, place=place)

    def acquire_existing(self, topic: str, missing: Exception):
        """As TopicManager.acquire_existing; a topic that does not exist is let go again."""
        topic_log = self.get(topic)
        if topic_log is not None:
            return succeed(topic_log)

        def open_existing():
            opened = self._local.acquire_existing(topic, missing)

            def absent(failure):
                if failure.value is missing and topic in self._epochs and not self._local.get(topic):
                    self.release(topic)
                return failure

            return opened.addErrback(absent)

        return self._owned_then(topic, open_existing)

    def _owned_then(self, topic: str, open_, *args, place: bool = True):
        """Own the topic (claiming it, or failing with the owner to redirect to), then
        open_(*args)."""
        releasing = self._releasing.wait(topic)
        if releasing is not None and self.session.state != CONNECTED:
            # (the release writes to ZooKeeper, out of reach: a request waiting on it would
            # wait as long as the partition lasts, where another hub may own the topic now)
            why = f"has its ZooKeeper connection {self.session.state.lower()} and is releasing {topic}"
            return fail(HubUnavailable(f"this hub {why}: it claims no topic meanwhile; try again"))
        if releasing is not None:
            return releasing.addBoth(lambda _: self._owned_then(topic, open_, *args, place=place))
        if topic in self._epochs:
            opened = maybeDeferred(open_, *args)
        else:
            opened = self._claiming.run(topic, self._claim_or_redirect, topic, place)
            opened.addCallback(lambda _: open_(*args))
        return opened.addErrback(self._open_failed, topic)

    def _open_failed(self, failure, topic: str):
        if failure.check(TopicFenced, OwnershipLost) and topic in self._epochs:
            self._moved_away(topic)  # another hub claimed it since this one did
            return self.locate(topic, failure)
        return failure

    @inlineCallbacks
    def _claim_or_redirect(self, topic: str, place: bool = True):
        if self.session.state == CONNECTED and not self.registry.registered and not self.stopping:
            # (registering: at start, or after a LOST session: a moment)
            yield self.registry.when_registered(self.session.timeout_s, self._clock)
        if not self._may_claim():
            state = self.session.state.lower()
            why = "is stopping" if self.stopping else f"has its ZooKeeper connection {state}"
            raise HubUnavailable(f"this hub {why}: it claims no topic meanwhile; try again")
        owners = self.znodes
        owner, version = yield owners.read_owner(topic)
        if owner is not None:
            if owner.name != self.name:
                self.counts["redirects"] += 1
                raise NotOwner(topic, owner.redirect)
            # An earlier session of this address left it (its session not expired yet).
            yield owners.delete_stale_owner(topic, version)
            yield self._claim(topic)
            return
        assigned = yield owners.assigned(topic, self.name)
        if assigned is None:
            assigned = yield owners.assign(
                topic, self.registry.place(topic) if place else self.name, self.name
            )
        if assigned != self.name:
            self.counts["redirects"] += 1
            raise NotOwner(topic, self.registry.redirect_to(assigned))
        yield self._claim(topic)

    def _may_claim(self) -> bool:
        return self.session.state == CONNECTED and self.registry.registered and not self.stopping

    def _claim(self, topic: str):
        """Create the owner znode and bump the topic's epoch, in one transaction (then
        drop the topic's assignment, if any)."""
        self._claims.add(topic)
        return self._claim_once(topic).addBoth(self._claimed, topic)

    def _claimed(self, result, topic: str):
        """After a claim, won or lost: the topic's assignment has done its work."""
        self._claims.discard(topic)
        self.znodes.drop_assignment(topic)
        return result

    @inlineCallbacks
    def _claim_once(self, topic: str):
        try:
            epoch, previous = yield self.znodes.claim(topic, self.name, self.registry.tls_port)
        except NotOwner:
            self.counts["redirects"] += 1
            raise
        self._epochs[topic] = epoch
        self._claimed_at[topic] = self._clock.seconds()
        self.counts["claims"] += 1
        self.registry.load_changed()
        for claimed, _released in list(self.ownership_listeners):
            claimed(topic)
        handed = self._handed.pop(topic, None)
        if previous and previous != self.name:
            if handed is not None and handed.get("from") == previous:
                why = f"released there: {handed.get('why') or 'handed over'}"
            elif previous in self.registry.hubs:
                why = "released there"
            else:
                why = "that hub is no longer in the region"
            self.taken_over_from[previous] = self.taken_over_from.get(previous, 0) + 1
            self._moved(topic, previous, self.name, why)
            self.log.info(
                "topic {topic} taken over from {previous} ({why})", topic=topic, previous=previous, why=why
            )
        else:
            self.log.debug("claimed topic {topic} (epoch {epoch})", topic=topic, epoch=epoch)

    def locate(self, topic: str, failure):
        """After a request failed because the topic left this hub: NotOwner naming the
        hub that owns it now, or the failure itself when none does. A hub that finds its
        connection down (it woke from a pause) asks once it is back, within a session
        timeout."""

        def found(result):
            owner, _version = result
            if owner is not None and owner.name != self.name:
                raise NotOwner(topic, owner.redirect)
            return failure

        def unavailable(read_failure, again):
            if not again or not read_failure.check(MetadataUnavailable) or self.stopping:
                return failure
            back = self._connected.wait()
            back.addTimeout(self.session.timeout_s, self._clock)
            back.addCallback(lambda _: self.znodes.read_owner(topic))
            return back.addCallbacks(found, unavailable, errbackArgs=(False,))

        return self.znodes.read_owner(topic).addCallbacks(found, unavailable, errbackArgs=(True,))

    # -- release ----------------------------------------------------------------------------

    def release(self, topic: str, *, lost: bool = False):
        """Let the topic go (see the module docstring); Deferred firing once done. `lost`:
        the owner znode is not this hub's any more (the session went, or another hub took
        the topic over): it is left alone."""
        return self._releasing.run(topic, self._release, topic, lost)

    def _moved_away(self, topic: str) -> None:
        if not self._releasing.running(topic):
            self.counts["taken_over"] += 1
            self.log.warn("topic {topic} was taken over by another hub: released here", topic=topic)
            self.release(topic, lost=True)

    @inlineCallbacks
    def hand_over(self, topic: str, to: str, why: str):
        """Release the topic to hub `to`, which claims it at once (see the module
        docstring); Deferred firing once it is handed off."""
        if topic not in self._epochs or to == self.name:
            return
        yield self.znodes.assign(topic, to, self.name)  # (requests meanwhile: sent to `to`)
        yield self.release(topic)
        if topic in self._epochs:  # (claimed again meanwhile)
            return
        self.released_to[to] = self.released_to.get(to, 0) + 1
        self._moved(topic, self.name, to, why)
        self.log.info("topic {topic} released to {to} ({why})", topic=topic, to=to, why=why)
        yield self.znodes.hand_off(topic, to, self.name, why)

    def watch_handoffs(self) -> None:
        """Claim the topics other hubs hand to this one, as they come (once registered)."""
        self.znodes.watch_handoffs(self.name, self._handed_over)

    def _handed_over(self, topic: str, told: dict) -> None:
        if self.stopping:
            return
        self._handed[topic] = told
        claimed = self.acquire_existing(topic, _HandedTopicGone(topic))

        def done(result):
            self._handed.pop(topic, None)
            self.znodes.drop_handoff(self.name, topic)
            if isinstance(result, Failure):  # (another hub claimed it first, or it is gone)
                self.log.debug("topic {topic} handed here: {error}", topic=topic, error=result.value)
            return None

        claimed.addBoth(done)

    @inlineCallbacks
    def _release(self, topic: str, lost: bool):
        claiming = self._claiming.wait(topic)
        if claiming is not None:
            yield claiming.addErrback(lambda _f: None)
        if self.on_release is not None:
            try:
                yield self.on_release(topic)
            except MetadataUnavailable as e:  # (a lost session's, cut off: expected, no traceback)
                self.log.warn(
                    "releasing topic {topic}: its consume pointers not written ({why}); its next"
                    " owner delivers from the last ones written",
                    topic=topic,
                    why=e,
                )
            except Exception:
                self.log.failure("releasing topic {topic}: its subscriptions", topic=topic)
        try:
            topic_log = yield self._local.release(topic)
        except Exception:
            self.log.failure("releasing topic {topic}: closing its log", topic=topic)
            topic_log = None
        if topic_log is not None and self._ledgers is not None:
            for ledger_range in topic_log.ranges:
                self._ledgers.forget(ledger_range.ledger_id)
        epoch = self._epochs.pop(topic, None)
        self._claimed_at.pop(topic, None)
        if epoch is not None and not lost:
            yield self.znodes.delete_owner(topic, epoch)
        if epoch is not None:
            self.counts["releases"] += 1
            self.registry.load_changed()
            for _claimed, released in list(self.ownership_listeners):
                released(topic)
        return None

    def when_unowned(self, topic: str):
        """Deferred firing once no hub owns `topic` (at once when none does now)."""
        return self.znodes.when_unowned(topic)

    def _log_closed(self, topic_log) -> None:
        """A topic log closed: one that failed because another hub took the topic over
        (TopicFenced) takes this hub's ownership with it."""
        if isinstance(topic_log.stopped_by, TopicFenced) and topic_log.topic in self._epochs:
            self._moved_away(topic_log.topic)

    # -- the session ------------------------------------------------------------------------

    def _state_changed(self, state: str) -> None:
        gate = self._logs.gate
        if state == SUSPENDED:
            gate.hold()
            self.log.warn(
                "ZooKeeper connection lost: acknowledgements held and no topic claimed until it is"
                " back ({owned} topics owned)",
                owned=len(self._epochs),
            )
        if state == CONNECTED:
            self._connected.fire()
            self.znodes.watch_again()  # (watches went with the connection)
        if state == CONNECTED and gate.held:
            held = gate.parked
            gate.release()
            self.log.info(
                "ZooKeeper connection back: the acknowledgements of {held} topic(s) released", held=held
            )
        elif state == CONNECTED:
            self.log.info("ZooKeeper connected (session {session})", session=self.session.session_id)
        elif state == LOST:
            gate.release()
            owned = list(self._epochs)
            self.log.warn(
                "ZooKeeper session lost: releasing every topic ({count}); registering again once connected",
                count=len(owned),
            )
            for topic in owned:
                self.release(topic, lost=True)

    # -- the rest of ITopicManager -----------------------------------------------------------

    def exists(self, topic: str):
        return self._local.exists(topic)

    def delete(self, topic: str):
        return self._local.delete(topic)

    def open_topics(self) -> list:
        return self._local.open_topics()

    def list_topics(self):
        return self._local.list_topics()

    def hubs(self) -> list:
        """The region's live hubs with their load, as their znodes say (this one's now)."""
        view = dict(self.registry.hubs)
        view[self.name] = self.registry.info()
        return [dict(view[name]) for name in sorted(view)]

    @inlineCallbacks
    def owners(self):
        """Deferred[dict]: topic -> its owner's "host:port" (None when nobody owns it)."""
        branch = self._layout.branch("owners")
        topics = yield self.list_topics()
        names = yield self.session.call("get_children", branch).addErrback(translate)
        owned = [decode_name(n) for n in names]
        reads = yield DeferredList([self.znodes.read_owner(t) for t in owned], consumeErrors=True)
        found = {t: r[1][0].name for t, r in zip(owned, reads, strict=True) if r[0] and r[1][0] is not None}
        return {topic: found.get(topic) for topic in topics}

    @inlineCallbacks
    def unowned_subscription_rows(self, topic: str):
        """Deferred[list]: LIST_SUBSCRIPTIONS' rows of a topic from its records alone, for
        a topic no hub owns now (the region's listings claim nothing): consumed seq-ids as
        last written; the last seq-id (and the lag) only when its ledgers are all closed."""
        subscriptions = yield self._store.list_subscriptions(topic)
        versioned = yield self._store.get_topic(topic)
        ranges = [LedgerRange(*r) for r in versioned.value] if versioned is not None else []
        last_seq = ranges[-1].last_seq if ranges else 0
        rows = []
        for subscriber_id in sorted(subscriptions):
            state = subscriptions[subscriber_id].value
            preferences = state.preferences or {}
            rows.append(
                {
                    "topic": topic,
                    "subscriber_id": subscriber_id,
                    "user": preferences.get("owner"),
                    "consumed_seq": state.consumed_seq,
                    "last_seq": last_seq,
                    "lag": None if last_seq is None else max(0, last_seq - state.consumed_seq),
                    "state": "no owner now (the next request places the topic)",
                    "kind": preferences.get("kind", "exclusive"),
                    "delivery": "pull" if preferences.get("pull") else "push",
                    "filter": preferences.get(FILTER_PREFERENCE),
                    "members": 0,
                    "pending": None,
                    "redeliveries": None,
                    "skipped_by_bound": None,
                    "owner": None,
                    "relay_to": relay_peer(subscriber_id),
                }
            )
        return rows

    def close(self):
        """The hub is stopping: nothing more is claimed, held acknowledgements go out,
        every open log closes (the owner znodes go with the session, closed last)."""
        self.stopping = True
        self._logs.gate.release()
        return self._local.close()
