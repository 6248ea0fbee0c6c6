"""Relays between regions that run on several hubs: a parent region (world) of two hubs
and a child region (europe) of one, then two, on one ZooKeeper (a root each). Each
topic's relays run on its owner in each region and move with it; the child links to
every hub of the parent and follows redirects on the link. Publishing in both regions,
every subscriber in each gets every message once, each origin's in origin order, as with
regions of one hub (tests/region/test_tree.py); and again after a second hub joins the
child region and half of its topics (with their relays) move to it."""

import threading

import pytest

from hedwig.client import Client
from hedwig.testing.polling import wait_until
from tests.region.hubs import check_exactly_once

TOPICS = [f"relayed-{i}" for i in range(4)]
PER_REGION = 300
LINK = {"retry_backoff_ms": 50, "max_retry_backoff_ms": 500}

pytestmark = pytest.mark.slow


class Subscriber(threading.Thread):
    """A durable subscriber of every topic in one region, through a client of its hubs."""

    def __init__(self, addresses: str, name: str):
        super().__init__(daemon=True, name=f"subscriber-{name}")
        self.client = Client(addresses, timeout=30, reconnect_timeout=120).connect()
        self.subscriptions = {t: self.client.subscribe(t, f"app-{name}", window=10_000) for t in TOPICS}
        self.messages = {topic: {} for topic in TOPICS}  # topic -> seq -> (origin, origin seq, payload)
        self.redelivered = 0
        self.error = None
        self._halt = threading.Event()

    def run(self):
        try:
            while not self._halt.is_set():
                for topic, subscription in self.subscriptions.items():
                    batch = subscription.receive_batch(timeout=0.05)
                    for m in batch:
                        held = self.messages[topic]
                        if m.seq in held:
                            self.redelivered += 1
                        held[m.seq] = (m.origin_region, m.origin_seq, m.payload)
                    if batch:
                        subscription.ack(batch[-1])
        except Exception as e:
            self.error = e

    def holds(self, count: int) -> bool:
        assert self.error is None, self.error
        return all(len(held) >= count for held in self.messages.values())

    def stop(self):
        self._halt.set()
        self.join(30)
        self.client.close()


def publish(addresses: str, region: str, first: int, count: int) -> None:
    with Client(addresses, timeout=30) as client:
        for topic in TOPICS:
            for at in range(first, first + count, 50):
                n = min(50, first + count - at)
                client.publish_many(topic, [b"%s:%d" % (region.encode(), i) for i in range(at, at + n)])


def linked(hub) -> bool:
    with Client(hub.address, timeout=5) as client:
        regions = client.stats()["regions"]
    links = regions["parent_links"]
    return len(links) == 2 and all(link["state"] == "relaying" for link in links)


def check(subscribers, per_region):
    for name, subscriber in subscribers.items():
        for topic, held in subscriber.messages.items():
            received = [held[seq] for seq in sorted(held)]
            check_exactly_once(received, dict.fromkeys(("world", "europe"), per_region), f"{name}/{topic}")
        assert subscriber.redelivered == 0, f"{name}: {subscriber.redelivered} delivered twice"


def test_two_regions_of_two_hubs_relay_every_message_once_and_relays_move_with_their_topics(region):
    world = region(2, region="world")
    europe = region(1, region="europe", region_settings={"parent": "world", **LINK,
                    "parent_address": world.hubs[0].address})  # fmt: skip
    for hub in europe.hubs:  # each child hub links to both hubs of its parent
        wait_until(lambda hub=hub: linked(hub), f"{hub.address} linked to both world hubs")
    subscribers = {
        "world": Subscriber(world.addresses, "world"),
        "europe": Subscriber(europe.addresses, "europe"),
    }
    for subscriber in subscribers.values():
        subscriber.start()
    try:
        publishers = [
            threading.Thread(target=publish, args=(world.addresses, "world", 0, PER_REGION)),
            threading.Thread(target=publish, args=(europe.addresses, "europe", 0, PER_REGION)),
        ]
        for publisher in publishers:
            publisher.start()
        for publisher in publishers:
            publisher.join(120)
        for name, subscriber in subscribers.items():
            wait_until(
                lambda s=subscriber: s.holds(2 * PER_REGION), f"{name}'s subscriber holding it all", 120
            )
        check(subscribers, PER_REGION)

        # A second hub joins the child region: half the topics move to it, relays and all.
        joined = europe.add()
        with Client(europe.addresses) as client:

            def moved():
                return list(client.owners().values()).count(joined.address) == len(TOPICS) // 2

            wait_until(moved, "the new hub owning its share", 60)
        wait_until(lambda: linked(joined), "the new hub linked to both world hubs")
        publish(world.addresses, "world", PER_REGION, PER_REGION)
        publish(europe.addresses, "europe", PER_REGION, PER_REGION)
        for name, subscriber in subscribers.items():
            wait_until(
                lambda s=subscriber: s.holds(4 * PER_REGION), f"{name}'s subscriber after the move", 120
            )
        check(subscribers, 2 * PER_REGION)
    finally:
        for subscriber in subscribers.values():
            subscriber.stop()
