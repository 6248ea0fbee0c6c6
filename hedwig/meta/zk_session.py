"""A ZooKeeper session through kazoo, every answer delivered on the reactor thread.

kazoo runs its connection and its callbacks on threads of its own. This bridge keeps
that away from the rest of the hub: each request is one of kazoo's asynchronous calls
(`get_async`, `create_async`, a transaction's `commit_async`, ...), whose completion
hands the outcome to the reactor with `callFromThread`, so callers get an ordinary
Deferred and never block the reactor. Connection states arrive the same way: listeners
are called on the reactor thread with "CONNECTED", "SUSPENDED" or "LOST" (kazoo's
KazooState names) and, after a LOST, the next "CONNECTED" is a new session.

What the states mean for a hub (hedwig.hub.zk_topics): SUSPENDED is a connection lost
while the session may still be alive on the servers (ephemeral znodes kept: acks are
held, no topic is claimed); LOST is a session that expired or closed (its ephemeral
znodes are gone: every topic is released). kazoo reconnects by itself, with a new
session after a LOST.

kazoo says LOST only when a server tells it the session expired: cut off from every
server (a partition), it stays SUSPENDED for as long as the partition lasts, while the
servers expired the session one timeout after they last heard from it and another hub
took the topics over. So a session SUSPENDED for a whole session timeout is LOST here
(as Curator's connection state does since 3.0): the hub releases its topics, and its
clients go to the hubs that can own them. Should the servers still hold the session when
the connection comes back (a quorum lost meanwhile keeps sessions), the next CONNECTED
is handled as a new session: the hub registers again and claims its topics anew.

Nothing here imports the reactor: it comes in as an argument (IReactorFromThreads, and
for `start`/`stop` IReactorThreads and IReactorTime).
"""

import logging

from twisted.internet.defer import Deferred, fail
from twisted.logger import Logger
from twisted.python.failure import Failure

from hedwig.concurrency.deferreds import in_thread
from hedwig.meta.interface import MetadataError

_logger = Logger()

CONNECTED, SUSPENDED, LOST = "CONNECTED", "SUSPENDED", "LOST"


class ZooKeeperUnreachable(MetadataError):
    """No ZooKeeper server of the list answered in time (at start)."""


def kazoo_client(servers: str, session_timeout_ms: int, **options):
    """A KazooClient for `servers` ("host:port,..."), reconnecting quickly and for ever:
    a ZooKeeper restart must cost the hub no more than the restart itself."""
    try:
        from kazoo.client import KazooClient
    except ImportError:  # (the zk extra)
        from hedwig.config.extras import install_hint

        raise MetadataError(f"a region on ZooKeeper needs kazoo: {install_hint('zk')}") from None
    quiet = logging.getLogger("hedwig.kazoo")  # kazoo's chatter: warnings and up only
    quiet.setLevel(logging.WARNING)
    retry = {"max_tries": -1, "delay": 0.05, "backoff": 2, "max_jitter": 0.2, "max_delay": 1.0}
    return KazooClient(
        hosts=servers,
        timeout=session_timeout_ms / 1000.0,
        connection_retry=retry,
        command_retry={"max_tries": 0},
        logger=quiet,
        **options,
    )


class _LastFailure(logging.Handler):
    """What kazoo last said of a connection attempt that failed ("Connection dropped:
    socket connection error: Connection refused"), for the line a start that gives up
    writes: nobody listening and a server that does not answer call for different fixes."""

    _SAID = ("Connection dropped: ", "Connection time-out: ", "Cannot resolve ")

    def __init__(self):
        super().__init__(logging.WARNING)
        self.said = ""

    def emit(self, record) -> None:
        message = record.getMessage()
        if message.startswith(self._SAID):
            self.said = message.removeprefix("Connection dropped: ").removeprefix("socket connection error: ")


class ZkSession:
    """One kazoo client and its session, answering on `reactor`."""

    log = _logger

    def __init__(self, client, reactor, *, servers: str = ""):
        """`client`: a KazooClient (kazoo_client), started here by `start` or already
        started by the caller (tests)."""
        self.client = client
        self.servers = servers or ",".join(f"{h}:{p}" for h, p in getattr(client, "hosts", []))
        self._reactor = reactor
        self.state = CONNECTED if client.connected else LOST
        self.sessions = 0  # sessions established (a LOST then CONNECTED makes a new one)
        self.state_changes = {CONNECTED: 0, SUSPENDED: 0, LOST: 0}
        self._listeners = []
        self._stopped = False
        self._expiry = None  # the timer that takes a SUSPENDED session for LOST
        self.presumed_lost = 0  # sessions taken for LOST after a timeout SUSPENDED
        client.add_listener(self._from_kazoo)

    # -- states ---------------------------------------------------------------------------

    def add_listener(self, listener) -> None:
        """`listener(state)` on the reactor thread at every change of state."""
        self._listeners.append(listener)

    def _from_kazoo(self, state) -> None:
        """On a kazoo thread: hand the state over to the reactor."""
        self._reactor.callFromThread(self._changed, str(state))

    def _changed(self, state: str) -> None:
        if state == self.state or self._stopped:
            return
        if state == CONNECTED and self.state == LOST:
            self.sessions += 1
        self.state = state
        self.state_changes[state] = self.state_changes.get(state, 0) + 1
        self._cancel_expiry()
        if state == SUSPENDED:
            self._expiry = self._reactor.callLater(self.timeout_s, self._presume_expired)
        for listener in list(self._listeners):
            try:
                listener(state)
            except Exception:
                self.log.failure("a ZooKeeper state listener failed")

    def _cancel_expiry(self) -> None:
        if self._expiry is not None and self._expiry.active():
            self._expiry.cancel()
        self._expiry = None

    def _presume_expired(self) -> None:
        """SUSPENDED for a whole session timeout: the servers have expired the session."""
        self._expiry = None
        if self.state != SUSPENDED or self._stopped:
            return
        self.presumed_lost += 1
        self.log.warn(
            "no ZooKeeper server reached for {timeout:g} s, the session timeout: the session"
            " has expired on the servers, and is taken for lost",
            timeout=self.timeout_s,
        )
        self._changed(LOST)

    @property
    def timeout_s(self) -> float:
        """The session timeout asked for, in seconds."""
        return self.client._session_timeout / 1000.0

    @property
    def connected(self) -> bool:
        return self.state == CONNECTED

    @property
    def session_id(self):
        """The session's id as ZooKeeper numbers it (hex), None without one."""
        client_id = getattr(self.client, "client_id", None)
        return None if not client_id or not client_id[0] else f"0x{client_id[0]:x}"

    # -- requests -------------------------------------------------------------------------

    def call(self, method: str, *args, **kwargs) -> Deferred:
        """Deferred of kazoo's `<method>_async(*args, **kwargs)`: its value, or its
        exception (kazoo's: NoNodeError, BadVersionError, ConnectionLoss, ...)."""
        try:
            pending = getattr(self.client, f"{method}_async")(*args, **kwargs)
        except Exception:
            return fail()
        return self._answer(pending)

    def commit(self, transaction) -> Deferred:
        """Deferred[list]: a transaction's results, one per operation: a value, or the
        exception that operation met (the others then hold RolledBackError)."""
        try:
            pending = transaction.commit_async()
        except Exception:
            return fail()
        return self._answer(pending)

    def transaction(self):
        return self.client.transaction()

    def call_soon(self, f, *args) -> None:
        """From a kazoo thread (a watch): `f(*args)` on the reactor thread."""
        self._reactor.callFromThread(f, *args)

    def _answer(self, pending) -> Deferred:
        answered = Deferred()
        reactor = self._reactor

        def done(result):  # on kazoo's completion thread
            if result.successful():
                reactor.callFromThread(answered.callback, result.value)
            else:
                reactor.callFromThread(answered.errback, Failure(result.exception))

        pending.rawlink(done)
        return answered

    # -- lifecycle ------------------------------------------------------------------------

    def start(self, timeout_s: float) -> Deferred:
        """Connect; Deferred firing once CONNECTED, or failing with ZooKeeperUnreachable
        after `timeout_s` (the client is stopped then)."""
        reactor = self._reactor
        connected = Deferred()

        def listen(state):
            if state == CONNECTED and not connected.called:
                timer.cancel()
                connected.callback(self)

        failures = _LastFailure()
        kazoo_log = getattr(self.client, "logger", None)

        def give_up():
            self._listeners.remove(listen)
            last = f"; the last attempt: {failures.said}" if failures.said else ""
            stopped = self.stop()
            stopped.addBoth(
                lambda _: connected.errback(
                    ZooKeeperUnreachable(
                        f"cannot reach ZooKeeper at {self.servers} (no server answered within "
                        f"{timeout_s:g} s, [zookeeper] connect_timeout_s{last})"
                    )
                )
            )

        def forget(result):
            if kazoo_log is not None:
                kazoo_log.removeHandler(failures)
            return result

        if kazoo_log is not None:
            kazoo_log.addHandler(failures)
        connected.addBoth(forget)
        self.add_listener(listen)
        timer = reactor.callLater(timeout_s, give_up)

        def started(_):
            if self.client.connected:
                self._changed(CONNECTED)

        begun = in_thread(reactor, self.client.start_async)
        begun.addCallback(started)
        begun.addErrback(lambda f: None if connected.called else (timer.cancel(), connected.errback(f)))
        return connected

    def stop(self) -> Deferred:
        """Close the session (its ephemeral znodes go at once) and the client's threads."""
        if self._stopped:
            return in_thread(self._reactor, lambda: None)
        self._stopped = True
        self._cancel_expiry()

        def close():
            try:
                self.client.stop()
            finally:
                self.client.close()

        return in_thread(self._reactor, close)
