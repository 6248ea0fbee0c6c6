"""Relays between regions as the command line shows them, against two real hub
processes (europe a child of world): `describe` right after a relay says what arrived
and where the rest is asked, and the hubs' own relay subscription is shown as a relay."""

from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess, free_port
from hedwig.testing.polling import wait_until
from tests.cli.test_cli import hedwig, lines


def test_describe_right_after_a_relay_and_the_relay_subscription_as_such(tmp_path):
    world_port = free_port()
    (tmp_path / "world.conf").write_text("[region]\nname = world\n")
    (tmp_path / "europe.conf").write_text(
        f"[region]\nname = europe\nparent = world\nparent_address = 127.0.0.1:{world_port}\n"
    )
    world = HubProcess(tmp_path / "w", world_port, "--conf", str(tmp_path / "world.conf"))
    europe = HubProcess(tmp_path / "e", 0, "--conf", str(tmp_path / "europe.conf"))
    with world, europe, Client(world.address) as at_world, Client(europe.address) as at_europe:
        with at_world.subscribe("news", "desk", start="latest") as desk:
            wait_until(lambda: at_europe.describe("news")["subscribers"], "europe relaying news up")
            at_europe.publish("news", b"bonjour")
            assert bytes(desk.receive(timeout=60).payload) == b"bonjour"
        described = lines(hedwig("describe", "news", hub=world))
        relay = next(line for line in described if line.startswith("  from region europe: "))
        assert relay == (
            "  from region europe: received up to its seq-id 1 (its pointer and lag: `hedwig describe news`"
            " there), linked"
        ), described
        at_europe_described = lines(hedwig("describe", "news", hub=europe))
        assert "  to region world: consumed 1, lag 0, relaying (caught up)" in at_europe_described
        listed = lines(hedwig("subscriptions", hub=europe))
        assert listed[1].split()[:7] == ["news", "__region__world", "1", "1", "0", "relay", "to"]
