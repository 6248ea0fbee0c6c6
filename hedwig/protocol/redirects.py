"""Following NOT_RESPONSIBLE_FOR_TOPIC: one rule, and one routing table, for every driver
of the protocol session (both clients now; the region link once a parent region runs on
several hubs).

A hub that does not own a topic names the owner in its status message: "host:port", or
"host:port:tls_port" when the owner listens for TLS too (Hedwig's "host:port:sslport");
a client over TLS goes to the TLS port, others to the plain one. It goes there at most
`max_redirects` times for one request, and never back to a hub it already asked: hubs
that disagree about an owner must not bounce a request between them for ever. The owner
it was sent to is remembered for the topic's later requests (`Routes`) until that hub
cannot be reached or the topic moves.
"""

from hedwig.protocol.addresses import format_address, parse_address
from hedwig.protocol.errors import TooManyRedirects, error_for
from hedwig.protocol.status import Status


def parse_owner(owner: str) -> tuple[tuple[str, int], int | None]:
    """((host, port), TLS port or None) of a redirect's owner, "host:port[:tls_port]"
    (a host in brackets for IPv6); ValueError when it is not one."""
    rest = owner[owner.find("]") + 1 :] if owner.startswith("[") else owner  # (past an IPv6 host)
    fields = rest.split(":")
    if len(fields) == 3:
        tls_port = int(fields[2]) if fields[2].isdigit() else 0
        if not 0 < tls_port < 65536:
            raise ValueError(f"owner {owner!r}: TLS port {fields[2]!r} is not one of 1-65535")
        return parse_address(owner[: owner.rfind(":")]), tls_port
    return parse_address(owner), None


def next_owner(topic: str, owner: str, asked: list, max_redirects: int, tls: bool = False) -> tuple[str, int]:
    """The address to ask next, after `asked[-1]` named `owner` (its TLS port for a
    client over TLS); raises TooManyRedirects for no owner, an unusable one (a TLS client
    sent to a hub without TLS), a loop, or one redirect too many."""
    owner = owner.strip()
    here = format_address(asked[-1])
    if not owner:
        raise TooManyRedirects(message=f"{here} does not own {topic} and named no owner")
    try:
        address, tls_port = parse_owner(owner)
        if tls:
            if tls_port is None:
                raise ValueError("it has no TLS port")
            address = (address[0], tls_port)
    except ValueError:
        raise TooManyRedirects(message=f"{here} named an unusable owner {owner!r} for {topic}") from None
    if address in asked:
        path = " -> ".join(format_address(a) for a in [*asked, address])
        raise TooManyRedirects(message=f"redirect loop for {topic}: {path}")
    if len(asked) > max_redirects:
        raise TooManyRedirects(message=f"{topic}: more than {max_redirects} redirects")
    return address


class Routes:
    """Which hub a client asks about a topic: the owner a redirect named, else `default`
    (the hub of the client's list that answered)."""

    __slots__ = ("_owners", "default", "tls")

    def __init__(self, default, tls: bool = False):
        self.default = default
        self.tls = tls  # the client reaches hubs over TLS: redirects name their TLS ports
        self._owners = {}  # topic -> owner address learned from a redirect

    def address(self, topic):
        """The hub to ask about `topic`; None (admin requests) asks the default hub."""
        if topic is None:
            return self.default
        return self._owners.get(topic, self.default)

    def send(self, topic, address) -> None:
        """Ask `address` about `topic` next (the hub asked said it is down)."""
        self._owners[topic] = address

    def forget(self, topic) -> None:
        """Ask the default hub again (the owner is gone, or the topic moved)."""
        self._owners.pop(topic, None)

    def follow(self, topic, response, asked: list, max_redirects: int):
        """After a failed `response` from `asked[-1]`: the owner's address to ask next,
        remembered for the topic. Any other status (or a redirect of a request that names
        no topic) raises its typed error, as does a redirect the rule refuses."""
        if response.status is not Status.NOT_RESPONSIBLE_FOR_TOPIC or topic is None:
            raise error_for(response.status, response.message)
        address = next_owner(topic, response.message, asked, max_redirects, self.tls)
        self._owners[topic] = address
        return address
