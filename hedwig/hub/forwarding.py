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

The owner is reached through the hub's PeerClients (peers.py): one client per owner,
kept; with the hubs' [auth] on it authenticates as [auth] hub_user, a user that needs
publish and create on the dead-letter topics.
"""

from twisted.logger import Logger
from twisted.python.failure import Failure

from hedwig.hub.errors import NotOwner
from hedwig.protocol.addresses import format_address
from hedwig.protocol.errors import ConnectionLost, CouldNotConnect, MalformedRequest, MessageTooLarge
from hedwig.protocol.messageset import MessageSetError
from hedwig.protocol.redirects import parse_owner


class OwnerPublishing:
    """publish(topic, message_set) here, or on the topic's owner when another hub owns it."""

    log = Logger()

    def __init__(self, hub, peers):
        self.hub = hub
        self.peers = peers  # PeerClients: the hub's clients of the region's other hubs
        self.forwarded = 0  # message sets stored by another hub

    def publish(self, topic: str, message_set: bytes):
        """Deferred[stored]: the hub's publish, else the owner's (see the module)."""
        return self.hub.publish(topic, message_set).addErrback(self._elsewhere, topic, message_set)

    def _elsewhere(self, failure, topic: str, message_set: bytes):
        failure.trap(NotOwner)
        if not failure.value.owner or self.peers.closed:
            return failure
        address = format_address(parse_owner(failure.value.owner)[0])
        client = self.peers.client(address, "dead letters")
        self.log.debug("dead letters for {topic}: published on its owner {owner}", topic=topic, owner=address)
        return client.publish_set(topic, message_set).addCallbacks(
            self._stored, self._failed, errbackArgs=(address, client)
        )

    def _stored(self, seqs):
        self.forwarded += 1
        return seqs

    def _failed(self, failure, address: str, client):
        if failure.check(ConnectionLost, CouldNotConnect):
            self.peers.lost(address, client)
        elif failure.check(MalformedRequest, MessageTooLarge):
            # The owner refused the set itself, as this hub would have: said so in the same
            # terms (the subscription then acknowledges it rather than trying for ever).
            error = failure.value
            return Failure(MessageSetError(error.status, f"{address}: {error.message}"))
        return failure
