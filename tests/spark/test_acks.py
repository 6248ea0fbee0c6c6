"""The drain's subscriptions against a real hub, without Spark: attached once per topic for
acknowledgements only, created from the earliest seq-id held, moved only forward, and
written by the hub when they are closed."""

import pytest

from hedwig.client.blocking import Client
from hedwig.client.errors import NoSuchTopic, SubscriptionClosed
from hedwig.spark.acks import DrainSubscriptions
from hedwig.spark.hubs import UnknownTopic


def lake(client, topic):
    rows = client.describe(topic)["subscribers"]
    return next(r for r in rows if r["subscriber_id"] == "lake")


def test_open_creates_from_the_first_seq_id_and_acknowledgements_only_move_forward(hub):
    said = []
    with Client(hub.address) as client:
        client.publish_many("acks-a", [b"a"] * 50)
        client.publish_many("acks-b", [b"b"] * 20)
        subscriptions = DrainSubscriptions(client, ["acks-a", "acks-b"], "lake", said.append)
        assert subscriptions.open() == {"acks-a": 0, "acks-b": 0}
        assert said == [f"created subscription lake on acks-{t} from its first seq-id" for t in "ab"]
        assert subscriptions.acknowledge({"acks-a": 30}) == {"acks-a": 30}
        assert subscriptions.acknowledge({"acks-a": 20, "acks-b": 0}) == {}
        row = lake(client, "acks-a")
        assert (row["consumed_seq"], row["backlog"], row["state"]) == (30, 20, "ack_only")
        assert lake(client, "acks-b")["consumed_seq"] == 0
        subscriptions.close()
        assert lake(client, "acks-a")["state"] == "detached"
    with Client(hub.address) as client:  # the next run attaches where the last one left
        again = DrainSubscriptions(client, ["acks-a", "acks-b"], "lake", said.append)
        assert again.open() == {"acks-a": 30, "acks-b": 0}
        assert len(said) == 2, "nothing was created again"
        again.close()


def test_an_unknown_topic_is_refused_and_not_created(hub):
    with Client(hub.address) as client:
        with pytest.raises(UnknownTopic, match="'acks-none' does not exist"):
            DrainSubscriptions(client, ["acks-none"], "lake").open()
        with pytest.raises(NoSuchTopic):
            client.describe("acks-none")


def test_a_second_drain_with_the_same_name_takes_the_subscriptions_over(hub):
    with Client(hub.address) as first, Client(hub.address) as second:
        first.publish_many("acks-twice", [b"x"] * 10)
        old = DrainSubscriptions(first, ["acks-twice"], "lake")
        old.open()
        old.acknowledge({"acks-twice": 4})
        new = DrainSubscriptions(second, ["acks-twice"], "lake")
        assert new.open() == {"acks-twice": 4}
        first.describe("acks-twice")  # (a round trip: the hub's event to the first is read)
        with pytest.raises(SubscriptionClosed, match="forced"):
            old.acknowledge({"acks-twice": 6})
        assert new.acknowledge({"acks-twice": 9}) == {"acks-twice": 9}
        assert lake(second, "acks-twice")["consumed_seq"] == 9
