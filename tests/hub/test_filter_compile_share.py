"""Issue 41, point 3, with [auth] off: the share of the reactor for compiling selectors
([delivery] max_filter_compile_ms_per_user) is a source host's, not a connection's, so
a client does not buy more of it by opening connections. A real hub process; both
connections come from 127.0.0.1."""

from hedwig.client import Client
from hedwig.protocol import Op, Status, encode_frame
from hedwig.protocol.requests import encode_hello, encode_subscribe
from hedwig.selector import DEFAULT_LIMITS
from hedwig.testing.polling import wait_until
from tests.hub.rawpeer import RawPeer

COUNT = 5


def new_selector(n: int) -> str:
    """4 KB of distinct LIKE patterns with `_`: tens of milliseconds to compile."""
    text = " OR ".join(f"s LIKE '%a_a_a_a_a_{n:03d}{i:03d}%'" for i in range(200))
    return text[: text.rfind(" OR ", 0, DEFAULT_LIMITS.max_length)]


def peer(hub) -> RawPeer:
    connection = RawPeer(hub.address)
    connection.send(encode_frame(Op.HELLO, 1, encode_hello("share")))
    assert connection.next_response()[1] is Status.SUCCESS
    return connection


def test_connections_from_one_host_share_its_turns_to_compile(hub):
    first, second, observer = peer(hub), peer(hub), Client(hub.address)
    try:
        first.send(
            b"".join(
                encode_frame(Op.SUBSCRIBE, 10 + n, encode_subscribe("share", f"a{n}", filter=new_selector(n)))
                for n in range(COUNT)
            )
        )

        wait_until(
            lambda: observer.stats()["delivery"]["filter_compiles_waiting"] > 0,
            "the first connection's compiles wait their turn",
        )
        # Another connection from the same host, a new selector: its turn is after theirs.
        second.send(encode_frame(Op.SUBSCRIBE, 99, encode_subscribe("share", "b", filter=new_selector(99))))
        assert second.next_response()[:2] == (99, Status.SUCCESS)
        # Every reply to the first connection was sent before it: all are there already.
        first.sock.setblocking(False)
        try:
            while True:
                data = first.sock.recv(1 << 20)
                assert data
                first.frames += first.decoder.feed(data)
        except BlockingIOError:
            pass
        replies = [frame for frame in first.frames if frame[0] == Op.RESPONSE]
        assert len(replies) == COUNT, f"{len(replies)} of {COUNT} replies before the other connection's"
    finally:
        for connection in (first, second, observer):
            connection.close()
