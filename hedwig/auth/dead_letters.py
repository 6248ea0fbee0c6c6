"""Dead letters published as the user who owns their subscription.

A shared subscription's dead letters are published by the hub itself, not by a request
the access gate (hedwig/auth/gate.py) sees, and in a region of several hubs they may be
forwarded to the dead-letter topic's owner as [auth] hub_user, who may publish anywhere.
So the permission is checked here, at every dead letter, for the subscription's owner as
the users file says now: publish on the dead-letter topic, and create unless the topic
exists (a topic another hub of the region owns exists). A subscription made with [auth]
off has no owner, and its dead letters go as they did.

A refusal fails the publish with NotAuthorized, which is not a refusal of the message set
itself: the messages are delivered again rather than acknowledged (hedwig/delivery/
shared_acks.py), and each attempt logs why, so nothing is lost while the operator fixes
the permission or the subscription.
"""

from twisted.internet.defer import fail, maybeDeferred

from hedwig.auth.principal import CREATE, PUBLISH
from hedwig.hub.errors import NotOwner
from hedwig.protocol.errors import NotAuthorized


class OwnersDeadLetters:
    """publish(topic, message_set, owner) through `publish(topic, message_set)` (the hub's
    one publish path, or OwnerPublishing in a region), once `owner` may."""

    def __init__(self, publish, authenticator=None, topics=None):
        """`authenticator`: the hub's IAuthenticator with [auth] on (its users file says
        what each owner may), None with [auth] off; `topics`: the ITopicManager, to open
        a dead-letter topic its owner may not create only if it exists."""
        self._publish = publish
        self._authenticator = authenticator
        self._topics = topics

    def publish(self, topic: str, message_set: bytes, owner: str | None = None):
        if self._authenticator is None or owner is None:
            return maybeDeferred(self._publish, topic, message_set)
        principal = self._authenticator.users.principal(owner)
        if principal is None:
            return fail(NotAuthorized(f"the subscription's owner {owner} is no longer a user"))
        if not principal.may(PUBLISH, topic):
            return fail(NotAuthorized(f"user {owner} may not publish on dead-letter topic {topic}"))
        if principal.may(CREATE, topic):
            return maybeDeferred(self._publish, topic, message_set)
        missing = NotAuthorized(f"dead-letter topic {topic} does not exist; user {owner} may not create it")
        opening = self._topics.acquire_existing(topic, missing)
        opening.addErrback(lambda failure: failure.trap(NotOwner))  # (owned elsewhere: it exists)
        return opening.addCallback(lambda _: self._publish(topic, message_set))
