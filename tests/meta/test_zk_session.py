"""A ZooKeeper session cut off from every server: kazoo stays SUSPENDED for as long as
the partition lasts (it hears LOST only from a server), while the servers expired the
session one timeout after they last heard of it. The session takes itself for LOST after
a timeout SUSPENDED, so that the hub releases topics another hub owns by then."""

from twisted.internet import task

from hedwig.meta.zk_session import CONNECTED, LOST, SUSPENDED, ZkSession


class _Reactor(task.Clock):
    """A Clock that runs what a kazoo thread hands over at once (the test is the thread)."""

    def callFromThread(self, f, *args, **kwargs):
        f(*args, **kwargs)


class _Kazoo:
    """What ZkSession reads of a KazooClient: its listener, state and session timeout."""

    connected = True
    _session_timeout = 2000  # ms

    def add_listener(self, listener):
        self.listener = listener


def _session():
    reactor, kazoo = _Reactor(), _Kazoo()
    session = ZkSession(kazoo, reactor)
    states = []
    session.add_listener(states.append)
    return reactor, kazoo, session, states


def test_a_session_suspended_for_its_timeout_is_taken_for_lost():
    reactor, kazoo, session, states = _session()
    kazoo.listener("SUSPENDED")
    reactor.advance(1.999)
    assert states == [SUSPENDED]
    reactor.advance(0.001)
    assert states == [SUSPENDED, LOST]
    assert session.state == LOST and session.presumed_lost == 1
    kazoo.listener("LOST")  # what kazoo says once it reaches a server again: nothing new
    kazoo.listener("CONNECTED")  # a new session
    assert states == [SUSPENDED, LOST, CONNECTED]
    assert session.sessions == 1


def test_a_connection_back_within_the_timeout_keeps_the_session():
    reactor, kazoo, session, states = _session()
    kazoo.listener("SUSPENDED")
    reactor.advance(1.5)
    kazoo.listener("CONNECTED")
    reactor.advance(10)
    assert states == [SUSPENDED, CONNECTED]
    assert session.sessions == 0 and session.presumed_lost == 0
    kazoo.listener("SUSPENDED")  # the timeout counts from each suspension
    reactor.advance(1.5)
    assert states == [SUSPENDED, CONNECTED, SUSPENDED]
    reactor.advance(0.5)
    assert states[-1] == LOST


def test_a_stopped_session_takes_nothing_for_lost():
    reactor, kazoo, session, states = _session()
    kazoo.listener("SUSPENDED")
    session._stopped = True  # (what stop() sets before closing the client on a thread)
    reactor.advance(5)
    assert states == [SUSPENDED]
    assert reactor.getDelayedCalls() == []
