"""The blocking client's one-message round trip: one send and one receive per publish on
a connection read from a moment ago; one idle for longer is asked whether the hub
closed it first (BlockingConnection.closed_by_hub), as before every request once was."""

from hedwig.client import Client


def test_a_connection_read_from_a_moment_ago_is_used_without_asking_the_socket(hub):
    with Client(hub.address) as client:
        assert client.publish("round-trip", b"0") == 1
        connection = client._connections.known(client._routes.default)
        asked = []
        ask = connection.closed_by_hub
        connection.closed_by_hub = lambda: asked.append(1) or ask()
        assert [client.publish("round-trip", b"%d" % i) for i in range(1, 101)] == list(range(2, 102))
        assert asked == []
        connection._last_read -= 60  # (as if nothing had arrived for a minute)
        assert client.publish("round-trip", b"idle") == 102
        assert asked == [1] and connection.lost is None
