"""Interest: which topics this region wants relayed from each neighbour, and since when.

A region wants a topic from neighbour N when it holds a durable subscription to it that is
not N's own relay subscription: a local subscriber, or another neighbour relaying the
topic from here (`__region__M`, M != N). So interest flows along the tree by itself: a
subscriber in a leaf makes its parent want the topic from the grandparent and from the
leaf's siblings, and so on, and nothing flows towards a region that has no use for it.
Durable subscriptions count whether attached or not (a detached subscriber's messages
must keep arriving), and interest ends when the subscription is deleted.

Each subscription is known with the time this hub learnt of it, so a relay subscription
created late (its link was down when the interest began) starts where the interest did,
not at the neighbour's latest message: a subscriber misses nothing published after it
subscribed because a link happened to be down then.
"""

from hedwig.region.settings import relay_peer


class _TopicInterest:
    __slots__ = ("local", "local_since", "relays")

    def __init__(self):
        self.local = {}  # subscriber id -> since (us): subscribers that are not region relays
        self.local_since = None  # the least of those (kept: a topic may have many subscribers)
        self.relays = {}  # region -> since (us): regions holding a relay subscription here

    def since(self, neighbour: str) -> int | None:
        """When this region began to want the topic from `neighbour` (None: it does not)."""
        since = self.local_since
        for region, t in self.relays.items():
            if region != neighbour and (since is None or t < since):
                since = t
        return since

    def add_local(self, subscriber_id: str, since_us: int) -> None:
        if subscriber_id not in self.local:
            self.local[subscriber_id] = since_us
            if self.local_since is None or since_us < self.local_since:
                self.local_since = since_us

    def remove_local(self, subscriber_id: str) -> None:
        since = self.local.pop(subscriber_id, None)
        if since is not None and since == self.local_since:
            self.local_since = min(self.local.values()) if self.local else None


class InterestTable:
    """Every durable subscription of this hub, by topic (adding or removing one twice
    changes nothing, so notices and a listing may overlap)."""

    def __init__(self):
        self._topics: dict[str, _TopicInterest] = {}

    def __len__(self) -> int:
        return len(self._topics)

    def add(self, topic: str, subscriber_id: str, since_us: int = 0) -> None:
        interest = self._topics.get(topic)
        if interest is None:
            interest = self._topics[topic] = _TopicInterest()
        peer = relay_peer(subscriber_id)
        if peer is None:
            interest.add_local(subscriber_id, since_us)
        else:
            interest.relays.setdefault(peer, since_us)

    def remove(self, topic: str, subscriber_id: str) -> None:
        interest = self._topics.get(topic)
        if interest is None:
            return
        peer = relay_peer(subscriber_id)
        if peer is None:
            interest.remove_local(subscriber_id)
        else:
            interest.relays.pop(peer, None)
        if not interest.local and not interest.relays:
            del self._topics[topic]

    def reset(self, topic: str, subscriptions: dict) -> None:
        """The topic's durable subscriptions are these ({subscriber id: since (us)}), as
        its metadata says (read again when this hub claims it: in a region of several
        hubs, the changes made while another hub owned it were that hub's to see)."""
        self._topics.pop(topic, None)
        for subscriber_id, since in subscriptions.items():
            self.add(topic, subscriber_id, since)

    def wants(self, topic: str, neighbour: str) -> bool:
        """Whether this region wants `topic` relayed from `neighbour`."""
        return self.since(topic, neighbour) is not None

    def since(self, topic: str, neighbour: str) -> int | None:
        """Since when (us, this hub's clock) this region wants `topic` from `neighbour`."""
        interest = self._topics.get(topic)
        return interest.since(neighbour) if interest is not None else None

    def wanted_from(self, neighbour: str) -> list[tuple[str, int]]:
        """(topic, since) of every topic wanted from `neighbour`, sorted."""
        wanted = []
        for topic in sorted(self._topics):
            since = self._topics[topic].since(neighbour)
            if since is not None:
                wanted.append((topic, since))
        return wanted

    def relayed_by(self, region: str) -> list[str]:
        """Topics on which `region` holds a relay subscription here, sorted."""
        return sorted(topic for topic, interest in self._topics.items() if region in interest.relays)

    def relays(self, topic: str) -> set:
        interest = self._topics.get(topic)
        return set(interest.relays) if interest is not None else set()

    def local_subscribers(self, topic: str) -> int:
        interest = self._topics.get(topic)
        return len(interest.local) if interest is not None else 0
