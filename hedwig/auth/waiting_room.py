"""The connections of a hub with [auth] on that have not authenticated yet.

A connection costs a descriptor and some memory before it proves anything, and the
failure delay and the login throttle only slow connections that try a password. A crowd
that connects, says HELLO (or nothing) and waits would hold every descriptor the hub has
and keep real users out. So, hub-wide:

- a connection is in the room from the moment it is accepted until it acts as a user
  (AUTH taken, a mapped client certificate, anonymous access); its session closes it
  when no AUTH came within [auth] auth_timeout_s of HELLO (hedwig.protocol.hub_side);
- at most [auth] max_unauthenticated are in the room: one more pushes one out (told
  AUTHENTICATION_FAILED with request id 0, then closed), chosen by its source (the
  peer's host) before its age: a source from which no user logged in before goes before
  one from which some did (hedwig/auth/throttle.py's known-good sources), and among
  those the source holding the most waiting connections, its oldest connection whose
  AUTH is not being checked (ties: the oldest such connection of all). So a crowd from
  one host pushes out its own connections, not a user's from another host, whatever
  their ages; a check already paid for finishes.

The room holds the connections in arrival order per source (dicts used as ordered
sets), so each arrival, proof and departure costs O(1); pushing out looks at each
source with a connection in the room once (at most max_unauthenticated + 1 of them).
"""

from twisted.logger import Logger

from hedwig.protocol.status import Status


class WaitingRoom:
    """The unauthenticated connections by source, at most `capacity` of them."""

    log = Logger()

    def __init__(self, capacity: int, known_good=None):
        self.capacity = capacity
        # source -> whether a user logged in from it before (LoginThrottle.is_known_good)
        self._known_good = known_good or (lambda source: False)
        self._waiting = {}  # connection -> (its source, its arrival number)
        self._arrivals = 0
        self._by_source = {}  # source -> {connection: None}, in arrival order
        self.pushed_out = 0  # connections closed to make room
        self.timed_out = 0  # connections closed for no AUTH within the deadline
        self._logged_at = 1  # the next count of pushed_out to log at (1, 2, 4, ...)

    def __len__(self) -> int:
        return len(self._waiting)

    def arrived(self, connection) -> None:
        """A connection was accepted; past the capacity one waiting connection goes."""
        source = connection.peer_host
        self._arrivals += 1
        self._waiting[connection] = (source, self._arrivals)
        self._by_source.setdefault(source, {})[connection] = None
        if len(self._waiting) > self.capacity:
            self._push_out()

    def proven(self, connection) -> None:
        """The connection acts as a user now."""
        self._leave(connection)

    def gone(self, connection) -> None:
        self._leave(connection)

    def _leave(self, connection) -> None:
        held = self._waiting.pop(connection, None)
        if held is None:
            return
        source = held[0]
        of_source = self._by_source[source]
        del of_source[connection]
        if not of_source:
            del self._by_source[source]

    def overdue(self, connection, timeout: float) -> None:
        """The connection sent no AUTH within `timeout` seconds of HELLO: it goes."""
        self.timed_out += 1
        self._leave(connection)
        connection.session.refuse_and_close(
            0, 0, Status.AUTHENTICATION_FAILED, f"no AUTH within {timeout:g} s of HELLO"
        )

    def _victim(self):
        """The connection to push out (None: every one is being checked): see the module
        docstring. Sources rank by (known good, fewer waiting, later arrival of the
        oldest connection that may go)."""
        best = best_rank = None
        for source, connections in self._by_source.items():
            oldest = next((c for c in connections if not c.checking), None)
            if oldest is None:
                continue
            rank = (self._known_good(source), -len(connections), self._waiting[oldest][1])
            if best_rank is None or rank < best_rank:
                best, best_rank = oldest, rank
        return best

    def _push_out(self) -> None:
        connection = self._victim()
        if connection is None:  # every one is being checked (at most the checks' queue): let them finish
            return
        self._leave(connection)
        self.pushed_out += 1
        if self.pushed_out >= self._logged_at:
            self._logged_at *= 2
            self.log.warn(
                "{count} unauthenticated connections in all closed to make room for others"
                " (at most {capacity} wait to authenticate: [auth] max_unauthenticated);"
                " the latest from {peer}",
                count=self.pushed_out,
                capacity=self.capacity,
                peer=connection.peer,
            )
        why = "the hub has too many connections waiting to authenticate; its source holds the most"
        connection.session.refuse_and_close(0, 0, Status.AUTHENTICATION_FAILED, why)

    def describe(self) -> dict:
        return {
            "unauthenticated": len(self._waiting),
            "auth_timeouts": self.timed_out,
            "pushed_out": self.pushed_out,
        }
