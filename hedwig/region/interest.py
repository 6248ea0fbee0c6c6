"""Interest: which topics this region wants relayed from each neighbour.

A region wants a topic from neighbour N when it holds a durable subscription to it that is
not N's own relay subscription: a local subscriber, or another neighbour relaying the
topic from here (`__region__M`, M != N). So interest flows along the tree by itself: a
subscriber in a leaf makes its parent want the topic from the grandparent and from the
leaf's siblings, and so on, and nothing flows towards a region that has no use for it.
Durable subscriptions count whether attached or not (a detached subscriber's messages
must keep arriving), and interest ends when the subscription is deleted.
"""

from hedwig.region.settings import relay_peer


class _TopicInterest:
    __slots__ = ("local", "relays")

    def __init__(self):
        self.local = set()  # subscriber ids that are not region relays
        self.relays = set()  # regions holding a relay subscription here

    def wants(self, neighbour: str) -> bool:
        if self.local:
            return True
        relays = self.relays
        return len(relays) > 1 or (len(relays) == 1 and neighbour not in relays)


class InterestTable:
    """Every durable subscription of this hub, by topic (sets: adding or removing one twice
    changes nothing, so notices and a listing may overlap)."""

    def __init__(self):
        self._topics: dict[str, _TopicInterest] = {}

    def __len__(self) -> int:
        return len(self._topics)

    def add(self, topic: str, subscriber_id: str) -> None:
        interest = self._topics.get(topic)
        if interest is None:
            interest = self._topics[topic] = _TopicInterest()
        peer = relay_peer(subscriber_id)
        if peer is None:
            interest.local.add(subscriber_id)
        else:
            interest.relays.add(peer)

    def remove(self, topic: str, subscriber_id: str) -> None:
        interest = self._topics.get(topic)
        if interest is None:
            return
        peer = relay_peer(subscriber_id)
        if peer is None:
            interest.local.discard(subscriber_id)
        else:
            interest.relays.discard(peer)
        if not interest.local and not interest.relays:
            del self._topics[topic]

    def wants(self, topic: str, neighbour: str) -> bool:
        """Whether this region wants `topic` relayed from `neighbour`."""
        interest = self._topics.get(topic)
        return interest is not None and interest.wants(neighbour)

    def wanted_from(self, neighbour: str) -> list[str]:
        """Every topic wanted from `neighbour`, sorted."""
        return sorted(topic for topic, interest in self._topics.items() if interest.wants(neighbour))

    def relayed_by(self, region: str) -> list[str]:
        """Topics on which `region` holds a relay subscription here, sorted."""
        return sorted(topic for topic, interest in self._topics.items() if region in interest.relays)

    def relays(self, topic: str) -> set:
        interest = self._topics.get(topic)
        return set(interest.relays) if interest is not None else set()

    def local_subscribers(self, topic: str) -> int:
        interest = self._topics.get(topic)
        return len(interest.local) if interest is not None else 0
