"""A client whose hub dies: kill the hub process (SIGKILL), start it again on the same
port and data directory, and the client carries on, missing nothing."""

import pytest

from hedwig.client import Client, ConnectionLost, CouldNotConnect
from tests.receiving import receive_all

RECEIVE_TIMEOUT_S = 20.0  # a hub restart may stand between two messages


@pytest.mark.parametrize("window", [10, 0])
def test_a_subscriber_resubscribes_after_a_hub_crash_and_misses_nothing(own_hub, window):
    own_hub.start()
    with Client(own_hub.address) as subscriber, Client(own_hub.address) as publisher:
        sub = subscriber.subscribe("drop", "s", start="earliest", window=window)
        publisher.publish_many("drop", [b"%d" % i for i in range(1, 101)])
        before = receive_all(sub, 40, RECEIVE_TIMEOUT_S)
        own_hub.kill()
        own_hub.restart()
        # The publisher's connection died while idle: it reconnects without an error.
        assert publisher.publish_many("drop", [b"%d" % i for i in range(101, 201)])[0] == 101
        after = receive_all(sub, 160, RECEIVE_TIMEOUT_S)
        # Nothing came twice: the next message is one published after them all.
        assert publisher.publish("drop", b"marker") == 201
        assert sub.receive(timeout=RECEIVE_TIMEOUT_S).payload == b"marker"
    seqs = [m.seq for m in before + after]
    assert seqs == list(range(1, 201))
    assert [m.payload for m in before + after] == [b"%d" % i for i in range(1, 201)]


def test_a_publish_in_flight_when_the_hub_dies_is_reported_uncertain(own_hub):
    own_hub.start()
    with Client(own_hub.address, reconnect_timeout=1.0) as client:
        client.publish("uncertain", b"stored")
        sub = client.subscribe("uncertain", "s")
        own_hub.kill()
        # The subscription's reader finds the connection gone at once; with no hub,
        # receive gives up at its timeout, then at reconnect_timeout.
        assert sub.receive(timeout=0.2) is None
        with pytest.raises(CouldNotConnect):
            sub.receive(timeout=5)
        with pytest.raises((CouldNotConnect, ConnectionLost)):
            client.publish("uncertain", b"lost")
