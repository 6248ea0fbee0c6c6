"""The command line in a region of several hubs: `hedwig hubs` lists them with their load,
`hedwig topics` and `hedwig describe` name each topic's owner, whichever hub is asked."""

import json

from hedwig.testing.polling import wait_until
from tests.cli.test_cli import hedwig, lines


def test_hubs_topics_and_describe_name_the_owners_from_any_hub(region):
    hubs = region(2)
    first, second = hubs.hubs
    for i in range(4):
        assert hedwig("publish", f"cli-{i}", "m", hub=first).returncode == 0
    listed = json.loads(hedwig("topics", "--json", hub=second).stdout)
    owners = {row["topic"]: row["owner"] for row in listed}
    assert set(owners) == {f"cli-{i}" for i in range(4)}
    assert set(owners.values()) == {first.address, second.address}  # two each
    for hub in hubs.hubs:  # the same owners whichever hub is asked, in lines too
        assert [line.split() for line in lines(hedwig("topics", hub=hub))] == [
            ["TOPIC", "OWNER"],
            *[[topic, owner] for topic, owner in sorted(owners.items())],
        ]
        for topic, owner in owners.items():
            described = json.loads(hedwig("describe", topic, "--json", hub=hub).stdout)
            assert described["owner"] == owner  # (asked of the other hub: answered by the owner)

    def both_loaded():
        rows = json.loads(hedwig("hubs", "--json", hub=first).stdout)
        return [(row["hub"], row["topics"]) for row in rows] == sorted(
            [(first.address, 2), (second.address, 2)]
        )

    wait_until(both_loaded, "both hubs listed with two topics each", 30)
    table = lines(hedwig("hubs", hub=second))
    assert table[0].split() == [
        "HUB",
        "TOPICS",
        "MESSAGES/S",
        "STARTED",
        "STATUS",
        "PAGE",
        "TLS",
        "PORT",
        "REGION",
    ]
    assert [line.split()[:2] for line in table[1:]] == sorted([[first.address, "2"], [second.address, "2"]])


def test_a_hub_that_stops_cleanly_leaves_the_region_at_once(region):
    """Its znodes go with its session, closed as it stops: the others see it gone and
    claim its topics long before its session would have expired (10 s here)."""
    hubs = region(2, session_timeout_ms=10_000)
    first, second = hubs.hubs
    for i in range(4):
        hedwig("publish", f"leaving-{i}", "m", hub=first)
    owned = [row["topic"] for row in json.loads(hedwig("topics", "--json", hub=first).stdout)
             if row["owner"] == second.address]  # fmt: skip
    assert owned
    assert second.stop() == 0

    def listed():
        return [row["hub"] for row in json.loads(hedwig("hubs", "--json", hub=first).stdout)]

    wait_until(lambda: listed() == [first.address], "the first hub alone in the list", 5)
    for topic in owned:  # claimed by the hub that is left, at the first request
        described = json.loads(hedwig("describe", topic, "--json", hub=first).stdout)
        assert described["owner"] == first.address and described["last_seq"] == 1
