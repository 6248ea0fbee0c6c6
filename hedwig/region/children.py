"""The parent's side of region links: the child regions linked to this hub.

A child's hub connects like any client, then sends REGION_LINK naming its region. The
parent refuses a name that is its own (REGION_REFUSED), and otherwise answers with its
region and its path. When the child's name is in that path (a cycle) the child refuses
the link on reading it, and the connection stays an ordinary client's; the answer still
carries the path, so every region of a cycle learns it, however long the cycle.
Otherwise the connection is now a hub peer: it may hold `__region__` relay
subscriptions and send RELAY_PUBLISH. With `[region] require_child_certificate` only a
TLS connection whose verified client certificate names the region (a subjectAltName DNS
name, or the common name) may link as it: without it any client could relay, or hold a
region's relay subscriptions, by sending REGION_LINK. A region
that links again (its hub restarted before the old connection was seen to die) replaces
its old link, whose connection is closed; a child region of several hubs links from each
of them (REGION_LINK names the linking hub too), and a hub that links again replaces its
own link only. With [auth] on, a child links as the region
its user names (`region` in the users file), and relays only the origins that user's
`relay_origins` name, never this region's or its ancestors' (check_origin).

Right after the answer the parent sends the child its interest (REGION_INTEREST): the
topics it wants relayed up, and those on which it holds a relay subscription for the
child; then every change as interest comes and goes. In a region of several hubs each
hub speaks for the topics it owns (a topic's relays run on its owner): its snapshot
names those only, and a topic it claims later is announced then (`claimed`).
"""

from twisted.logger import Logger

from hedwig.config.tls import certificate_names, is_tls, peer_certificate
from hedwig.protocol.framing import LINK_FRAME_MARGIN
from hedwig.protocol.requests import RequestRefused
from hedwig.protocol.status import Status
from hedwig.region.inbox import RelaySource
from hedwig.region.path import cycle_through
from hedwig.region.settings import is_region_name
from hedwig.region.wire import (
    InterestKind,
    decode_region_link,
    encode_region_link_reply,
    interest_frames,
)

_logger = Logger()


def unauthenticated(connection, region: str) -> str | None:
    """Why `connection` may not link as child `region` under [region]
    require_child_certificate, or None when its TLS client certificate names the region."""
    if not is_tls(connection.transport):
        return (
            f"region {region} linked over plain TCP; this hub takes region links only over TLS with a "
            "client certificate (set parent_tls = true and the parent's [tls] port in parent_address)"
        )
    certificate = peer_certificate(connection.transport)
    if certificate is None:
        return (
            f"region {region} presented no client certificate; its hub presents [tls] cert_file on the link"
        )
    names = certificate_names(certificate)
    if region.lower() not in names:
        issued_to = ", ".join(sorted(names)) or "no name"
        return f"the client certificate is issued to {issued_to}, not region {region}"
    return None


class ChildLink:
    """One linked hub of a child region: its connection and what it relayed up."""

    __slots__ = ("connection", "hub", "linked_at", "region", "source", "takes_options")

    def __init__(self, region: str, hub: str, connection, linked_at: float):
        self.region = region
        self.hub = hub  # the child hub's name, "" when it did not say
        self.connection = connection
        self.linked_at = linked_at
        self.source = RelaySource(region)
        # It sent a TOPIC_OPTIONS, so it knows the op: this hub's go to it too (options.py).
        self.takes_options = False


class Children:
    def __init__(self, manager):
        self.manager = manager
        self.links: dict[str, dict[str, ChildLink]] = {}  # region -> child hub -> its link
        self._by_connection: dict[object, ChildLink] = {}
        self.refused = 0

    def accept(self, connection, body) -> bytes:
        """Link the child region REGION_LINK names; the reply payload. Raises RequestRefused."""
        manager = self.manager
        region, hub = decode_region_link(body)
        if not is_region_name(region):
            raise RequestRefused(Status.MALFORMED_REQUEST, f"{region[:60]!r} is not a region name")
        principal = getattr(connection, "principal", None)
        if principal is not None and principal.region != region:  # ([auth] on: hedwig.auth)
            problem = f"user {principal.name} may not link as region {region}"
            self._refuse(connection, region, problem)
            raise RequestRefused(Status.NOT_AUTHORIZED, problem)
        if manager.settings.require_child_certificate:
            problem = unauthenticated(connection, region)
            if problem is not None:
                self._refuse(connection, region, problem)
                raise RequestRefused(Status.REGION_REFUSED, problem)
        if region == manager.name:
            problem = f"region {region} is this hub's own region: a region cannot be its own child"
            self._refuse(connection, region, problem)
            raise RequestRefused(Status.REGION_REFUSED, problem)
        cycle = cycle_through(manager.path.names, region)
        if cycle is not None:
            self._refuse(connection, region, cycle)
            return encode_region_link_reply(manager.name, manager.path.names, False)
        previous = self.links.get(region, {}).get(hub)
        if previous is not None and previous.connection is not connection:
            _logger.warn(
                "region {region} linked again from {peer}; closing its link from {old}",
                region=region,
                peer=connection.peer,
                old=previous.connection.peer,
            )
            self._forget(previous)
            previous.connection.close_when_sent()
        link = ChildLink(region, hub, connection, manager.reactor.seconds())
        self.links.setdefault(region, {})[hub] = link
        self._by_connection[connection] = link
        connection.is_hub_peer = True
        connection.session.decoder.allow(manager.hub.max_frame_bytes + LINK_FRAME_MARGIN)
        connection.closed.addCallback(lambda _: self._lost(link))
        _logger.info("{peer}: region {region} linked as a child", peer=connection.peer, region=region)
        if manager.path.complete:
            # After the reply, which the hub writes when this returns.
            manager.reactor.callLater(0, self._send_snapshot, link)
        several = manager.ownership.shared  # (then each hub speaks for its own topics)
        return encode_region_link_reply(manager.name, manager.path.names, manager.path.complete, several)

    def _refuse(self, connection, region: str, problem: str) -> None:
        """A refused link is a client error (hub/peerlog.py): once per peer per interval,
        the rest counted, so a peer retrying a bad link cannot flood the log."""
        self.refused += 1
        self.manager.hub.client_errors.warn(
            _logger,
            connection.peer_host,
            "{peer}: refused a region link from {region}: {problem}",
            peer=connection.peer,
            region=region,
            problem=problem,
        )

    def check_origin(self, connection, origin: str) -> None:
        """With [auth] on, a child relays only origins from its side of the tree: those
        its user's relay_origins name (its own region by default), never this region or
        one above it (hedwig.auth.principal). Raises RequestRefused(NOT_AUTHORIZED)."""
        principal = getattr(connection, "principal", None)
        if principal is None:
            return
        if origin in self.manager.path.names or not principal.may_relay_origin(origin):
            raise RequestRefused(
                Status.NOT_AUTHORIZED,
                f"region {principal.region} may not relay messages of origin {origin[:60]!r}: "
                "not from its side of the region tree",
            )

    def source_of(self, connection) -> RelaySource | None:
        link = self._by_connection.get(connection)
        return link.source if link is not None else None

    def link_of(self, connection) -> ChildLink | None:
        return self._by_connection.get(connection)

    def _current(self, link: ChildLink) -> bool:
        return self.links.get(link.region, {}).get(link.hub) is link

    def _forget(self, link: ChildLink) -> None:
        if self._current(link):
            hubs = self.links[link.region]
            del hubs[link.hub]
            if not hubs:
                del self.links[link.region]
        self._by_connection.pop(link.connection, None)

    def _lost(self, link: ChildLink) -> None:
        if self._current(link):
            _logger.info("region {region}'s link ended", region=link.region)
        self._forget(link)

    def _open_links(self, region: str) -> list:
        return [link for link in self.links.get(region, {}).values() if link.connection.is_open]

    def _send_snapshot(self, link: ChildLink) -> None:
        if not self._current(link) or not link.connection.is_open:
            return
        interest, owns = self.manager.interest, self.manager.ownership.owns
        write = link.connection.write
        wanted = [(topic, since) for topic, since in interest.wanted_from(link.region) if owns(topic)]
        for frame in interest_frames(InterestKind.WANT, wanted):
            write(frame)
        held = [topic for topic in interest.relayed_by(link.region) if owns(topic)]
        for frame in interest_frames(InterestKind.HELD, held):
            write(frame)
        for frame in interest_frames(InterestKind.END, []):
            write(frame)

    def interest_changed(self, topic: str, region: str, wanted: bool) -> None:
        if not self.manager.ownership.owns(topic):
            return  # (its owner speaks for it)
        if wanted:
            frames = interest_frames(InterestKind.ADD, [(topic, self.manager.interest.since(topic, region))])
        else:
            frames = interest_frames(InterestKind.DROP, [topic])
        for link in self._open_links(region):
            for frame in frames:
                link.connection.write(frame)

    def claimed(self, topic: str) -> None:
        """This hub now owns `topic` (a region of several hubs): the child regions that
        want it relayed up hear it from here now."""
        interest = self.manager.interest
        for region in list(self.links):
            if interest.wants(topic, region):
                self.interest_changed(topic, region, True)

    def drop_all(self, reason: str) -> None:
        """Close every child link (this region's path changed: they must check it again)."""
        for hubs in list(self.links.values()):
            for link in list(hubs.values()):
                _logger.info("closing region {region}'s link: {reason}", region=link.region, reason=reason)
                self._forget(link)
                link.connection.close_when_sent()

    def describe(self) -> list:
        now = self.manager.reactor.seconds()
        return [
            {
                "region": link.region,
                "hub": link.hub or None,
                "peer": link.connection.peer,
                "tls": is_tls(link.connection.transport),
                "linked_for_s": round(now - link.linked_at, 3),
            }
            for _region, hubs in sorted(self.links.items())
            for _hub, link in sorted(hubs.items())
        ]
