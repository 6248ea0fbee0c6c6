"""Region links over TLS, between real hub processes on 127.0.0.1: relaying both ways with
verified certificates, children authenticated by the region their certificate names, and
every way a TLS link can be wrong reported in the child's stats (and in `hedwig describe`)
while nothing is relayed over it."""

import pytest

from hedwig.client.blocking import Client
from hedwig.client.errors import InvalidSubscriberId
from hedwig.testing.certificates import Authority
from tests.region.hubs import RegionHub, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def ca(tmp_path):
    return Authority(tmp_path / "pki")


def tls_parent(tmp_path, ca, name="europe", issued_to=None, **region):
    """A parent whose TLS listener asks children for certificates signed by `ca`."""
    cert, key = ca.issue(issued_to or f"hub.{name}.test")
    tls = {"enabled": "true", "cert_file": cert, "key_file": key, "ca_file": ca.cert_file}
    return RegionHub(tmp_path, name, tls=tls, **region)


def tls_child(tmp_path, ca, parent, name="paris", certificate_for=None, trust=None, **region):
    """A child linking to `parent`'s TLS port, trusting `trust` (default `ca`) and
    presenting a certificate issued to `certificate_for` (default its region; "" for none)."""
    tls = {"ca_file": (trust or ca).cert_file}
    issued_to = name if certificate_for is None else certificate_for
    if issued_to:
        cert, key = ca.issue(issued_to, ips=())
        tls.update(cert_file=cert, key_file=key)
    return RegionHub(tmp_path, name, parent, tls=tls, parent_tls="true", **region)


def parent_state(hub):
    return hub.regions()["parent"]


def state_is(hub, state, words=""):
    def check():
        parent = parent_state(hub)
        return parent["state"] == state and words in parent["reason"] and parent

    return check


def test_a_tls_link_relays_both_ways_and_stats_show_it_is_tls(tmp_path, ca, hubs):
    parent = tls_parent(tmp_path, ca, require_child_certificate="true")
    hubs.append(parent.start())
    child = tls_child(tmp_path, ca, parent)
    hubs.append(child.start())
    wait_until(child.linked, "paris linked to europe over TLS")
    link = parent_state(child)
    assert link["tls"] is True and link["address"] == parent.tls_address
    [row] = parent.regions()["children"]
    assert row["region"] == "paris" and row["tls"] is True

    with parent.client(timeout=10) as at_parent, child.client(timeout=10) as at_child:
        down = at_child.subscribe("news", "reader")
        up = at_parent.subscribe("news", "reader")
        wait_until(lambda: parent.relays_out_to("news") == {"paris"}, "europe relaying news to paris")
        wait_until(lambda: child.relays_out_to("news") == {"europe"}, "paris relaying news to europe")
        at_parent.publish_many("news", [b"from europe %d" % i for i in range(100)])
        at_child.publish_many("news", [b"from paris %d" % i for i in range(100)])
        received = {"paris": [], "europe": []}
        for subscription, where in ((down, "paris"), (up, "europe")):
            while len(received[where]) < 200:
                message = subscription.receive(timeout=30)
                assert message is not None, f"{where} got {len(received[where])} of 200"
                received[where].append((message.origin_region, message.origin_seq, message.payload))
                subscription.ack(message)
    for where, messages in received.items():
        for origin in ("europe", "paris"):
            got = [(seq, payload) for region, seq, payload in messages if region == origin]
            expected = [b"from %s %d" % (origin.encode(), i) for i in range(100)]
            assert [payload for _seq, payload in got] == expected, f"{where}: {origin}'s messages"
            seqs = [seq for seq, _payload in got]
            assert seqs == sorted(set(seqs)), f"{where}: {origin}'s origin seq-ids out of order"


def test_a_parent_certificate_the_child_does_not_trust_keeps_the_link_down_saying_why(tmp_path, ca, hubs):
    parent = tls_parent(tmp_path, ca)
    hubs.append(parent.start())
    stranger = Authority(tmp_path / "stranger", "another CA")
    child = tls_child(tmp_path, ca, parent, trust=stranger)
    hubs.append(child.start())
    link = wait_until(state_is(child, "retrying", "certificate verify failed"), "paris distrusting europe")
    assert link["reason"] == f"{parent.tls_address}: TLS handshake failed: certificate verify failed"
    assert parent.regions()["children"] == []
    assert "TLS handshake failed" in parent.log()  # the parent logs the refused handshake too


def test_a_parent_certificate_for_another_name_is_refused_and_parent_tls_name_fixes_it(tmp_path, ca, hubs):
    parent = tls_parent(tmp_path, ca, issued_to="hub.europe.test")  # carries 127.0.0.1 as well
    hubs.append(parent.start())
    child = tls_child(tmp_path, ca, parent, parent_tls_name="hub.asia.test")
    hubs.append(child.start())
    mismatch = "the certificate is not issued to hub.asia.test"
    wait_until(state_is(child, "retrying", mismatch), "paris refusing the name")
    child.stop()
    child.region["parent_tls_name"] = "hub.europe.test"
    child.start()
    wait_until(child.linked, "paris linked once it expects the right name")


def test_a_child_certificate_naming_another_region_is_refused(tmp_path, ca, hubs):
    parent = tls_parent(tmp_path, ca, require_child_certificate="true")
    hubs.append(parent.start())
    child = tls_child(tmp_path, ca, parent, certificate_for="berlin")
    hubs.append(child.start())
    wait_until(
        state_is(child, "refused", "the client certificate is issued to berlin, not region paris"),
        "europe refusing paris's certificate",
    )
    assert parent.regions()["children"] == []


def test_a_child_without_a_certificate_is_refused_when_the_parent_requires_one(tmp_path, ca, hubs):
    parent = tls_parent(tmp_path, ca, require_child_certificate="true")
    hubs.append(parent.start())
    child = tls_child(tmp_path, ca, parent, certificate_for="")
    hubs.append(child.start())
    wait_until(state_is(child, "refused", "presented no client certificate"), "europe refusing paris")


def test_a_plain_link_is_refused_when_the_parent_requires_child_certificates(tmp_path, ca, hubs):
    parent = tls_parent(tmp_path, ca, require_child_certificate="true")
    hubs.append(parent.start())
    child = RegionHub(tmp_path, "paris", parent)  # plain TCP to the plain port
    hubs.append(child.start())
    wait_until(state_is(child, "refused", "linked over plain TCP"), "europe refusing a plain link")
    # An ordinary client cannot take a region's relay subscriptions either.
    reserved = pytest.raises(InvalidSubscriberId, match="reserved for hubs")
    with Client(parent.address, timeout=5) as client, reserved:
        client.subscribe("news", "__region__paris")


def test_a_tls_link_to_a_plain_port_says_which_port_it_should_name(tmp_path, ca, hubs):
    parent = tls_parent(tmp_path, ca)
    hubs.append(parent.start())
    child = tls_child(tmp_path, ca, f"europe@{parent.address}")  # the plain port
    hubs.append(child.start())
    link = wait_until(state_is(child, "retrying", "TLS handshake failed"), "paris failing the handshake")
    assert "does parent_address name the parent's [tls] port?" in link["reason"]
