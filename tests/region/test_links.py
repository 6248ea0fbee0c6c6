"""Relay links that break under load: a chain root <- mid <- leaf whose two links run
through proxies the test cuts again and again while three regions publish. Each link
reconnects, resumes from its consumed seq-ids, and what it re-reads is dropped where it
was stored already: every region ends with every message once, in origin order. The
chain runs twice: with plain links, and with links over TLS (each child presenting its
certificate, each parent requiring it), whose connections the cuts end mid-record."""

import pytest

from hedwig.testing.certificates import Authority
from tests.region.hubs import (
    Collector,
    Publisher,
    RegionHub,
    check_exactly_once,
    stored_messages,
    wait_until,
)
from tests.region.proxy import CuttableProxy

TOPIC = "payments"
PER_REGION = 10_000
CUTS = 10

pytestmark = pytest.mark.slow


def region_hub(tmp_path, name, parent, ca):
    """A hub of the chain; with `ca`, it listens for TLS, requires its children's
    certificates and links to its parent (through the proxy) over TLS."""
    if ca is None:
        return RegionHub(tmp_path, name, parent)
    cert, key = ca.issue(name)
    tls = {"enabled": "true", "cert_file": cert, "key_file": key, "ca_file": ca.cert_file}
    region = {"require_child_certificate": "true"}
    if parent is not None:
        region["parent_tls"] = "true"
    return RegionHub(tmp_path, name, parent, tls=tls, **region)


@pytest.fixture(params=["plain", "tls"])
def chain(request, tmp_path):
    ca = Authority(tmp_path / "pki") if request.param == "tls" else None

    def link_port(hub):
        return hub.tls_port if ca is not None else hub.port

    started = []
    proxies = []
    try:
        root = region_hub(tmp_path, "root", None, ca).start()
        started.append(root)
        to_root = CuttableProxy(link_port(root))
        proxies.append(to_root)
        mid = region_hub(tmp_path, "mid", f"root@{to_root.address}", ca).start()
        started.append(mid)
        to_mid = CuttableProxy(link_port(mid))
        proxies.append(to_mid)
        leaf = region_hub(tmp_path, "leaf", f"mid@{to_mid.address}", ca).start()
        started.append(leaf)
        for hub in (mid, leaf):
            wait_until(hub.linked, f"{hub.name} linked")
            assert hub.regions()["parent"]["tls"] is (ca is not None)
        yield {"root": root, "mid": mid, "leaf": leaf}, proxies
    finally:
        for proxy in proxies:
            proxy.close()
        for hub in started:
            hub.stop()


def test_links_cut_again_and_again_under_load_store_nothing_twice(chain):
    hubs, proxies = chain
    names = ("root", "mid", "leaf")
    collectors = {name: Collector(hubs[name], TOPIC, f"app-{name}", 3 * PER_REGION) for name in names}
    wanted = {"root": {"mid"}, "mid": {"root", "leaf"}, "leaf": {"mid"}}
    for name, peers in wanted.items():
        wait_until(lambda n=name, p=peers: hubs[n].relays_out_to(TOPIC) >= p, f"{name} relaying to {peers}")
    for collector in collectors.values():
        collector.start()
    publishers = [Publisher(hubs[name], TOPIC, PER_REGION, batch=50) for name in names]
    for publisher in publishers:
        publisher.start()
    links = {"mid": hubs["mid"], "leaf": hubs["leaf"]}
    for cut in range(1, CUTS + 1):
        milestone = cut * PER_REGION // (CUTS + 2)
        wait_until(lambda m=milestone: min(p.published for p in publishers) >= m, f"{milestone} published")
        before = {name: hub.regions()["parent"]["links"] for name, hub in links.items()}
        for proxy in proxies:
            proxy.cut()
        for name, hub in links.items():
            wait_until(
                lambda h=hub, b=before[name]: h.regions()["parent"]["links"] > b and h.linked(),
                f"{name}'s link back after cut {cut}",
            )
    for publisher in publishers:
        publisher.join(120)
        assert publisher.error is None, f"{publisher.name}: {publisher.error!r}"
    for name, collector in collectors.items():
        wait_until(collector.done, f"{name}'s subscriber to hold every message", 120)
        collector.stop()
    expected = dict.fromkeys(names, PER_REGION)
    for name in names:
        check_exactly_once(stored_messages(hubs[name], TOPIC), expected, f"log of {name}")
        received = [collectors[name].messages[s] for s in sorted(collectors[name].messages)]
        check_exactly_once(received, expected, f"subscriber in {name}")
    relays = {name: hubs[name].regions()["relay"] for name in names}
    assert all(r["failed_entries"] == 0 for r in relays.values()), relays
    # The cuts caught entries in flight: re-read after reconnecting, and dropped.
    assert sum(r["duplicate_entries"] for r in relays.values()) > 0, relays
    assert all(hub.regions()["parent"]["links"] == CUTS + 1 for hub in links.values())


@pytest.mark.parametrize("restarts", [False, True], ids=["linked-again", "restarted-then-linked"])
def test_interest_that_begins_while_a_link_is_down_misses_nothing_published_after_it(tmp_path, restarts):
    """New subscribers on both sides of a broken link: once it is back, each receives what
    the other side published after it subscribed (the relay subscriptions are created
    then, starting when the interest began, not at the latest message). With `restarts`
    both hubs restart while the link is still down: when each subscription began is
    stored with it, so the relays still start then, not at the restart (which would miss
    what was published between)."""
    # No margin for clocks (both hubs share this one): a relay starting at a restart
    # would miss what was published just before it.
    root = RegionHub(tmp_path, "root", clock_margin_ms=0).start()
    proxy = CuttableProxy(root.port)
    leaf = RegionHub(tmp_path, "leaf", f"root@{proxy.address}", clock_margin_ms=0)
    collectors = []
    try:
        leaf.start()
        wait_until(leaf.linked, "leaf linked")
        proxy.holding = True
        proxy.cut()
        wait_until(lambda: leaf.regions()["parent"]["state"] == "retrying", "the link down")
        collectors = [Collector(hub, "late", f"app-{hub.name}", 100) for hub in (root, leaf)]
        for hub in (root, leaf):
            with hub.client() as client:
                client.publish_many("late", [b"%s:%d" % (hub.name.encode(), i) for i in range(50)])
        if restarts:
            for hub in (root, leaf):
                hub.stop()
                hub.start()
            wait_until(lambda: leaf.regions()["parent"]["state"] == "retrying", "the link still down")
        proxy.holding = False
        wait_until(leaf.linked, "leaf linked again")
        for collector in collectors:
            collector.start()
        for collector in collectors:
            wait_until(collector.done, f"{collector.hub.name}'s subscriber to hold both sides' messages")
            collector.stop()
            received = [collector.messages[s] for s in sorted(collector.messages)]
            check_exactly_once(received, {"root": 50, "leaf": 50}, f"subscriber in {collector.hub.name}")
    finally:
        for collector in collectors:
            collector.stop()
        proxy.close()
        leaf.stop()
        root.stop()
