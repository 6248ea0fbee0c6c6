"""Dead letters to a topic another hub of the region owns.

A shared subscription's dead letters are published to its dead-letter topic (by
default "<topic>.dlq") through the hub's one publish path (hedwig.delivery.sharing).
In a region of several hubs (hedwig.hub.zk_topics) that topic may be owned by another
hub, and the publish fails NotOwner naming it. The hub then acts as a client of the
owner: it publishes the same message set there with hedwig's Twisted client, which
follows further redirects as any client does. The dead letter is acknowledged once the
owner has stored it. A set the owner refuses as such (malformed, too large) is
acknowledged, as one refused here is; any other failure (the owner unreachable, a
permission missing) delivers the messages again, and they are dead-lettered again at
their next give-back, as for any failed dead-letter publish.

One client per owner named, made when first needed and kept (a region has a few hubs);
one that lost its connection is dropped, and made again next time. The connection goes
to the owner's plain port (hubs of a region share a network); with the hubs' [auth] on it
authenticates as [auth] hub_user (hedwig.auth.settings.hub_credentials), a user that
needs publish and create on the dead-letter topics.
"""

from twisted.internet.defer import DeferredList, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from hedwig.client.config import ClientConfig
from hedwig.client.twisted import Client
from hedwig.hub.errors import NotOwner
from hedwig.protocol.addresses import format_address
from hedwig.protocol.errors import ConnectionLost, CouldNotConnect, MalformedRequest, MessageTooLarge
from hedwig.protocol.messageset import MessageSetError
from hedwig.protocol.redirects import parse_owner


class OwnerPublishing:
    """publish(topic, message_set) here, or on the topic's owner when another hub owns it."""

    log = Logger()

    def __init__(self, hub, reactor, credentials=None):
        self.hub = hub
        self.reactor = reactor
        self.credentials = credentials  # hedwig.protocol.auth_request.Credentials, or None
        # Every owner's client is made from one ClientConfig (made once this hub listens,
        # which names it); each connects with its first publish, as the Twisted client does.
        self._config = None
        self._clients = {}  # owner "host:port" -> hedwig.client.twisted.Client
        self.forwarded = 0  # message sets stored by another hub
        self._closed = False

    def publish(self, topic: str, message_set: bytes):
        """Deferred[stored]: the hub's publish, else the owner's (see the module)."""
        return self.hub.publish(topic, message_set).addErrback(self._elsewhere, topic, message_set)

    def _elsewhere(self, failure, topic: str, message_set: bytes):
        failure.trap(NotOwner)
        if not failure.value.owner or self._closed:
            return failure
        address = format_address(parse_owner(failure.value.owner)[0])
        client = self._client(address)
        self.log.debug("dead letters for {topic}: published on its owner {owner}", topic=topic, owner=address)
        return client.publish_set(topic, message_set).addCallbacks(
            self._stored, self._failed, errbackArgs=(address, client)
        )

    def _stored(self, seqs):
        self.forwarded += 1
        return seqs

    def _failed(self, failure, address: str, client):
        if failure.check(ConnectionLost, CouldNotConnect) and self._clients.get(address) is client:
            del self._clients[address]  # (made again next time: the owner may have moved)
            client.close()
        elif failure.check(MalformedRequest, MessageTooLarge):
            # The owner refused the set itself, as this hub would have: said so in the same
            # terms (the subscription then acknowledges it rather than trying for ever).
            error = failure.value
            return Failure(MessageSetError(error.status, f"{address}: {error.message}"))
        return failure

    def _client(self, address: str):
        client = self._clients.get(address)
        if client is None:
            if self._config is None:
                name = f"hub {self.hub.name} (dead letters)"
                self._config = ClientConfig(credentials=self.credentials, client_name=name)
            client = self._clients[address] = Client(self.reactor, address, config=self._config)
        return client

    def close(self):
        """Deferred: every client closed (the hub is stopping)."""
        self._closed = True
        clients, self._clients = list(self._clients.values()), {}
        if not clients:
            return succeed(None)
        return DeferredList([client.close() for client in clients], consumeErrors=True)
