"""The relay seam: what the hub asks of region relaying, declared in one place.

Region code (hedwig.region.RegionManager) implements IRelays and is handed to the hub
once, by the hub's assembly, with `Hub.attach_relays`: the hub then serves the relay ops
it names, asks it for the relay rows of DESCRIBE_TOPIC and STATS, and gives it to the
delivery manager as its IRelayPolicy. Relayed message sets come back in through
`Hub.publish`, the path every client publish takes, with the same checks. Nothing in
hedwig.region assigns hub attributes or calls into the cache or the topic log directly.
"""

from zope.interface import Attribute

from hedwig.delivery.interface import IRelayPolicy


class IRelays(IRelayPolicy):
    """Region relaying as the hub sees it (and, through IRelayPolicy, delivery)."""

    name = Attribute("this hub's region name")

    def request_handlers():
        """{op: handler} of the requests relaying serves beyond the core protocol
        (REGION_LINK, RELAY_PUBLISH). A handler is called as
        `handler(connection, request_id, body, started)`: it decodes the body, raises
        RequestRefused for a bad request, and answers through connection.answer(...)."""

    def start():
        """Deferred, once the region's interest is loaded; links to the parent start then."""

    def stop():
        """Deferred, once the parent link is closed and its relay pointers written."""

    def describe_relays(topic, subscribers):
        """Deferred[list of dict]: the relay rows of DESCRIBE_TOPIC for `topic`, given its
        subscriber rows."""

    def stats():
        """The relay counters (dict) for STATS."""
