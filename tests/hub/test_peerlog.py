"""PeerLog on a task.Clock: a peer's first client error of an interval is written, the
rest are counted and written as one line when the interval ends (or the hub stops)."""

from twisted.internet.task import Clock
from twisted.logger import Logger

from hedwig.hub.peerlog import PeerLog
from tests.hub.harness import LogCapture


def test_one_line_per_peer_per_interval_then_a_count():
    clock = Clock()
    peer_log = PeerLog(clock, 10.0)
    logger = Logger(namespace="test")
    with LogCapture() as logs:
        first = "10.0.0.1"
        written = [peer_log.warn(logger, first, "{peer}: bad {n}", peer=f"{first}:1", n=n) for n in range(5)]
        written.append(peer_log.warn(logger, "10.0.0.2", "{peer}: bad", peer="10.0.0.2:1"))
        assert written == [True, False, False, False, False, True]
        clock.advance(9.9)
        assert len(logs.events) == 2
        clock.advance(0.1)
        assert [(e.get("peer"), e.get("count")) for e in logs.events[2:]] == [("10.0.0.1", 4)]
        assert peer_log.warn(logger, "10.0.0.1", "{peer}: bad again", peer="10.0.0.1:2")  # a new interval
        assert peer_log.lines_left_out == 4


def test_stopping_writes_the_counts_so_far():
    clock = Clock()
    peer_log = PeerLog(clock, 10.0)
    logger = Logger(namespace="test")
    with LogCapture() as logs:
        for _ in range(3):
            peer_log.warn(logger, "10.0.0.1", "bad")
        peer_log.stop()
    assert [e.get("count") for e in logs.events] == [None, 2]
    assert clock.getDelayedCalls() == []
