"""Which topics this hub relays between regions: all of them on a hub alone; in a region
of several hubs (hedwig.hub.zk_topics), those it owns now. A topic's relays run on its
owner and move with it: the owner stores what is relayed in (the inbox publishes
through its log) and sends what is relayed out (its relay subscriptions are served
there), so a hub takes up a topic's relays when it claims the topic and lets them go
when it releases it.
"""


class RelayOwnership:
    def __init__(self, hub):
        self._topics = hub.topics
        # (a topic manager over ZooKeeper says what it owns; the embedded one owns all)
        self.shared = hasattr(hub.topics, "owns")

    def owns(self, topic: str) -> bool:
        return not self.shared or self._topics.owns(topic)

    def listen(self, claimed, released) -> None:
        """claimed(topic) / released(topic) as this hub takes a topic and lets it go."""
        if self.shared:
            self._topics.ownership_listeners.append((claimed, released))

    def acquire_for_relay(self, topic: str):
        """Deferred[topic log]: the topic opened here; in a region of several hubs, claimed
        here if nobody owns it (a relay must run somewhere; rebalancing evens the load
        later), else failing with the owner (NotOwner)."""
        if self.shared:
            return self._topics.acquire(topic, place=False)
        return self._topics.acquire(topic)

    def when_unowned(self, topic: str):
        """Deferred firing once no hub owns `topic` (at once if none does): a hub that
        wants to relay it may claim it then. None on a hub alone."""
        return self._topics.when_unowned(topic) if self.shared else None
