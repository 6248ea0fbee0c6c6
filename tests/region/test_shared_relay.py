"""A shared subscription in one region takes what is published in another: the topic is
relayed as for any subscription (its relays stay exclusive), and the members in the
subscription's region share the relayed messages, each taken once."""

from collections import Counter

import pytest

from tests.region.hubs import start_tree, wait_until

SHAPE = {"root": None, "leaf": "root"}


@pytest.fixture
def regions(tmp_path):
    hubs = start_tree(tmp_path, SHAPE)
    yield hubs
    for hub in hubs.values():
        hub.stop()


def test_members_in_the_root_share_what_the_leaf_publishes(regions):
    root, leaf = regions["root"], regions["leaf"]
    members = [root.client().subscribe("jobs", "workers", kind="shared", window=100) for _ in range(2)]
    wait_until(lambda: leaf.relays_out_to("jobs") == {"root"}, "the leaf relaying jobs up to the root")
    publisher = leaf.client()
    for start in range(0, 2000, 100):
        publisher.publish_many("jobs", [b"%d" % i for i in range(start, start + 100)])
    taken = Counter()
    while sum(taken.values()) < 2000:
        for member in members:
            for message in member.receive_batch(timeout=0.2):
                assert message.origin_region == "leaf"
                taken[message.payload] += 1
                member.ack(message)
    assert set(taken.values()) == {1} and len(taken) == 2000
    relay_rows = [
        row
        for hub in (root, leaf)
        for row in hub.client().describe("jobs")["subscribers"]
        if row["subscriber_id"].startswith("__")
    ]
    assert relay_rows and all(row["kind"] == "exclusive" for row in relay_rows), relay_rows
