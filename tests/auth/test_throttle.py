"""What a password guess costs (hedwig.auth.throttle), under task.Clock: failures counted
per source and per user in a window, a known-good source never locked out by guesses at
its user, one bounded queue of checks in which known-good sources go first and a closed
connection's check is dropped, and memory bounded whatever the attacker varies."""

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock

from hedwig.auth.throttle import CheckQueue, FailureWindow, LoginRefused, LoginThrottle


def test_a_window_counts_failures_until_it_ends():
    clock = Clock()
    window = FailureWindow(clock, 60, max_keys=10)
    assert [window.add("10.0.0.1") for _ in range(3)] == [1, 2, 3]
    clock.advance(59)
    assert window.count("10.0.0.1") == 3 and window.seconds_left("10.0.0.1") == pytest.approx(1)
    clock.advance(1)
    assert window.count("10.0.0.1") == 0
    assert window.add("10.0.0.1") == 1  # a new window


def test_a_window_forgets_its_oldest_keys_beyond_its_bound():
    window = FailureWindow(Clock(), 60, max_keys=100)
    for n in range(10_000):
        window.add(f"10.0.{n // 256}.{n % 256}")
    assert len(window) == 100
    assert window.count("10.0.0.0") == 0 and window.count("10.0.39.15") == 1


def fail_once(throttle, user, source):
    assert throttle.admit(user, source) is None
    return throttle.ended(user, source, False)


def test_a_source_past_its_limit_is_refused_until_its_window_ends():
    clock = Clock()
    throttle = LoginThrottle(clock, window_s=60, max_failures_per_source=3, max_failures_per_user=1000)
    assert [fail_once(throttle, user, "10.0.0.9") for user in "abc"] == [(1, 1), (2, 1), (3, 1)]
    why = throttle.admit("d", "10.0.0.9")
    assert why is not None and "from 10.0.0.9" in why and "60 s" in why
    assert throttle.admit("d", "10.0.0.10") is None  # another source is not
    throttle.ended("d", "10.0.0.10", True)
    clock.advance(60)
    assert throttle.admit("d", "10.0.0.9") is None
    assert throttle.refused == 1


def test_checks_in_flight_count_against_the_limits():
    """Guesses sent at once get no more checks than guesses sent in turn."""
    throttle = LoginThrottle(Clock(), max_failures_per_source=3, max_failures_per_user=1000)
    admitted = [throttle.admit(f"u{n}", "10.0.0.9") for n in range(10)]
    assert admitted[:3] == [None] * 3 and all(admitted[3:])
    for n in range(3):  # two of them never ran (the queue was full): they count for nothing
        throttle.ended(f"u{n}", "10.0.0.9", None if n else False)
    assert throttle.admit("u9", "10.0.0.9") is None and throttle.admit("u10", "10.0.0.9") is None
    assert throttle.admit("u11", "10.0.0.9") is not None


def test_a_user_past_its_limit_is_refused_except_from_its_known_good_sources():
    clock = Clock()
    throttle = LoginThrottle(clock, window_s=60, max_failures_per_source=1000, max_failures_per_user=5)
    assert throttle.admit("alice", "10.1.1.1") is None
    throttle.ended("alice", "10.1.1.1", True)  # alice's own machine
    for n in range(5):
        fail_once(throttle, "alice", f"192.168.0.{n}")  # guesses from five sources
    assert "for user alice" in throttle.admit("alice", "192.168.0.77")
    assert throttle.admit("alice", "10.1.1.1") is None  # not locked out of her machine
    assert throttle.admit("bob", "192.168.0.77") is None
    assert throttle.is_known_good("10.1.1.1") and not throttle.is_known_good("192.168.0.77")


def test_a_flooder_on_a_users_own_host_neither_locks_her_out_nor_guesses_her_password_freely():
    """Issue 37, point 15: the docs promised that a user is never refused from a source it
    logged in from before, but a guesser on the same host (a shared machine, a NAT) put
    the host past its limit and alice was refused there too. From her known-good host she
    is held to a limit of her own: failures for her from that host."""
    clock = Clock()
    throttle = LoginThrottle(clock, window_s=60, max_failures_per_source=3, max_failures_per_user=2)
    assert throttle.admit("alice", "10.1.1.1") is None
    throttle.ended("alice", "10.1.1.1", True)
    for user in ("bob", "carol", "dave"):  # the flooder guesses other users from her host
        fail_once(throttle, user, "10.1.1.1")
    assert "from 10.1.1.1" in throttle.admit("erin", "10.1.1.1")  # the host is past its limit
    assert throttle.admit("alice", "10.1.1.1") is None  # she is not
    throttle.ended("alice", "10.1.1.1", True)
    fail_once(throttle, "alice", "10.1.1.1")  # the flooder now guesses hers: two, not more
    fail_once(throttle, "alice", "10.1.1.1")
    why = throttle.admit("alice", "10.1.1.1")
    assert why is not None and "for user alice from 10.1.1.1" in why and "60 s" in why
    clock.advance(60)
    assert throttle.admit("alice", "10.1.1.1") is None


def test_known_good_pairs_are_bounded_and_the_oldest_forgotten():
    throttle = LoginThrottle(Clock(), max_tracked=50)
    for n in range(500):
        user, source = f"user{n}", f"10.0.{n // 256}.{n % 256}"
        assert throttle.admit(user, source) is None
        throttle.ended(user, source, True)
    assert throttle.describe()["known_good"] == 50
    assert not throttle.is_known_good("10.0.0.0") and throttle.is_known_good("10.0.1.243")


class Checks:
    """Checks that end when the test says."""

    def __init__(self):
        self.started = []

    def check(self, name):
        def start():
            d = Deferred()
            self.started.append((name, d))
            return d

        return start

    def finish(self, name, result=None):
        for index, (started, d) in enumerate(self.started):
            if started == name:
                del self.started[index]
                d.callback(result if result is not None else name)
                return
        raise AssertionError(f"{name} is not running")

    @property
    def running(self):
        return [name for name, _ in self.started]


def test_the_queue_runs_at_most_max_running_and_refuses_beyond_max_waiting():
    checks, queue = Checks(), CheckQueue(max_running=2, max_waiting=2)
    results, refused = [], []
    for name in "abcde":
        queue.submit(checks.check(name), lambda: True).addCallbacks(results.append, refused.append)
    assert checks.running == ["a", "b"] and queue.waiting == 2
    assert len(refused) == 1 and refused[0].check(LoginRefused)  # e: the queue was full
    checks.finish("a")
    assert checks.running == ["b", "c"]
    for name in "bcd":
        checks.finish(name)
    assert results == ["a", "b", "c", "d"] and queue.running == 0 and queue.turned_away == 1


def test_known_good_sources_go_first():
    checks, queue = Checks(), CheckQueue(max_running=1, max_waiting=50)
    order = []
    queue.submit(checks.check("running"), lambda: True).addCallback(order.append)
    for n in range(50):
        queue.submit(checks.check(f"guess{n}"), lambda: True).addCallback(order.append)
    queue.submit(checks.check("alice"), lambda: True, first=True).addCallback(order.append)
    assert queue.turned_away == 0  # (a full lane of guesses does not turn her away)
    checks.finish("running")
    assert checks.running == ["alice"]  # ahead of fifty guesses that came before it
    checks.finish("alice")
    assert order == ["running", "alice"]


def test_a_check_whose_connection_closed_is_dropped_not_run():
    checks, queue = Checks(), CheckQueue(max_running=1, max_waiting=100)
    open_connections = {"kept"}
    queue.submit(checks.check("running"), lambda: True)
    outcomes = {}
    for name in ("gone1", "gone2", "kept"):
        queue.submit(checks.check(name), lambda name=name: name in open_connections).addBoth(
            lambda result, name=name: outcomes.__setitem__(name, result)
        )
    checks.finish("running")
    assert checks.running == ["kept"]  # the two closed ones were skipped
    assert outcomes["gone1"].check(LoginRefused) and outcomes["gone2"].check(LoginRefused)
    assert queue.dropped == 2


def test_a_check_that_raises_frees_its_slot():
    queue = CheckQueue(max_running=1, max_waiting=10)

    def broken():
        raise RuntimeError("no thread")

    failures = []
    queue.submit(broken, lambda: True).addErrback(failures.append)
    assert failures and failures[0].check(RuntimeError) and queue.running == 0
