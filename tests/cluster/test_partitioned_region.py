"""A partitioned topic created in a region of several hubs: its owner creates every
partition (claimed there, spread later by rebalancing), so the create is answered;
placed as first requests place topics, partitions went to the other hub, which refused
the create as not its own, and the client bounced between the two (a redirect loop)."""

from hedwig.client import Client


def test_a_partitioned_topic_is_created_through_any_hub_of_a_region(region):
    hubs = region(2)
    for number, hub in enumerate(hubs.hubs):
        topic = f"parts-{number}"
        with Client(hub.address) as client:
            answer = client.create_topic(topic, partitions=4)
            assert (answer["created"], answer["partitions"]) == (True, 4)
            client.publish_many(f"{topic}.p-3", [b"in the last partition"])
            assert client.describe(topic)["partitions"] == 4
            assert [m.payload for m in client.read(topic)] == [b"in the last partition"]
