"""The znodes that say who owns a topic, and the operations on them (zk_topics.py decides
when to use which; hedwig.meta.zk_layout names the paths):

- `owners/<topic>`, ephemeral: the owner; created by a claim, deleted by a release (or
  with the owner's session);
- `assignments/<topic>`, ephemeral (of the hub that chose): the hub chosen to claim an
  unowned topic (the first choice recorded wins, so hubs racing for a new topic agree);
- `epochs/<topic>`: its version counts the claims; a claim bumps it in the same
  transaction that creates the owner znode (and writes the claimer's name in it, so the
  next claimer knows whom it took the topic from), and the owner's metadata writes check it;
- `handoffs/<hub>/<topic>`, ephemeral (of the hub letting the topic go): a topic shed to
  `<hub>` by rebalancing; that hub watches its own branch and claims what appears there.
"""

import json

from twisted.internet.defer import inlineCallbacks
from twisted.logger import Logger

from hedwig.concurrency.deferreds import Waiters
from hedwig.hub.errors import HubUnavailable, NotOwner
from hedwig.hub.zk_hubs import HubInfo
from hedwig.meta.interface import MetadataError
from hedwig.meta.zk_layout import decode_name
from hedwig.meta.zk_store import translate


def _errors():
    from kazoo import exceptions

    return exceptions


class OwnerZnodes:
    log = Logger()

    def __init__(self, session, layout, registry):
        self.session = session
        self.layout = layout
        self.registry = registry  # the live hubs: an assignment to one gone is stale
        self._epoch_nodes = set()  # topics whose epoch znode is known to exist
        self._unowned = {}  # topic -> Waiters told once no hub owns it (when_unowned)
        self._handoffs = None  # (this hub, handed(topic, told), topics seen) once watched

    def read_owner(self, topic: str):
        """Deferred[(HubInfo, znode version)] of the topic's owner, (None, None) if none."""

        def found(result):
            data, stat = result
            try:
                return HubInfo(json.loads(data.decode("utf-8"))), stat.version
            except (ValueError, TypeError, AttributeError):
                return None, stat.version  # not ours to read: treated as no owner

        def absent(failure):
            failure.trap(_errors().NoNodeError)
            return None, None

        read = self.session.call("get", self.layout.owner(topic))
        return read.addCallbacks(found, absent).addErrback(translate)

    def delete_stale_owner(self, topic: str, version: int):
        """Delete an owner znode an earlier session of this hub's address left."""
        errors = _errors()
        deleted = self.session.call("delete", self.layout.owner(topic), version)
        return deleted.addErrback(lambda f: f.trap(errors.NoNodeError, errors.BadVersionError))

    @inlineCallbacks
    def assigned(self, topic: str, me: str):
        """The live hub an unowned topic was assigned to (None: none, or it left: then the
        assignment is deleted)."""
        errors = _errors()
        path = self.layout.assignment(topic)
        try:
            data, stat = yield self.session.call("get", path)
        except errors.NoNodeError:
            return None
        hub = data.decode("utf-8", "replace")
        if hub == me or hub in self.registry.hubs:
            return hub
        yield self.session.call("delete", path, stat.version).addErrback(
            lambda f: f.trap(errors.NoNodeError, errors.BadVersionError)
        )
        return None

    @inlineCallbacks
    def assign(self, topic: str, hub: str, me: str):
        """Record that `hub` is to claim the topic (so that it claims when the redirected
        request comes, whatever its own view of the loads); the hub assigned, which is
        another's choice when one was recorded first. A hub choosing itself records it
        too: hubs racing for a new topic then agree on one before anyone claims, and no
        request is sent to a hub that another one beats to the claim."""
        errors = _errors()
        try:
            yield self.session.call(
                "create", self.layout.assignment(topic), hub.encode("utf-8"), ephemeral=True
            )
        except errors.NodeExistsError:
            chosen = yield self.assigned(topic, me)
            return chosen if chosen is not None else hub
        if hub != me:
            self.registry.sent(hub)
        return hub

    def drop_assignment(self, topic: str) -> None:
        self.session.call("delete", self.layout.assignment(topic)).addErrback(lambda _f: None)

    @inlineCallbacks
    def claim(self, topic: str, me: str, tls_port):
        """Create the owner znode and bump the topic's epoch, in one transaction; (the new
        epoch, the hub that claimed it before: "" for none). NotOwner naming the winner
        when another hub claimed it first."""
        errors = _errors()
        epoch_path = self.layout.epoch(topic)
        if topic not in self._epoch_nodes:
            created = self.session.call("create", epoch_path, b"")
            yield created.addErrback(lambda f: f.trap(errors.NodeExistsError)).addErrback(translate)
            self._epoch_nodes.add(topic)
        before = yield self.session.call("get", epoch_path).addErrback(lambda _f: (b"", None))
        previous = (before[0] or b"").decode("utf-8", "replace")
        transaction = self.session.transaction()
        owner_data = json.dumps({"hub": me, "tls_port": tls_port}).encode("utf-8")
        transaction.create(self.layout.owner(topic), owner_data, ephemeral=True)
        transaction.set_data(epoch_path, me.encode("utf-8"))
        created, epoch = yield self.session.commit(transaction).addErrback(translate)
        if isinstance(created, errors.NodeExistsError):  # another hub won the race
            owner, _version = yield self.read_owner(topic)
            if owner is not None and owner.name != me:
                raise NotOwner(topic, owner.redirect)
            raise HubUnavailable(f"topic {topic} changed owners while this hub claimed it; try again")
        if isinstance(created, Exception) or isinstance(epoch, Exception):
            self._epoch_nodes.discard(topic)
            failed = created if not isinstance(created, errors.RolledBackError) else epoch
            raise MetadataError(f"claiming topic {topic} failed: {type(failed).__name__}")
        return epoch.version, previous

    @inlineCallbacks
    def delete_owner(self, topic: str, epoch: int):
        """Delete the owner znode, if the topic is still this hub's (its epoch checked)."""
        let_go = self.session.transaction()
        let_go.check(self.layout.epoch(topic), epoch)
        let_go.delete(self.layout.owner(topic))
        try:
            yield self.session.commit(let_go)
        except Exception as e:  # the session's end deletes it anyway
            self.log.debug("releasing topic {topic}: its owner znode: {error}", topic=topic, error=e)

    # -- handing a topic to another hub (rebalancing) -------------------------------------------

    def hand_off(self, topic: str, to: str, me: str, why: str):
        """Tell hub `to` to claim the topic this hub has let go (its handoff znode, gone
        with this hub's session). Deferred."""
        data = json.dumps({"from": me, "why": why}).encode("utf-8")
        path = self.layout.handoff(to, topic)
        made = self.session.call("create", path, data, ephemeral=True, makepath=True)
        return made.addErrback(lambda f: f.trap(_errors().NodeExistsError))

    def watch_handoffs(self, me: str, handed) -> None:
        """Call handed(topic, {"from", "why"}) for each topic handed to this hub, now and
        as they come (a children watch, set again on every change and reconnection)."""
        self._handoffs = (me, handed, set())
        self._read_handoffs()

    def _read_handoffs(self) -> None:
        if self._handoffs is None:
            return
        me, handed, seen = self._handoffs
        path = self.layout.handoffs(me)

        def changed(_event):  # on a kazoo thread
            self.session.call_soon(self._read_handoffs)

        @inlineCallbacks
        def listed(names):
            topics = {decode_name(name): name for name in names}
            seen.intersection_update(topics)
            for topic, name in topics.items():
                if topic in seen:
                    continue
                seen.add(topic)
                try:
                    data, _stat = yield self.session.call("get", f"{path}/{name}")
                    told = json.loads(data.decode("utf-8"))
                except Exception:  # (gone meanwhile, or not ours to read)
                    told = {}
                handed(topic, told if isinstance(told, dict) else {})

        made = self.session.call("ensure_path", path)
        made.addCallback(lambda _: self.session.call("get_children", path, watch=changed))
        made.addCallback(listed).addErrback(
            lambda f: self.log.debug("reading the topics handed to this hub: {error}", error=f.value)
        )

    def drop_handoff(self, me: str, topic: str) -> None:
        self.session.call("delete", self.layout.handoff(me, topic)).addErrback(lambda _f: None)

    # -- waiting for a topic nobody owns ------------------------------------------------------

    def when_unowned(self, topic: str):
        """Deferred firing once no hub owns `topic` (at once when none does now): a watch
        on its owner znode, set again on every change and every reconnection."""
        waiting = self._unowned.get(topic)
        if waiting is None:
            waiting = self._unowned[topic] = Waiters()
            self._watch(topic)
        return waiting.wait()

    def watch_again(self) -> None:
        """The connection is back: kazoo dropped its watches with the old one."""
        for topic in list(self._unowned):
            self._watch(topic)
        self._read_handoffs()

    def _watch(self, topic: str) -> None:
        if topic not in self._unowned:
            return

        def changed(_event):  # on a kazoo thread
            self.session.call_soon(self._watch, topic)

        def found(stat):
            if stat is None and topic in self._unowned:
                self._unowned.pop(topic).fire()

        self.session.call("exists", self.layout.owner(topic), watch=changed).addCallbacks(
            found, lambda _f: None
        )
