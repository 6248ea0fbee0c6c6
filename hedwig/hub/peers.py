"""The hub as a client of the other hubs of its region (hedwig.hub.zk_topics): one
connection per hub asked, made when first needed and kept (a region has a few hubs),
dropped when it is lost and made again next time.

Four things ask another hub: a dead letter whose dead-letter topic that hub owns
(forwarding.py), the listings of the whole region (`hedwig subscriptions` with no
topic, Hub.list_subscriptions), which ask each topic's owner for its rows, the
partitions of a partitioned topic that hub owns (Hub._on_owner), and a Kafka group's
offsets of the partitions that hub owns (GROUP_OFFSET: hedwig/kafka/offsets.py). The
connection goes to the hub's plain port (hubs of a region share a network); with the
hubs' [auth] on it authenticates as [auth] hub_user (hedwig.auth.settings.hub_credentials).
"""

from twisted.internet.defer import DeferredList, succeed

from hedwig.client.twisted import Client


class PeerClients:
    def __init__(self, hub, reactor, credentials=None):
        self.hub = hub
        self.reactor = reactor
        self.credentials = credentials  # hedwig.protocol.auth_request.Credentials, or None
        self._clients = {}  # "host:port" -> hedwig.client.twisted.Client
        self.closed = False

    def client(self, address: str, purpose: str):
        """The client of the hub at `address` ("host:port"); `purpose` names it to that hub."""
        client = self._clients.get(address)
        if client is None:
            client = self._clients[address] = Client(
                self.reactor,
                address,
                credentials=self.credentials,
                client_name=f"hub {self.hub.name} ({purpose})",
            )
        return client

    def lost(self, address: str, client) -> None:
        """`client` lost its connection: made again next time (the hub may have moved)."""
        if self._clients.get(address) is client:
            del self._clients[address]
            client.close()

    def close(self):
        """Deferred: every client closed (the hub is stopping)."""
        self.closed = True
        clients, self._clients = list(self._clients.values()), {}
        if not clients:
            return succeed(None)
        return DeferredList([client.close() for client in clients], consumeErrors=True)
