"""A tree of five regions, each a real hub process on 127.0.0.1 with its own data directory:

          root
         /    \\
       mid1   mid2
       /  \\
   leaf1  leaf2

Publishing in three regions at once, every region's subscriber receives every message
once, each origin's in origin order; a mid hub killed with SIGKILL while messages flow
and restarted changes nothing of that.
"""

import threading

import pytest

from tests.region.hubs import (
    Collector,
    Publisher,
    check_exactly_once,
    start_tree,
    stored_messages,
    wait_for_interest,
    wait_until,
)

SHAPE = {"root": None, "mid1": "root", "mid2": "root", "leaf1": "mid1", "leaf2": "mid1"}
TOPIC = "orders"
PER_REGION = 10_000
PUBLISHING = ("leaf1", "mid2", "root")

pytestmark = pytest.mark.slow


@pytest.fixture
def tree(tmp_path, request):
    hubs = start_tree(tmp_path, SHAPE, delivery=getattr(request, "param", None))
    yield hubs
    for hub in hubs.values():
        hub.stop()


# mid1 writes no consume pointer before it is killed: once restarted, its relay
# subscriptions re-read everything they had relayed, and its neighbours must drop it all.
FORGETFUL_MID1 = {"mid1": {"consume_interval": 10_000_000, "consume_flush_ms": 600_000}}


def subscribe_everywhere(hubs) -> dict:
    collectors = {
        name: Collector(hub, TOPIC, f"app-{name}", len(PUBLISHING) * PER_REGION) for name, hub in hubs.items()
    }
    wait_for_interest(hubs, SHAPE, TOPIC)
    for collector in collectors.values():
        collector.start()
    return collectors


def finish(collectors, publishers, timeout=120.0):
    for publisher in publishers:
        publisher.join(timeout)
        assert publisher.error is None, f"{publisher.name}: {publisher.error!r}"
        assert publisher.published == PER_REGION
    for name, collector in collectors.items():
        wait_until(collector.done, f"{name}'s subscriber to hold every message", timeout)
        collector.stop()
        assert collector.error is None, f"{name}: {collector.error!r}"


def test_five_regions_three_publishing_every_subscriber_gets_every_message_once(tree):
    collectors = subscribe_everywhere(tree)
    publishers = [Publisher(tree[name], TOPIC, PER_REGION) for name in PUBLISHING]
    for publisher in publishers:
        publisher.start()
    finish(collectors, publishers)
    expected = dict.fromkeys(PUBLISHING, PER_REGION)
    for name, collector in collectors.items():
        assert collector.redelivered == 0, f"{name}: {collector.redelivered} messages delivered twice"
        received = [collector.messages[seq] for seq in sorted(collector.messages)]
        check_exactly_once(received, expected, f"subscriber in {name}")
        # Delivery order is the region's log order.
        assert collector.order == [(o, s) for o, s, _ in received]
    for name, hub in tree.items():
        check_exactly_once(stored_messages(hub, TOPIC), expected, f"log of {name}")
        relay = hub.regions()["relay"]
        assert relay["looped_entries"] == 0 and relay["failed_entries"] == 0, (name, relay)

    # `hedwig describe` at leaf1: both directions of its link, caught up.
    def caught_up():
        rows = {(r["direction"], r["peer"]): r for r in tree["leaf1"].relays(TOPIC)}
        return set(rows) == {("in", "mid1"), ("out", "mid1")} and all(
            r["lag"] == 0 and r["state"].startswith("relaying") for r in rows.values()
        )

    wait_until(caught_up, "leaf1's relays caught up")


@pytest.mark.parametrize("tree", [FORGETFUL_MID1], indirect=True)
def test_a_mid_region_killed_while_messages_flow_loses_and_doubles_nothing(tree):
    collectors = subscribe_everywhere(tree)
    killed, restarted = threading.Event(), threading.Event()
    third = PER_REGION // 3
    publishers = [
        Publisher(tree[name], TOPIC, PER_REGION, gates={third: killed, 2 * third: restarted})
        for name in PUBLISHING
    ]
    for publisher in publishers:
        publisher.start()
    mid1 = tree["mid1"]
    wait_until(lambda: all(p.published >= third for p in publishers), "a third published everywhere")
    # leaf2 hears of the others only through mid1: once it holds some, mid1 relays.
    leaf2 = tree["leaf2"]
    wait_until(lambda: leaf2.last_seq(TOPIC) >= third, "mid1 relaying to leaf2")
    mid1.kill()  # relays through mid1 (leaf1 <-> everyone) are in flight
    killed.set()
    wait_until(lambda: all(p.published >= 2 * third for p in publishers), "two thirds published")

    # With mid1 down, the regions it joined go on: root and mid2 exchange their messages,
    # and leaf1 (cut off) delivers its own.
    def holds(name, origins):
        return all(collectors[name].per_origin.get(o, 0) >= 2 * third for o in origins)

    for name, origins in (("root", ("root", "mid2")), ("mid2", ("root", "mid2")), ("leaf1", ("leaf1",))):
        wait_until(lambda n=name, o=origins: holds(n, o), f"{name} delivering {origins} while mid1 is down")
    mid1.process.restart()
    restarted.set()
    finish(collectors, publishers)
    expected = dict.fromkeys(PUBLISHING, PER_REGION)
    for name, collector in collectors.items():
        received = [collector.messages[seq] for seq in sorted(collector.messages)]
        check_exactly_once(received, expected, f"subscriber in {name}")
    for name, hub in tree.items():
        check_exactly_once(stored_messages(hub, TOPIC), expected, f"log of {name}")
    # mid1's relay subscriptions re-read what its neighbours had stored: dropped there.
    relays = {name: hub.regions()["relay"] for name, hub in tree.items()}
    assert all(r["failed_entries"] == 0 and r["looped_entries"] == 0 for r in relays.values()), relays
    assert sum(relays[n]["duplicate_entries"] for n in ("root", "leaf1", "leaf2")) > 0, relays
