"""The links from this hub to its parent region: the one to `[region] parent_address`,
and, when the parent region runs on several hubs, one to each of them, each with its
LinkSession (session.py).

A parent hub relays only the topics it owns, so this hub links to every hub of the parent
region: each tells it which of its topics it wants relayed up, and each serves the relay
subscriptions of its own topics. The hubs are learnt over the first link that comes up
(LIST_HUBS), and again whenever a link comes up; a parent alone answers with itself and
nothing changes. A topic's relay from the parent goes over the link of the hub that
owns it there: it starts on the first link, and a redirect (NOT_RESPONSIBLE_FOR_TOPIC,
to a SUBSCRIBE or a RELAY_PUBLISH) moves it to the owner's link, as the clients follow
redirects; TOPIC_MOVED sends it looking again.
"""

from twisted.internet.defer import DeferredList, succeed
from twisted.logger import Logger

from hedwig.protocol.addresses import format_address
from hedwig.protocol.ops import Op
from hedwig.protocol.redirects import parse_owner
from hedwig.protocol.requests import decode_json
from hedwig.protocol.status import Status
from hedwig.region.link import ParentLink
from hedwig.region.session import LinkSession

_logger = Logger()


class ParentLinks:
    def __init__(self, manager, settings, reactor, *, max_frame_bytes: int, tls=None, rng=None):
        self.manager = manager
        self.parent = settings.parent

        def make(address=None):
            return ParentLink(
                manager, settings, reactor, max_frame_bytes=max_frame_bytes, tls=tls, rng=rng, address=address
            )

        self._make = make
        self.tls = tls
        self.primary = make()
        self.extra: dict[str, ParentLink] = {}  # parent hub name -> the link to it
        self.sessions: dict[ParentLink, LinkSession] = {}
        self.down: dict[str, ParentLink] = {}  # topic -> the link its relay from the parent is on
        self._running = False

    def links(self) -> list:
        return [self.primary, *self.extra.values()]

    def start(self) -> None:
        self._running = True
        self.primary.start()

    def stop(self):
        self._running = False
        stops = [link.stop() for link in self.links()]
        return DeferredList(stops, consumeErrors=True) if stops else succeed(None)

    # -- sessions -----------------------------------------------------------------------------

    def link_up(self, link) -> LinkSession:
        twin = self.extra.get(link.parent_hub) if link is self.primary else None
        if twin is not None:  # the first link reached a hub linked already: one link each
            self._drop_extra(link.parent_hub)
        session = self.sessions[link] = LinkSession(self.manager, link, self)
        session.start()
        if link.several_hubs:
            listed = link.request(Op.LIST_HUBS, b"")
            listed.addCallbacks(self._hubs_listed, lambda _f: None)
        return session

    def link_down(self, link) -> None:
        self.sessions.pop(link, None)

    def session_of(self, link):
        return self.sessions.get(link)

    def _hubs_listed(self, reply) -> None:
        status, _message, payload = reply
        if status is not Status.SUCCESS or not self._running:
            return  # (a parent older than LIST_HUBS: one hub)
        try:
            rows = {row["hub"]: row for row in decode_json(payload)}
        except (ValueError, TypeError, KeyError):
            return
        for name, row in rows.items():
            if name != self.primary.parent_hub and name not in self.extra:
                self._link_to(name, row.get("tls_port"))
        for name in list(self.extra):
            if name not in rows:
                self._drop_extra(name)

    def _link_to(self, name: str, tls_port=None) -> ParentLink:
        """The link to the parent hub `name` ("host:port"), made (and started) if new."""
        if name == self.primary.parent_hub:
            return self.primary
        link = self.extra.get(name)
        if link is None:
            host, port = parse_owner(name)[0]
            address = format_address((host, tls_port if self.tls is not None and tls_port else port))
            link = self.extra[name] = self._make(address)
            _logger.info(
                "region link to {parent}: also linking to its hub {hub}", parent=self.parent, hub=name
            )
            if self._running:
                link.start()
        return link

    def _drop_extra(self, name: str) -> None:
        link = self.extra.pop(name)
        link.stop()
        for topic, on in list(self.down.items()):
            if on is link:  # (to find its hub again: through the first link's redirect)
                self.down.pop(topic)
                self.want_down(topic, True)

    # -- relays from the parent (down) -----------------------------------------------------------

    def down_topics(self, link) -> list:
        """The topics whose relay from the parent this link's session subscribes when it
        comes up: those routed to it, and on the first link every one wanted and not
        routed yet (a redirect then moves it)."""
        manager = self.manager
        wanted = [t for t, _ in manager.interest.wanted_from(self.parent) if manager.ownership.owns(t)]
        for topic in wanted:
            self.down.setdefault(topic, self.primary)
        return [topic for topic in wanted if self.down[topic] is link]

    def want_down(self, topic: str, wanted: bool) -> None:
        link = self.down.setdefault(topic, self.primary) if wanted else self.down.pop(topic, None)
        session = self.sessions.get(link) if link is not None else None
        if session is not None:
            session.want_down(topic, wanted)

    def leave_down(self, topic: str) -> None:
        """The topic left this hub (its relay goes on from its new owner here)."""
        link = self.down.pop(topic, None)
        session = self.sessions.get(link) if link is not None else None
        if session is not None:
            session.leave_down(topic)

    def _owner_link(self, owner: str):
        """The link to the parent hub a redirect named (None for an owner unknown or
        unusable: the relay waits for TOPIC_MOVED, a snapshot or the next redirect)."""
        try:
            return self._link_to(*_hub_of(owner)) if owner else None
        except ValueError:
            return None

    def redirected_down(self, topic: str, owner: str, wanted: bool) -> None:
        """The parent hub asked answered NOT_RESPONSIBLE_FOR_TOPIC naming `owner`."""
        link = self._owner_link(owner)
        if link is None:
            return
        if wanted:
            self.down[topic] = link
        session = self.sessions.get(link)
        if session is not None:
            if not wanted:
                session.down.known_on(topic)  # (held there: ended there)
            session.want_down(topic, wanted)

    # -- relays to the parent (up) ------------------------------------------------------------------

    def redirected_up(self, topic: str, owner: str) -> None:
        """A RELAY_PUBLISH was answered NOT_RESPONSIBLE_FOR_TOPIC naming `owner`: the
        topic's relay up goes on over the owner's link (attached there, from where it was
        acknowledged)."""
        link = self._owner_link(owner)
        session = self.sessions.get(link) if link is not None else None
        if session is not None:
            session.up.set(topic, True)

    def describe(self) -> list:
        return [link.describe() for link in self.links()]


def _hub_of(owner: str) -> tuple:
    """(hub name "host:port", its TLS port or None) of a redirect's owner."""
    address, tls_port = parse_owner(owner)
    return format_address(address), tls_port
