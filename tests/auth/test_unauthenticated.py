"""Issue 28, finding 8: connections that never authenticate, against a real hub with
[auth] on. A connection that said HELLO and sends no AUTH is closed at [auth]
auth_timeout_s, and past [auth] max_unauthenticated waiting connections the oldest is
closed to make room, so an idle crowd holds neither descriptors nor a real user's way
in. On a hub without those rules every such connection stayed open for good."""

import socket

from hedwig.protocol import Op, Status
from tests.auth.peers import USERS, Peer
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


def test_an_idle_crowd_is_pushed_out_by_source_and_a_user_gets_in(tmp_path):
    """Sixty connections against a room of twenty-five: forty said HELLO, each from a
    source of its own, then twenty said nothing, all from 127.0.0.1. Ties (one connection
    each) push out the oldest; once 127.0.0.1 holds more than any other source, its own
    connections go. A user who connects after them logs in and works."""
    hub_section = "[hub]\nhello_timeout_s = 600\n"  # (the silent ones wait as long as they like)
    with start_hub(tmp_path, max_unauthenticated=25, auth_timeout_s=600, before=hub_section) as hub:
        greeted = [Guesser(hub.address, f"127.0.3.{n}") for n in range(40)]
        host, port = hub.address.rsplit(":", 1)
        silent = []
        for _ in range(20):
            sock = socket.create_connection((host, int(port)), timeout=30)
            silent.append(sock)
        # 15 greeted went to make room for the other greeted, one more for the first
        # silent one; each silent one after it pushed out the one before it (its source
        # held the most). Each was told why before it was closed.
        for guesser in greeted[:16]:
            status, message = guesser.outcome()
            assert status is Status.AUTHENTICATION_FAILED, message
            assert "too many connections waiting to authenticate" in message
            assert guesser.outcome() is None
        for sock in silent[:19]:
            assert _closed_after_a_reply(sock)
        alice = Peer(hub.address, "alice")  # (from 127.0.0.1: the last silent one goes)
        assert alice.auth_status is Status.SUCCESS
        assert alice.request(Op.CREATE_TOPIC, _create_body("t.in"))[0] is Status.SUCCESS
        assert _closed_after_a_reply(silent[19])
        root = Peer(hub.address, "root")
        logins = stats_of(root)
        assert logins["pushed_out"] == 36 and logins["unauthenticated"] == 24, logins
        greeted[16].guess("bob", USERS["bob"][0])  # still waiting: its AUTH is answered
        assert greeted[16].outcome()[0] is Status.SUCCESS
        for sock in silent:
            sock.close()


def test_a_flood_from_one_host_does_not_push_out_a_user_from_another(tmp_path):
    """Issue 37, point 15: 800 connections from 127.0.0.2 pushed out, oldest first, a
    user's connection from a host she had logged in from before, in about half of the
    runs before her AUTH was answered. Whom to push out depends on the source now: the
    flooding host holds the most waiting connections, so its own go; a user's single
    connection, from a host that logged in before or not, stays, whatever its age."""
    hub_section = "[hub]\nhello_timeout_s = 600\n"
    with start_hub(tmp_path, max_unauthenticated=25, auth_timeout_s=600, before=hub_section) as hub:
        before = Guesser(hub.address, "127.0.0.4")  # alice logged in from 127.0.0.4 before
        before.guess("alice", USERS["alice"][0])
        assert before.outcome()[0] is Status.SUCCESS
        flood = [Guesser(hub.address, "127.0.0.2") for _ in range(30)]
        alice = Guesser(hub.address, "127.0.0.4")  # HELLO said; AUTH not yet
        bob = Guesser(hub.address, "127.0.0.5")  # a host no one logged in from
        flood += [Guesser(hub.address, "127.0.0.2") for _ in range(40)]  # all newer than hers
        alice.guess("alice", USERS["alice"][0])
        assert alice.outcome()[0] is Status.SUCCESS
        bob.guess("bob", USERS["bob"][0])
        assert bob.outcome()[0] is Status.SUCCESS
        # The flood's oldest 47 went (70 + alice + bob against 25, 2 of them hers and bob's).
        for guesser in flood[:47]:
            status, message = guesser.outcome()
            assert status is Status.AUTHENTICATION_FAILED and "too many connections" in message
        flood[47].guess("bob", USERS["bob"][0])
        assert flood[47].outcome()[0] is Status.SUCCESS
        assert stats_of(Peer(hub.address, "root"))["pushed_out"] == 47


def _closed_after_a_reply(sock) -> bool:
    """Whether the hub closed `sock` (after its refusal): reads to the end."""
    data = b""
    while True:
        try:
            chunk = sock.recv(1 << 16)
        except ConnectionResetError:
            return True
        if not chunk:
            return bool(data)
        data += chunk


def _create_body(topic: str) -> bytes:
    from hedwig.protocol.spec import OPS

    return OPS[Op.CREATE_TOPIC].encode(topic)
