"""A region of several hubs as the command line shows it (issue: operating hedwig): the
subscriptions of the whole region each with its owner, from any hub; what `stats` says
of ZooKeeper and the other hubs; and a hub that comes back taking its share of the
topics at once, every move named in the logs and in `stats`."""

import json

from hedwig.client import Client
from hedwig.testing.polling import wait_until
from tests.cli.test_cli import hedwig, lines


def subscribe_each(hubs, topics, subscriber="s"):
    with Client(hubs.addresses) as client:
        for topic in topics:
            client.publish_many(topic, [b"m", b"m"])
            client.subscribe(topic, subscriber, start="earliest").close()
        return client.owners()


def test_subscriptions_without_a_topic_lists_the_whole_region_each_with_its_owner(region):
    hubs = region(2)
    first, second = hubs.hubs
    topics = [f"listed-{i}" for i in range(6)]
    owners = subscribe_each(hubs, topics)
    assert set(owners.values()) == {first.address, second.address}
    for hub in (first, second):  # whichever hub is asked
        result = hedwig("subscriptions", hub=hub)
        assert result.returncode == 0, result.stderr.decode()
        table = lines(result)
        assert table[0].split()[-1] == "OWNER"
        shown = {line.split()[0]: line.split()[-1] for line in table[1:]}
        assert shown == owners
        rows = json.loads(hedwig("subscriptions", "--json", hub=hub).stdout)
        assert {(row["topic"], row["owner"], row["lag"]) for row in rows} == {
            (t, owners[t], 2) for t in topics
        }


def test_the_subscriptions_of_a_topic_no_hub_owns_are_listed_without_claiming_it(region):
    hubs = region(2, conf="topic_release_s = 0.5\n")
    (owner,) = set(subscribe_each(hubs, ["idle-listed"]).values())
    with Client(owner) as client:
        wait_until(lambda: client.owners() == {"idle-listed": None}, "the idle topic released", 30)
    rows = json.loads(hedwig("subscriptions", "--json", hub=hubs.hubs[0]).stdout)
    assert [(row["topic"], row["subscriber_id"], row["owner"], row["consumed_seq"]) for row in rows] == [
        ("idle-listed", "s", None, 0)
    ]
    assert "(none now)" in lines(hedwig("subscriptions", hub=hubs.hubs[0]))[1]
    with Client(hubs.addresses) as client:
        assert client.owners() == {"idle-listed": None}  # (listing claimed nothing)


def test_stats_names_zookeeper_and_the_regions_hubs(region):
    hubs = region(2)
    first, second = hubs.hubs
    subscribe_each(hubs, [f"counted-{i}" for i in range(4)])
    shown = lines(hedwig("stats", hub=first))
    table = shown[shown.index("hubs of the region:") + 1 :]
    assert table[0].split()[:2] == ["HUB", "TOPICS"]
    assert {line.split()[0] for line in table[1:3]} == {first.address, second.address}
    zookeeper = shown[shown.index("zookeeper:") :]
    assert any(line.split()[:2] == ["session", "CONNECTED"] for line in zookeeper), zookeeper
    assert any(
        line.strip().startswith("hubs of the region") and line.split()[-1] == "2" for line in zookeeper
    )


def test_a_hub_that_comes_back_takes_its_share_at_once_and_every_move_is_named(region):
    """The docs say a hub that joins takes its share at once: after a restart, with no
    client asking for any of the topics, the loads even out, and the logs and `stats`
    say which topics went where and why."""
    hubs = region(2)
    first, second = hubs.hubs
    topics = [f"share-{i}" for i in range(6)]
    subscribe_each(hubs, topics)
    assert second.stop() == 0
    with Client(first.address) as client:  # the first hub takes the second's topics over
        for topic in topics:
            client.publish(topic, b"while alone")
    assert first.wait_for_log(f"taken over from {second.address} (that hub is no longer in the region)")
    second.restart()  # (its address again)

    def loads():
        with Client(first.address) as client:  # (LIST_HUBS: no topic is asked for)
            return sorted(row["topics"] for row in client.hubs())

    wait_until(lambda: loads() == [3, 3], "the hub that came back owning its share", 60)
    with Client(first.address) as client:
        owners = client.owners()
    back = sorted(topic for topic, owner in owners.items() if owner == second.address)
    assert len(back) == 3
    for topic in back:
        assert first.wait_for_log(f"topic {topic} released to {second.address} (rebalancing: ")
        assert second.wait_for_log(
            f"topic {topic} taken over from {first.address} (released there: rebalancing"
        )
    stats = json.loads(hedwig("stats", "--json", hub=second).stdout)["zookeeper"]
    assert stats["taken_over_from"] == {first.address: 3} and stats["taken_over_here"] == 3
    assert sorted(move["topic"] for move in stats["recent_moves"]) == back
    first_stats = json.loads(hedwig("stats", "--json", hub=first).stdout)["zookeeper"]
    assert first_stats["released_to"] == {second.address: 3}
    shown = lines(hedwig("stats", hub=second))
    assert any("taken over from" in line and f"{first.address} 3" in line for line in shown), shown
