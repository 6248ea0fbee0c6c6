"""Issue 28, finding 8: connections that never authenticate, against a real hub with
[auth] on. A connection that said HELLO and sends no AUTH is closed at [auth]
auth_timeout_s, and past [auth] max_unauthenticated waiting connections the oldest is
closed to make room, so an idle crowd holds neither descriptors nor a real user's way
in. On a hub without those rules every such connection stayed open for good."""

import socket

from hedwig.protocol import Op, Status
from tests.auth.peers import Peer
from tests.auth.test_guessing import Guesser, start_hub, stats_of


def test_a_connection_that_sends_no_auth_is_told_and_closed_at_the_deadline(tmp_path):
    with start_hub(tmp_path, auth_timeout_s=1) as hub:
        idle = Guesser(hub.address, "127.0.0.5")  # said HELLO, and nothing since
        status, message = idle.outcome()
        assert status is Status.AUTHENTICATION_FAILED and "no AUTH within 1 s of HELLO" in message
        assert idle.outcome() is None  # then the hub closed it
        root = Peer(hub.address, "root")
        assert root.auth_status is Status.SUCCESS
        logins = stats_of(root)
        assert logins["auth_timeouts"] == 1 and logins["unauthenticated"] == 0, logins


def test_an_idle_crowd_is_pushed_out_oldest_first_and_a_user_gets_in(tmp_path):
    """Sixty connections, forty of them said HELLO and twenty said nothing, against a
    room of twenty-five: the oldest thirty-five are told and closed, and a user who
    connects after them logs in and works."""
    hub_section = "[hub]\nhello_timeout_s = 600\n"  # (the silent ones wait as long as they like)
    with start_hub(tmp_path, max_unauthenticated=25, auth_timeout_s=600, before=hub_section) as hub:
        greeted = [Guesser(hub.address, f"127.0.3.{n}") for n in range(40)]
        host, port = hub.address.rsplit(":", 1)
        silent = []
        for _ in range(20):
            sock = socket.create_connection((host, int(port)), timeout=30)
            silent.append(sock)
        # The oldest 35 (of 40 greeted, then 20 silent, in that order) went: the first
        # 35 greeted ones. Each was told why before it was closed.
        for guesser in greeted[:35]:
            status, message = guesser.outcome()
            assert status is Status.AUTHENTICATION_FAILED, message
            assert "too many connections waiting to authenticate" in message
            assert guesser.outcome() is None
        alice = Peer(hub.address, "alice")
        assert alice.auth_status is Status.SUCCESS
        assert alice.request(Op.CREATE_TOPIC, _create_body("t.in"))[0] is Status.SUCCESS
        root = Peer(hub.address, "root")
        logins = stats_of(root)
        # Alice, the 26th waiting for a moment, pushed out one more of the crowd on her way
        # in; root came in once she had left the room. Never more than 25 wait.
        assert logins["pushed_out"] == 36 and logins["unauthenticated"] == 24, logins
        assert greeted[35].outcome()[0] is Status.AUTHENTICATION_FAILED
        for sock in silent:
            sock.close()


def _create_body(topic: str) -> bytes:
    from hedwig.protocol.spec import OPS

    return OPS[Op.CREATE_TOPIC].encode(topic)
