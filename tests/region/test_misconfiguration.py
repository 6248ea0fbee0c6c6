"""Hierarchies that cannot work are reported clearly, at start or in `hedwig describe` /
`hedwig stats`, and never relay a message: a region naming itself, a cycle (of two or of
three regions), a parent that is unreachable or is another region, a child with its
parent's name. Real hub processes on 127.0.0.1."""

import subprocess
import sys

import pytest

from hedwig.testing.hubprocess import hub_environment, refusing_port
from tests.region.hubs import RegionHub, wait_until

pytestmark = pytest.mark.slow


def run_hub_with(tmp_path, region_lines: str) -> subprocess.CompletedProcess:
    conf = tmp_path / "hub.conf"
    conf.write_text(f"[hub]\nport = 0\ndata_dir = {tmp_path / 'data'}\n[region]\n{region_lines}\n")
    return subprocess.run(
        [sys.executable, "-m", "hedwig", "hub", "--conf", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
        env=hub_environment(),
    )


@pytest.mark.parametrize(
    ("region_lines", "said"),
    [
        ("name = eu\nparent = eu\nparent_address = 127.0.0.1:4999", "region eu names itself as its parent"),
        ("name = eu\nparent = world", "parent = 'world' needs parent_address"),
        ("name = eu\nparent_address = 127.0.0.1:4999", "parent_address = '127.0.0.1:4999' is set but parent"),
        ("name = eu\nparent = world\nparent_address = 127.0.0.1:x", "port 'x' is not a number"),
        ("name = e u", "region names are 1-"),
    ],
)
def test_a_hub_with_an_impossible_region_refuses_to_start_saying_why(tmp_path, region_lines, said):
    done = run_hub_with(tmp_path, region_lines)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert not (tmp_path / "data").exists()  # nothing was started


def refused_with(hub: RegionHub, words: str):
    def check():
        parent = hub.regions()["parent"]
        return parent["state"] == "refused" and words in parent["reason"] and parent

    return check


def test_a_cycle_of_two_regions_is_refused_at_link_set_up(tmp_path, hubs):
    a = RegionHub(tmp_path, "a")
    hubs.append(a.start())  # a root first: its port is what b's configuration names
    b = RegionHub(tmp_path, "b", a)
    hubs.append(b.start())
    a.stop()
    a.parent = b  # a restarts on its port as b's child: a -> b -> a
    a.start()
    for hub, other in ((a, b), (b, a)):
        parent = wait_until(refused_with(hub, "cycle in the region hierarchy"), f"{hub.name} refusing")
        assert f"{hub.name} -> {other.name} -> {hub.name}" in parent["reason"]
    # Nothing relays: a message published in one never reaches the other's subscriber.
    with b.client() as client_b, a.client() as client_a:
        subscription = client_b.subscribe("t", "watcher")
        client_a.publish("t", b"stays in a")
        client_b.publish("t", b"published in b, after")
        assert subscription.receive(timeout=30).payload == b"published in b, after"
        assert client_b.describe("t")["last_seq"] == 1
    assert "cycle in the region hierarchy" in a.log()


def test_a_cycle_of_three_regions_is_refused_once_the_paths_meet(tmp_path, hubs):
    a = RegionHub(tmp_path, "a")
    hubs.append(a.start())  # each starts after the parent its configuration names
    b = RegionHub(tmp_path, "b", a)
    hubs.append(b.start())
    c = RegionHub(tmp_path, "c", b)
    hubs.append(c.start())
    a.stop()
    a.parent = c  # a restarts on its port as c's child: a -> c -> b -> a
    a.start()
    for hub in (a, b, c):
        wait_until(refused_with(hub, "cycle in the region hierarchy"), f"{hub.name} refusing the cycle")
    for hub in (a, b, c):
        assert hub.regions()["relay"]["appended_entries"] == 0


def test_an_unreachable_parent_is_retried_with_back_off_and_blocks_nothing_local(tmp_path, hubs):
    with refusing_port() as nobody:  # (held for the test: nothing can take it meanwhile)
        leaf = RegionHub(
            tmp_path, "leaf", f"root@127.0.0.1:{nobody}", retry_backoff_ms=20, max_retry_backoff_ms=80
        )
        hubs.append(leaf.start())

        def retrying():
            parent = leaf.regions()["parent"]
            return parent["state"] == "retrying" and parent["attempts"] >= 4 and parent

        parent = wait_until(retrying, "several attempts to reach the parent")
        assert f"cannot reach 127.0.0.1:{nobody}" in parent["reason"]
        assert parent["retry_in_s"] is not None and parent["retry_in_s"] <= 0.08
        with leaf.client() as client:
            subscription = client.subscribe("local", "reader")
            client.publish_many("local", [b"one", b"two"])
            assert [subscription.receive(timeout=10).payload for _ in range(2)] == [b"one", b"two"]
            relays = client.describe("local")["relays"]
        [row] = relays
        assert row["peer"] == "root" and row["direction"] == "in"
        assert row["state"].startswith("retrying: cannot reach")
        # `hedwig describe` shows it to people.
        shown = subprocess.run(
            [sys.executable, "-m", "hedwig", "--hub", leaf.address, "describe", "local"],
            capture_output=True,
            text=True,
            timeout=60,
            env=hub_environment(),
        )
        assert shown.returncode == 0, shown.stderr
        assert "relays:   1" in shown.stdout
        assert "from region root: consumed nothing yet, lag unknown, retrying: cannot reach" in shown.stdout


def test_a_parent_address_serving_another_region_is_refused(tmp_path, hubs):
    other = RegionHub(tmp_path, "asia").start()
    hubs.append(other)
    leaf = RegionHub(tmp_path, "leaf", f"europe@{other.address}")
    hubs.append(leaf.start())
    wait_until(
        refused_with(leaf, f"{other.address} serves region asia, not the configured parent region europe"),
        "leaf refusing the wrong parent",
    )


def test_a_child_with_its_parents_name_is_refused_by_the_parent(tmp_path, hubs):
    root = RegionHub(tmp_path / "one", "world").start()
    hubs.append(root)
    # (naming its parent "world" too would be refused at start: a region naming itself)
    twin = RegionHub(tmp_path / "two", "world", f"globe@{root.address}")
    hubs.append(twin.start())
    wait_until(
        refused_with(twin, "refused the link: region world is this hub's own region"),
        "the parent refusing a child of its own name",
    )
    assert root.regions()["refused_links"] >= 1
