"""A topic's compaction travels with its relay between regions of several hubs (a parent
region of two hubs and a child region of one, on one ZooKeeper): a topic created
`--compact` in either region is compacted in the other, whichever of its hubs owns it
there (TOPIC_OPTIONS goes over the link to the topic's owner), as `hedwig describe`
says from any hub of that region."""

import subprocess
import sys

import pytest

from hedwig.client import Client
from hedwig.testing.hubprocess import hub_environment
from hedwig.testing.polling import wait_until

LINK = {"retry_backoff_ms": 50, "max_retry_backoff_ms": 500}

pytestmark = pytest.mark.slow


def hedwig(addresses: str, *args) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "hedwig", "--hub", addresses, *args],
        capture_output=True, text=True, timeout=60, env=hub_environment(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def linked(hub) -> bool:
    with Client(hub.address, timeout=5) as client:
        links = client.stats()["regions"]["parent_links"]
    return len(links) == 2 and all(link["state"] == "relaying" for link in links)


def compacted(addresses: str, topic: str) -> bool:
    with Client(addresses, timeout=5) as client:
        return bool(client.describe(topic).get("compaction"))


def test_compaction_travels_both_ways_between_regions_of_several_hubs(region):
    world = region(2, region="world")
    europe = region(1, region="europe", region_settings={"parent": "world", **LINK,
                    "parent_address": world.hubs[0].address})  # fmt: skip
    wait_until(lambda: linked(europe.hubs[0]), "europe linked to both world hubs")
    subscribers = []
    try:
        for origin, copy, topic in ((europe, world, "table-up"), (world, europe, "table-down")):
            assert "compacted topic" in hedwig(origin.addresses, "create", topic, "--compact")
            client = Client(copy.addresses, timeout=30).connect()
            subscribers.append(client)
            client.subscribe(topic, "app")  # (its copy there is created plain by this)
            wait_until(lambda c=copy, t=topic: compacted(c.addresses, t), f"{topic} compacted in the copy")
            for hub in copy.hubs:  # asked of any hub of the region, the owner answers
                assert "compacted: the latest" in hedwig(hub.address, "describe", topic)
    finally:
        for client in subscribers:
            client.close()
