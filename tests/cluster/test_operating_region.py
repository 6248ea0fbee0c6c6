"""Operating a region of several hubs as a new operator does (issue 37): `hedwig stats`
counts redirects apart from failures; `hedwig top` on one hub shows the region."""

import json
import subprocess
import sys

from hedwig.testing.hubprocess import hub_environment
from tests.cli.test_cli import hedwig, lines
from tests.cluster.test_region_views import subscribe_each


def test_stats_counts_redirects_apart_from_failures(region):
    hubs = region(2)
    first, second = hubs.hubs
    subscribe_each(hubs, [f"redirected-{i}" for i in range(6)])  # (through both: some redirected)
    counters = json.loads(hedwig("stats", "--json", hub=first).stdout)
    redirected = (
        counters["redirected"] + json.loads(hedwig("stats", "--json", hub=second).stdout)["redirected"]
    )
    assert redirected > 0
    for hub in hubs.hubs:
        counters = json.loads(hedwig("stats", "--json", hub=hub).stdout)
        ops = counters["ops"]
        assert sum(op["redirected"] for op in ops.values()) == counters["redirected"]
        assert all(op["failed"] == 0 for op in ops.values()), ops
        if counters["redirected"]:
            shown = lines(hedwig("stats", hub=hub))
            heading = next(line for line in shown if line.startswith("OPERATION"))
            assert heading.split()[:4] == ["OPERATION", "OK", "REDIRECTED", "FAILED"]
            table = shown[shown.index(heading) + 1 :]
            table = table[: table.index("")]
            assert sum(int(line.split()[2].replace(",", "")) for line in table) == counters["redirected"]
            assert all(line.split()[3] == "0" for line in table), table


def test_top_on_a_regions_hub_shows_the_regions_hubs_and_topics(region):
    hubs = region(0, http=True)
    first, second = hubs.add(), hubs.add()
    subscribe_each(hubs, [f"seen-{i}" for i in range(4)])
    owners = json.loads(hedwig("topics", "--json", hub=first).stdout)
    assert {row["owner"] for row in owners} == {first.address, second.address}
    shown = subprocess.run(
        [sys.executable, "-m", "hedwig", "--hub", first.address, "top", "--count", "1"],
        capture_output=True, text=True, timeout=60, env=hub_environment(),
    ).stdout.splitlines()  # fmt: skip
    heading = shown.index(next(line for line in shown if line.startswith("HUB ")))
    assert shown[heading - 1].startswith("region of 2 hubs on ZooKeeper ")
    assert {line.split()[0] for line in shown[heading + 1 : heading + 3]} == {first.address, second.address}
    assert any(line.split()[:2] == [first.address, "*"] for line in shown[heading + 1 : heading + 3])
    start = shown.index(next(line for line in shown if line.startswith("REGION TOPIC")))
    listed = {line.split()[0]: line.split()[1] for line in shown[start + 1 : start + 5]}
    assert listed == {row["topic"]: row["owner"] for row in owners}


def test_a_hub_gone_quiet_is_shown_at_0_messages_per_s_by_the_other_hubs(region):
    from hedwig.client import Client
    from hedwig.testing.polling import wait_until

    hubs = region(2)
    first, second = hubs.hubs

    def rate_of_first() -> float:
        rows = json.loads(hedwig("hubs", "--json", hub=second).stdout)
        return next(row["messages_per_s"] for row in rows if row["hub"] == first.address)

    with Client(first.address) as client:
        names = (f"quiet-{i}" for i in range(100))

        def claim_on_first() -> str:  # (a new topic the first hub claims: its load written at once)
            for topic in names:
                client.publish(topic, b"m")
                if client.owners()[topic] == first.address:
                    return topic
            raise AssertionError("the first hub claimed no topic")

        busy = claim_on_first()
        for _ in range(40):
            client.publish_many(busy, [b"m"] * 50)
        claim_on_first()  # (its load, with the rate of the burst, written now)
    wait_until(lambda: rate_of_first() > 0, "the first hub's rate shown by the second", 30)
    wait_until(lambda: rate_of_first() == 0, "the first hub, quiet, shown at 0 msg/s", 30)


def test_during_a_takeover_the_cli_publishes_through_a_live_hub_and_lists_subscriptions_with_a_short_state(
    region,
):
    from hedwig.client import Client

    hubs = region(2, session_timeout_ms=10000)  # (the dead owner's claim lasts up to 10 s)
    first, second = hubs.hubs
    with Client(hubs.addresses) as client:
        topic = next(f"d-{i}" for i in range(100) if _published_on(client, f"d-{i}", first.address))
        client.subscribe(topic, "reader", start="earliest").close()
        last = client.describe(topic)["last_seq"]
    first.kill()
    listed = hedwig("subscriptions", hub=second)
    assert listed.returncode == 0, listed.stderr
    shown = lines(listed)
    state = shown[0].split().index("STATE")
    row = next(line.split() for line in shown if line.startswith(topic + " "))
    assert row[state] == "unknown"
    assert any(line.startswith(f"{first.address} did not answer: ") for line in shown), shown
    published = hedwig("publish", topic, "x", hub=second)  # (the owner named is dead: ridden out)
    assert published.returncode == 0, published.stderr
    with Client(second.address) as client:
        assert client.describe(topic)["last_seq"] == last + 1
        assert client.owners()[topic] == second.address


def _published_on(client, topic: str, address: str) -> bool:
    client.publish(topic, b"m")
    return client.owners()[topic] == address


def test_a_region_on_zookeeper_without_a_name_is_called_after_its_root(region):
    """Issue 37: a region of two hubs whose [region] name is not set was called "region
    standalone" (the name of one hub on its own) by its hubs' start lines, `hedwig hubs`,
    `hedwig stats`, `hedwig top` and the status page; it is named after its root."""
    from tests.observe.test_http_process import fetch

    hubs = region(2, http=True)  # (a conf with no [region] section; root /region-PID-N)
    name = hubs.root.rsplit("/", 1)[-1]
    for hub in hubs.hubs:
        assert f"hedwig hub {hub.address} (region {name}, ZooKeeper " in hub.output()
        assert json.loads(fetch(hub.http_url + "api/status")[2])["hub"]["region"] == name
        assert lines(hedwig("stats", hub=hub))[0].startswith(f"hub {hub.address}, region {name}, up ")
    listed = lines(hedwig("hubs", hub=hubs.hubs[0]))
    assert listed[0].split()[-1] == "REGION"
    assert [row.split()[-1] for row in listed[1:3]] == [name, name]
    shown = subprocess.run(
        [sys.executable, "-m", "hedwig", "--hub", hubs.hubs[0].address, "top", "--count", "1"],
        capture_output=True, text=True, timeout=60, env=hub_environment(),
    ).stdout  # fmt: skip
    assert f"hedwig {hubs.hubs[0].address}  region {name}  version " in shown
    assert "standalone" not in shown
