"""Issue 28, findings 2-4: password guessing against a real hub with [auth] on.

Each guesser is a raw socket from its own loopback address (127.0.0.N: the hub counts a
source by its host), so a test tells guesses from one source apart from guesses spread
over many, and a user's real machine (127.0.0.1) from the guessers'. On a hub where the
failure delay is per connection, AUTHs pipelined on one connection are each checked,
parallel connections multiply the guessing rate, and a flood queues every check first
come first served, closed connections' included; here none of that holds."""

import json
import selectors
import socket

import pytest

from hedwig.auth import hash_password
from hedwig.protocol import FrameDecoder, Op, Status, encode_frame
from hedwig.protocol.auth_request import encode_auth
from hedwig.protocol.requests import encode_hello
from hedwig.protocol.responses import split_response
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.polling import wait_until
from tests.auth.peers import USERS, Peer, write_users

WRONG = "wrong user name or password"


def start_hub(directory, users=None, before: str = "", **auth):
    """A hub with [auth] on and `auth`'s settings; `before`: sections of the conf before it."""
    users = users or write_users(directory / "users.json")
    settings = {"enabled": "true", "users_file": users, "failure_delay_s": "0", **auth}
    conf = directory / "hub.conf"
    conf.write_text(before + "[auth]\n" + "".join(f"{key} = {value}\n" for key, value in settings.items()))
    return HubProcess(directory / "data", 0, "--conf", str(conf))


class Guesser:
    """A connection from `source` that said HELLO; `guess` sends AUTH frames without
    waiting, `outcome` reads the first reply: (status, message), or None when the hub
    closed the connection without one."""

    def __init__(self, address, source: str):
        host, port = address.rsplit(":", 1)
        self.sock = socket.socket()
        self.sock.settimeout(30)
        self.sock.bind((source, 0))
        self.sock.connect((host, int(port)))
        self.decoder = FrameDecoder(1 << 20)
        self.frames = []
        self.sock.sendall(encode_frame(Op.HELLO, 1, encode_hello("guesser")))
        assert self.outcome()[0] is Status.SUCCESS
        self.next_id = 2

    def guess(self, user: str, password: str, times: int = 1) -> None:
        frames = b""
        for _ in range(times):
            frames += encode_frame(Op.AUTH, self.next_id, encode_auth(user, password))
            self.next_id += 1
        self.sock.sendall(frames)

    def read_some(self) -> bool:
        """Read what has come; False once the hub closed the connection."""
        data = self.sock.recv(1 << 16)
        self.frames += self.decoder.feed(data)
        return bool(data)

    def reply(self):
        if not self.frames:
            return None
        op, _request_id, body = self.frames.pop(0)
        assert op == Op.RESPONSE
        _op, status, message, _payload = split_response(body)
        return status, message

    def outcome(self):
        while not self.frames:
            try:
                if not self.read_some():
                    return None
            except ConnectionResetError:
                return None
        return self.reply()

    def close(self) -> None:
        self.sock.close()


def logins(hub) -> dict:
    return stats_of(Peer(hub.address, "root"))


@pytest.fixture
def guessing_hub(tmp_path):
    with start_hub(tmp_path, max_failures_per_source=5, max_failures_per_user=8) as hub:
        yield hub


def test_pipelined_auths_on_one_connection_are_one_guess(guessing_hub):
    """Finding 2: five wrong passwords and the right one in one write; the sixth used to
    answer SUCCESS. Now the first is checked, and the connection ends with it."""
    guesser = Guesser(guessing_hub.address, "127.0.0.2")
    frames = b"".join(
        encode_frame(Op.AUTH, 10 + n, encode_auth("alice", "guess" if n < 5 else USERS["alice"][0]))
        for n in range(6)
    )
    guesser.sock.sendall(frames)
    replies = []
    while (reply := guesser.outcome()) is not None:
        replies.append(reply)
    assert replies and all(status is Status.AUTHENTICATION_FAILED for status, _ in replies), replies
    assert logins(guessing_hub)["failed"] == 1  # one check, not six


def test_parallel_connections_from_one_source_get_the_sources_limit_of_checks(guessing_hub):
    """Finding 3: sixty connections from one host guessing at once: five are checked
    (the source's limit, pending checks counted), the rest refused without a check."""
    before = logins(guessing_hub)["failed"]
    guessers = [Guesser(guessing_hub.address, "127.0.0.3") for _ in range(60)]
    for n, guesser in enumerate(guessers):
        guesser.guess("bob", f"guess-{n}")
    outcomes = [guesser.outcome() for guesser in guessers]
    assert all(status is Status.AUTHENTICATION_FAILED for status, _ in outcomes)
    checked = [message for _, message in outcomes if WRONG in message]
    refused = [message for _, message in outcomes if "too many failed logins from 127.0.0.3" in message]
    assert len(checked) == 5 and len(refused) == 55, outcomes
    assert logins(guessing_hub)["failed"] == before + 5
    # The right password from that host is refused too, until the window ends...
    late = Guesser(guessing_hub.address, "127.0.0.3")
    late.guess("bob", USERS["bob"][0])
    status, message = late.outcome()
    assert status is Status.AUTHENTICATION_FAILED and "too many failed logins" in message
    # ...while another host logs in as bob at once.
    assert Peer(guessing_hub.address, "bob").auth_status is Status.SUCCESS


def test_guesses_at_one_user_from_many_sources_stop_at_the_users_limit(guessing_hub):
    """Finding 3: spreading guesses over hosts does not spread the user's limit; the
    user's own machine, where it logged in before, is not locked out."""
    assert Peer(guessing_hub.address, "alice").auth_status is Status.SUCCESS  # from 127.0.0.1
    outcomes = []
    for n in range(4, 16):  # 12 hosts, two guesses each: 24 guesses, under each host's limit
        for attempt in range(2):
            guesser = Guesser(guessing_hub.address, f"127.0.0.{n}")
            guesser.guess("alice", f"guess-{n}-{attempt}")
            outcomes.append(guesser.outcome())
    checked = [message for _, message in outcomes if WRONG in message]
    refused = [message for _, message in outcomes if "too many failed logins for user alice" in message]
    assert len(checked) == 8 and len(refused) == 16, outcomes
    assert Peer(guessing_hub.address, "alice").auth_status is Status.SUCCESS  # her machine still logs in


def test_failed_logins_are_logged_counted_and_few(guessing_hub):
    """Finding 3: every failure counted, the lines growing with the count's logarithm."""
    for n in range(20):
        guesser = Guesser(guessing_hub.address, f"127.0.1.{n}")
        guesser.guess("ghost", "x")
        guesser.outcome()
    first = "failed login for user ghost from 127.0.1.0: 1 from 127.0.1.0 and 1 for ghost"
    assert guessing_hub.wait_for_log(first)
    assert guessing_hub.wait_for_log("and 8 for ghost in the last 60 s (8 failed logins in all)")
    assert guessing_hub.wait_for_log("login for user ghost from 127.0.1.8 refused without a check")
    assert guessing_hub.wait_for_log("(8 refused so far)")  # the 12th refusal: no line of its own
    assert logins(guessing_hub)["refused_without_check"] == 12
    lines = [line for line in guessing_hub.output().splitlines() if "UsersFileAuthenticator" in line]
    # One line for each source's first failure (a source's count doubling), one for each
    # doubling of the refusals: 8 + 4, for 20 guesses, all of them counted.
    assert len(lines) == 12, lines


def test_a_flood_neither_queues_without_bound_nor_keeps_a_known_user_waiting(tmp_path):
    """Finding 4: 300 connections from guessing hosts flood the checks of bob's password,
    a costly one. At most max_waiting_checks wait (the rest are refused at once: the hub
    is busy), the checks of connections that closed are dropped, and alice, from a host
    she logged in from before, is checked before the flood's waiting checks."""
    users = write_users(tmp_path / "users.json")
    records = json.loads((tmp_path / "users.json").read_text())
    records["users"]["bob"]["password"] = hash_password(USERS["bob"][0], log2_n=15)  # ~0.1 s a check
    (tmp_path / "users.json").write_text(json.dumps(records))
    limits = {"max_failures_per_source": 100_000, "max_failures_per_user": 100_000}
    # (300 connections wait, said HELLO, before any guesses)
    limits.update(max_unauthenticated=1000, auth_timeout_s=600)
    with start_hub(tmp_path, users, max_waiting_checks=16, max_concurrent_checks=1, **limits) as hub:
        root = Peer(hub.address, "root")  # from 127.0.0.1, as alice: a known-good source
        alice = Guesser(hub.address, "127.0.0.1")
        flood = [Guesser(hub.address, f"127.0.2.{n % 50}") for n in range(300)]
        for guesser in flood:
            guesser.guess("bob", "guess")
        stats = wait_until(
            lambda: (s := stats_of(root))["waiting"] == 16 and s["turned_away"] + 17 >= 300 and s,
            "the flood to fill the queue",
        )
        busy = read_replies(flood, stats["turned_away"], "too many logins to check")
        waiting = [guesser for guesser in flood if guesser not in busy]
        for guesser in waiting[: len(waiting) // 2]:  # half of the queue hangs up
            guesser.close()
        still_open = waiting[len(waiting) // 2 :]
        alice.guess("alice", USERS["alice"][0])
        answered_before_alice = read_until_answered(alice, still_open)
        assert alice.reply()[0] is Status.SUCCESS
        # Before her: the check running when she asked, and at most one more that ended
        # while her reply was written; never the queue of guesses that came before her.
        assert answered_before_alice <= 2, (answered_before_alice, len(still_open))
        for guesser in still_open:
            assert guesser.outcome()[0] is Status.AUTHENTICATION_FAILED
        stats = stats_of(root)
        assert stats["dropped_closed"] >= len(waiting) // 2 - 2, stats
        assert stats["failed"] <= len(still_open) + 2, stats


def stats_of(peer) -> dict:
    status, message, payload = peer.request(Op.STATS, b"")
    assert status is Status.SUCCESS, message
    return json.loads(bytes(payload))["logins"]


def read_replies(guessers, count: int, text: str) -> list:
    """The guessers whose reply holds `text`, read until `count` of them have answered."""
    selector = selectors.DefaultSelector()
    for guesser in guessers:
        selector.register(guesser.sock, selectors.EVENT_READ, guesser)
    found = []
    while len(found) < count:
        events = selector.select(timeout=30)
        assert events, f"{len(found)} of {count} replies holding {text!r} came"
        for key, _ in events:
            guesser = key.data
            guesser.read_some()
            reply = guesser.reply()
            if reply is not None:
                selector.unregister(guesser.sock)
                if text in reply[1]:
                    found.append(guesser)
    selector.close()
    return found


def read_until_answered(first, others) -> int:
    """Read `first` and `others` until `first` has a reply; how many of the others
    answered before it."""
    selector = selectors.DefaultSelector()
    for guesser in [first, *others]:
        selector.register(guesser.sock, selectors.EVENT_READ, guesser)
    answered = 0
    while not first.frames:
        events = selector.select(timeout=30)
        assert events, "no reply came"
        for key, _ in events:
            guesser = key.data
            if guesser.read_some() and guesser is not first and guesser.frames:
                answered += 1
                selector.unregister(guesser.sock)
    selector.close()
    return answered


def test_a_user_name_outside_the_rules_is_refused_before_any_check(guessing_hub):
    """Finding 6: a newline in an AUTH user name used to reach the log as a line of its
    own ("authenticated as ops"); the users file's rule is applied as AUTH is decoded."""
    guesser = Guesser(guessing_hub.address, "127.0.0.20")
    guesser.guess("x\n2026-11-26T00:00:00Z info hedwig: 127.0.0.1: authenticated as ops", "pw")
    status, message = guesser.outcome()
    assert status is Status.MALFORMED_REQUEST and "\\n" in message and "\n" not in message
    assert guessing_hub.wait_for_log("is not 1-64 of [A-Za-z0-9._@-]")
    assert not any(line.startswith("2026-11-26T00:00:00Z") for line in guessing_hub.output().splitlines())
    assert logins(guessing_hub)["failed"] == 0
