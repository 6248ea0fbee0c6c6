"""Who a connection acts as, and what that user may do.

Permissions are granted per action on topic name patterns: `*` matches any run of
characters, `?` one character (topic names are [A-Za-z0-9._-], so no other character is
special). `admin` permits every action on every topic, the admin reads (STATS,
LIST_TOPICS, every topic's subscriptions) and acting on subscriptions other users own;
DESCRIBE_TOPIC and a topic's LIST_SUBSCRIPTIONS need subscribe on the topic, and show a
user the subscriptions it may use (hedwig/auth/visibility.py). A region's
link acts as a principal whose `region` names the region it may link as, and whose
`relay_origins` are the origin regions it may relay (its side of the tree).

A Principal answers `may(action, topic)` from a bounded cache, so a connection pays the
pattern matching once per topic, not once per request.
"""

from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from hedwig.protocol.spec import Permission

PUBLISH = "publish"
SUBSCRIBE = "subscribe"
CREATE = "create"
ACTIONS = (PUBLISH, SUBSCRIBE, CREATE)
_CACHE_LIMIT = 4096  # (action, topic) answers a principal keeps; cleared when full


def matches(patterns, name: str) -> bool:
    """Whether `name` matches one of `patterns` (fnmatch, case-sensitive)."""
    return any(fnmatchcase(name, pattern) for pattern in patterns)


@dataclass(eq=False)
class Principal:
    name: str
    grants: dict = field(default_factory=dict)  # action -> tuple of topic patterns
    admin: bool = False
    region: str = ""  # the region this user's link may link as ("" : not a region)
    relay_origins: tuple = ()  # origin-region patterns its relays may carry
    _answers: dict = field(default_factory=dict, repr=False)

    def may(self, action: str, topic: str) -> bool:
        """Whether this user may `action` (publish, subscribe, create) on `topic`."""
        key = (action, topic)
        answer = self._answers.get(key)
        if answer is None:
            answer = self.admin or matches(self.grants.get(action, ()), topic)
            if len(self._answers) >= _CACHE_LIMIT:
                self._answers.clear()
            self._answers[key] = answer
        return answer

    def holds(self, permission: Permission) -> bool:
        """Whether this user holds `permission`, one that names no topic (none, region,
        admin: an op's, hedwig.protocol.spec); the others are asked of `may` per topic."""
        if permission is Permission.NONE:
            return True
        if permission is Permission.ADMIN:
            return self.admin
        if permission is Permission.REGION:
            return bool(self.region)
        raise ValueError(f"{permission} is held per topic: ask may(action, topic)")

    def may_relay_origin(self, origin: str) -> bool:
        """Whether this region's link may relay messages first published in `origin`."""
        return bool(self.region) and matches(self.relay_origins, origin)

    def owns(self, owner: str | None) -> bool:
        """Whether this user may act on a subscription recorded as `owner`'s (None: one
        made with authentication off, which every user allowed on its topic may use)."""
        return owner is None or owner == self.name or self.admin


# A connection that did not authenticate on a hub that allows it, when the users file
# grants the name "anonymous" nothing.
ANONYMOUS = Principal("anonymous")
