"""The hubs of a region, as ZooKeeper knows them: this hub's registration, and a view of
every live hub with its load, kept current by watches.

Each hub holds an ephemeral znode `<root>/hubs/<host:port>` (hedwig.meta.zk_layout) for
as long as its session lives; its data is the hub's load as JSON: topics owned, messages
published per second, and where to reach it (`hub`, `tls_port`, `kafka`). The znode goes when the
hub stops (its session closes) or dies (its session expires), which is how the others
learn of it; a hub whose session was LOST registers again on its next session.

The view (`hubs`) is read with watches on the list and on each hub's data, re-read on
every change and on every reconnection (kazoo drops watches when a connection is lost).
Placement reads it in memory: no ZooKeeper read per request.
"""

import hashlib
import json
import time
from collections import deque

from twisted.internet.defer import DeferredList, inlineCallbacks, succeed
from twisted.logger import Logger

from hedwig.concurrency.deferreds import Waiters
from hedwig.meta.zk_session import CONNECTED, LOST
from hedwig.meta.zk_store import translate

LOAD_REFRESH_S = 5.0  # the load in the hub's znode is looked at this often, rewritten if it changed
LOAD_SOON_S = 0.2  # ... and this soon after the topics it owns changed
EXPECTED_S = 2 * LOAD_REFRESH_S  # a topic sent to a hub whose load has not counted it by then went unclaimed


class HubInfo(dict):
    """A live hub as its znode says: {"hub": "host:port", "tls_port", "http" (its status
    page's URL, or None), "kafka" (its Kafka listener as Metadata names it, {"host",
    "port", "node_id"}, or None: hedwig.kafka.brokers), "region", "topics",
    "messages_per_s", "started_us"}."""

    @property
    def name(self) -> str:
        return self["hub"]

    @property
    def topics(self) -> int:
        return int(self.get("topics") or 0)

    @property
    def redirect(self) -> str:
        """What NOT_RESPONSIBLE_FOR_TOPIC names: "host:port", with ":tls_port" when it
        listens for TLS too (Hedwig's "host:port:sslport")."""
        tls_port = self.get("tls_port")
        return f"{self['hub']}:{tls_port}" if tls_port else self["hub"]


def _spread(topic: str, hub: str) -> bytes:
    """A tie-break every hub computes alike: equally loaded hubs get topics evenly."""
    return hashlib.blake2b(f"{topic}\0{hub}".encode(), digest_size=8).digest()


class HubRegistry:
    """This hub's registration under `<root>/hubs`, and the view of all live hubs."""

    log = Logger()

    def __init__(self, session, layout, clock, *, name: str, region: str, tls_port=None, load=None):
        """`load()` -> (topics owned, messages per second) when the znode is written."""
        self.session = session
        self.layout = layout
        self.clock = clock
        self.name = name
        self.region = region
        self.tls_port = tls_port
        self.http = None  # the hub's HTTP listener's URL, when it has one (its status page)
        self.kafka = None  # its Kafka listener, {"host", "port", "node_id"}, when it serves one
        self.started_us = time.time_ns() // 1000
        self._load = load or (lambda: (0, 0.0))
        self.hubs: dict[str, HubInfo] = {}
        self.registered = False
        self._registered = Waiters()  # told once registered
        self._expected = {}  # hub -> deque of the times topics were sent its way, not yet in its load
        self._written = None  # the load last written
        self._writing = False
        self._timer = None
        self._reading = False
        self._read_again = False
        self._stopped = False
        self._watch = self._watched  # one callable, so kazoo keeps one watch per path
        self.listeners = []  # callable(joined: set, left: set) on every change of the hub list
        session.add_listener(self._state)

    # -- registration ---------------------------------------------------------------------

    def info(self) -> HubInfo:
        topics, rate = self._load()
        host, _, port = self.name.rpartition(":")
        return HubInfo(
            hub=self.name,
            host=host.strip("[]"),
            port=int(port),
            tls_port=self.tls_port,
            http=self.http,
            kafka=self.kafka,
            region=self.region,
            topics=topics,
            messages_per_s=round(rate, 1),
            started_us=self.started_us,
        )

    @inlineCallbacks
    def register(self):
        """Create this hub's ephemeral znode (a stale one of its own name, left by an
        earlier session of this address, is replaced), then read the region's hubs."""
        path = self.layout.hub(self.name)
        data = self._encode(self.info())
        errors = _errors()
        try:
            yield self.session.call("create", path, data, ephemeral=True, makepath=True)
        except errors.NodeExistsError:
            yield self.session.call("delete", path).addErrback(lambda f: f.trap(errors.NoNodeError))
            yield self.session.call("create", path, data, ephemeral=True, makepath=True)
        self.registered = True
        self._registered.fire()
        self._written = data
        self.log.info("registered as {hub} under {path}", hub=self.name, path=self.layout.branch("hubs"))
        self.load_changed(soon=False)  # (and every LOAD_REFRESH_S from then on: _write_load)
        yield self.refresh()

    def when_registered(self, timeout_s: float, clock):
        """Deferred firing once this hub is registered (at once if it is); it gives up
        quietly after `timeout_s` (the caller looks at `registered` again)."""
        if self.registered:
            return succeed(None)
        waiting = self._registered.wait()
        waiting.addTimeout(timeout_s, clock)
        return waiting.addErrback(lambda _f: None)

    def deregister(self):
        """Delete this hub's znode now (a clean stop; closing the session would too)."""
        self._stopped = True
        self._cancel_timer()
        if not self.registered:
            return succeed(None)
        self.registered = False
        d = self.session.call("delete", self.layout.hub(self.name))
        return d.addErrback(lambda _f: None)

    def _encode(self, info: HubInfo) -> bytes:
        return json.dumps(info, sort_keys=True, separators=(",", ":")).encode("utf-8")

    def load_changed(self, soon: bool = True) -> None:
        """The topics owned (or the rate) changed: write the load, soon or at the refresh."""
        if not self.registered or self._stopped:
            return
        delay = LOAD_SOON_S if soon else LOAD_REFRESH_S
        if self._timer is not None and self._timer.active():
            if self._timer.getTime() - self.clock.seconds() <= delay:
                return
            self._timer.cancel()
        self._timer = self.clock.callLater(delay, self._write_load)

    def _cancel_timer(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def _write_load(self) -> None:
        self._timer = None
        if not self.registered or self._stopped:
            return
        if self.session.state != CONNECTED:  # (looked at again later: the load is written once back)
            self.load_changed(soon=False)
            return
        if self._writing:
            self.load_changed()
            return
        # Looked at again every LOAD_REFRESH_S, changed or not: a hub gone quiet writes its
        # rate falling to 0 (the other hubs' tables showed its last burst's rate for good).
        self.load_changed(soon=False)
        data = self._encode(self.info())
        if data == self._written:
            return
        self._writing = True

        def written(_stat):
            self._written = data

        def done(_):
            self._writing = False

        d = self.session.call("set", self.layout.hub(self.name), data)
        d.addCallbacks(written, lambda f: self.log.debug("writing the hub's load: {error}", error=f.value))
        d.addBoth(done)

    def _state(self, state: str) -> None:
        if self._stopped:
            return
        if state == LOST:
            self.registered = False  # the znode went with the session
        elif state == CONNECTED and self.name:  # (the first registration is the hub's, once it listens)
            if not self.registered:
                d = self.register()
                d.addErrback(lambda f: self.log.failure("registering in ZooKeeper again failed", f))
            else:
                self.refresh()

    # -- the view of the region's hubs ----------------------------------------------------

    def _watched(self, _event) -> None:
        """On a kazoo thread: the list or a hub's data changed (or the connection went)."""
        self.session.call_soon(self.refresh)

    def refresh(self):
        """Read the hub list and every hub's load again (one read at a time; a change
        meanwhile reads once more after it). Deferred firing once read."""
        if self._reading:
            self._read_again = True
            return succeed(None)
        self._reading = True
        return self._read().addBoth(self._read_done)

    def _read_done(self, result):
        self._reading = False
        if isinstance(result, Exception) or hasattr(result, "trap"):
            self.log.debug("reading the region's hubs: {error}", error=getattr(result, "value", result))
        if self._read_again and not self._stopped:
            self._read_again = False
            return self.refresh()
        return None

    @inlineCallbacks
    def _read(self):
        branch = self.layout.branch("hubs")
        names = yield self.session.call("get_children", branch, watch=self._watch).addErrback(translate)
        reads = [self.session.call("get", f"{branch}/{name}", watch=self._watch) for name in names]
        found = yield DeferredList(reads, consumeErrors=True)
        hubs = {}
        for ok, value in found:
            if not ok:
                continue
            try:
                info = HubInfo(json.loads(value[0].decode("utf-8")))
                hubs[info.name] = info
            except (ValueError, TypeError, KeyError, AttributeError):
                continue
        before = {name: info.get("started_us") for name, info in self.hubs.items()}
        self.take_view(hubs)
        joined, left = set(hubs) - set(before), set(before) - set(hubs)
        # A hub that restarted on its address before its old session expired never left
        # the list: its new start time says it came back (with no topics).
        joined |= {name for name in set(hubs) & set(before) if hubs[name].get("started_us") != before[name]}
        if joined or left:
            self.log.info(
                "hubs of the region: {hubs}{joined}{left}",
                hubs=", ".join(sorted(hubs)) or "none",
                joined=f" (joined: {', '.join(sorted(joined))})" if joined else "",
                left=f" (left: {', '.join(sorted(left))})" if left else "",
            )
            for listener in list(self.listeners):
                listener(joined, left)
        return hubs

    def take_view(self, hubs: dict) -> None:
        """The region's hubs as their znodes now say. A hub whose count of topics rose by
        n has claimed n of the topics sent its way (or others): only the n oldest leave
        our guess. Dropping the whole guess at any change undercounted a hub that wrote
        its load between two claims, and it was sent more than its share."""
        for hub, sent in list(self._expected.items()):
            info = hubs.get(hub)
            if info is None:
                del self._expected[hub]  # (gone: its topics are nobody's now)
                continue
            rose = info.topics - self.hubs[hub].topics if hub in self.hubs else len(sent)
            for _ in range(min(max(rose, 0), len(sent))):
                sent.popleft()
        self.hubs = hubs

    # -- placement ------------------------------------------------------------------------

    def load_of(self, hub: str) -> int:
        """Topics owned by `hub` as this hub knows it: its own exact count for itself, the
        znode's for others, plus the topics sent its way since it last wrote its load."""
        if hub == self.name:
            return self._load()[0]
        sent = self._expected.get(hub)
        if sent:
            too_old = self.clock.seconds() - EXPECTED_S
            while sent and sent[0] < too_old:  # (a client that never followed the redirect)
                sent.popleft()
        return self.hubs[hub].topics + (len(sent) if sent else 0)

    def place(self, topic: str) -> str:
        """The hub that should own a topic nobody owns: the least loaded (this one among
        equals, sparing a redirect; others' ties broken alike by every hub)."""
        loads = {hub: self.load_of(hub) for hub in set(self.hubs) | {self.name}}
        least = min(loads.values())
        if loads[self.name] <= least:
            return self.name
        return min((load, _spread(topic, hub), hub) for hub, load in loads.items())[2]

    def place_elsewhere(self, topic: str) -> str:
        """The least loaded hub but this one, for a topic this hub sheds (ties broken
        alike by every hub); this hub when it is alone."""
        others = set(self.hubs) - {self.name}
        if not others:
            return self.name
        return min((self.load_of(hub), _spread(topic, hub), hub) for hub in others)[2]

    def sent(self, hub: str) -> None:
        """A topic was sent to `hub` to claim: count it until its znode says its load."""
        self._expected.setdefault(hub, deque()).append(self.clock.seconds())

    def redirect_to(self, hub: str) -> str:
        info = self.hubs.get(hub)
        return info.redirect if info is not None else hub

    def stop(self) -> None:
        self._stopped = True
        self._cancel_timer()


def _errors():
    from kazoo import exceptions

    return exceptions
