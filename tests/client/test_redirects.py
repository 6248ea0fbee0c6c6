"""NOT_RESPONSIBLE_FOR_TOPIC: followed to the owner, remembered, bounded, no loops."""

import pytest

from hedwig.client import Client, NoSuchTopic, NotResponsibleForTopic, Status, TooManyRedirects
from hedwig.protocol import Op
from tests.client.redirector import Redirector


def test_publish_and_subscribe_follow_the_redirect_and_remember_it(hub):
    with Redirector(hub.address) as redirector, Client(redirector.address) as client:
        assert client.publish("moved", b"one") == 1
        assert client.publish("moved", b"two") == 2
        sub = client.subscribe("moved", "s", start="earliest")
        assert [sub.receive(timeout=10).payload for _ in range(2)] == [b"one", b"two"]
    # Only the first request went to the hub that does not own the topic.
    assert redirector.requests == [Op.PUBLISH]


def test_a_redirect_loop_is_refused(hub):
    with Redirector() as a, Redirector() as b:
        a.owner, b.owner = b.address, a.address
        with Client(a.address) as client, pytest.raises(TooManyRedirects, match="loop") as error:
            client.publish("ping-pong", b"x")
    assert error.value.status is Status.NOT_RESPONSIBLE_FOR_TOPIC
    assert (a.requests, b.requests) == ([Op.PUBLISH], [Op.PUBLISH])


def test_redirects_are_bounded(hub):
    """a -> b -> c -> d -> the hub: four redirects."""
    with (
        Redirector(hub.address) as d,
        Redirector(d.address) as c,
        Redirector(c.address) as b,
        Redirector(b.address) as a,
    ):
        with Client(a.address, max_redirects=3) as client, pytest.raises(TooManyRedirects, match="than 3"):
            client.publish("far", b"x")
        assert d.requests == [Op.PUBLISH]  # the fourth redirect, to the hub, was not followed
        with Client(hub.address) as direct, pytest.raises(NoSuchTopic):
            direct.describe("far")
        with Client(a.address, max_redirects=4) as client:
            assert client.publish("far", b"x") == 1


def test_an_admin_read_without_a_topic_is_not_redirected(hub):
    with (
        Redirector(hub.address) as redirector,
        Client(redirector.address) as client,
        pytest.raises(NotResponsibleForTopic) as error,
    ):
        client.topics()
    assert error.value.owner == hub.address
