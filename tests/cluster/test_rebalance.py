"""Topics moving between the hubs of a region on their own: a hub that joins takes a share
of the topics, moved with their subscribers attached, nobody missing a message; a topic
left idle is released and claimed afresh by whichever hub is asked next."""

from collections import Counter

from hedwig.client import Client
from hedwig.testing.polling import wait_until
from tests.cluster.load import Load

TOPICS = [f"join-{i}" for i in range(6)]


def owners_of(addresses: str, topics) -> dict:
    with Client(addresses) as client:
        return {topic: client.describe(topic)["owner"] for topic in topics}


def test_a_hub_joining_takes_a_share_of_the_topics_and_no_subscriber_misses_a_message(region):
    hubs = region(1)
    first = hubs.hubs[0]
    load = Load(first.address, TOPICS).start()  # the clients know the first hub only
    load.wait_for_more(30, "publishing to one hub")
    assert set(owners_of(first.address, TOPICS).values()) == {first.address}
    second = hubs.add()

    def shared():
        counts = Counter(owners_of(first.address, TOPICS).values())
        return counts[second.address] == len(TOPICS) // 2 and counts

    wait_until(shared, "the new hub owning half of the topics", 60)
    load.wait_for_more(50, "publishing after the topics moved")
    load.stop()
    with Client(hubs.addresses) as client:
        load.check(client)
    assert "rebalancing: 6 topics owned, the share of 2 hubs is 3 of 6: releasing 3" in first.output()


def test_an_idle_topic_is_released_and_claimed_again_when_next_used(region):
    hubs = region(2, conf="topic_release_s = 0.5\n")
    with Client(hubs.addresses) as client:
        client.publish_many("idle", [b"one"])
        owner = hubs.hub_at(client.describe("idle")["owner"])
    wait_until(lambda: "topic idle idle for" in owner.output(), "the idle topic released", 30)
    with Client(owner.address) as client:
        wait_until(lambda: client.owners() == {"idle": None}, "no hub owning the idle topic", 30)
    (other,) = hubs.others(owner.address)
    with Client(other.address, max_redirects=0) as client:  # nobody owns it: the hub asked claims it
        assert client.publish_many("idle", [b"two"]) == [2]
        assert client.describe("idle")["owner"] == other.address
        assert [m.payload for m in client.read("idle")] == [b"one", b"two"]
