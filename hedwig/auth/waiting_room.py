"""The connections of a hub with [auth] on that have not authenticated yet.

A connection costs a descriptor and some memory before it proves anything, and the
failure delay and the login throttle only slow connections that try a password. A crowd
that connects, says HELLO (or nothing) and waits would hold every descriptor the hub has
and keep real users out. So, hub-wide:

- a connection is in the room from the moment it is accepted until it acts as a user
  (AUTH taken, a mapped client certificate, anonymous access); its session closes it
  when no AUTH came within [auth] auth_timeout_s of HELLO (hedwig.protocol.hub_side);
- at most [auth] max_unauthenticated are in the room: one more pushes the oldest out
  (told AUTHENTICATION_FAILED with request id 0, then closed), the oldest whose AUTH is
  not being checked: a real user's login, made in milliseconds, is never the oldest
  for long, while the crowd's connections are, and a check that is already paid for
  finishes.

The room holds the connections in arrival order (a dict used as an ordered set), so
each arrival, proof and departure costs O(1), and pushing out finds its victim among
the oldest few.
"""

from twisted.logger import Logger

from hedwig.protocol.status import Status


class WaitingRoom:
    """The unauthenticated connections, oldest first, at most `capacity` of them."""

    log = Logger()

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._waiting = {}  # connection -> None, in arrival order
        self.pushed_out = 0  # connections closed to make room
        self.timed_out = 0  # connections closed for no AUTH within the deadline
        self._logged_at = 1  # the next count of pushed_out to log at (1, 2, 4, ...)

    def __len__(self) -> int:
        return len(self._waiting)

    def arrived(self, connection) -> None:
        """A connection was accepted; past the capacity the oldest waiting one goes."""
        self._waiting[connection] = None
        if len(self._waiting) > self.capacity:
            self._push_out_oldest()

    def proven(self, connection) -> None:
        """The connection acts as a user now."""
        self._waiting.pop(connection, None)

    def gone(self, connection) -> None:
        self._waiting.pop(connection, None)

    def overdue(self, connection, timeout: float) -> None:
        """The connection sent no AUTH within `timeout` seconds of HELLO: it goes."""
        self.timed_out += 1
        self._waiting.pop(connection, None)
        connection.session.refuse_and_close(
            0, 0, Status.AUTHENTICATION_FAILED, f"no AUTH within {timeout:g} s of HELLO"
        )

    def _push_out_oldest(self) -> None:
        for connection in self._waiting:
            if not connection.checking:
                break
        else:  # every one is being checked (at most the checks' queue): let them finish
            return
        del self._waiting[connection]
        self.pushed_out += 1
        if self.pushed_out >= self._logged_at:
            self._logged_at *= 2
            self.log.warn(
                "{count} unauthenticated connections in all closed to make room for newer"
                " ones (at most {capacity} wait to authenticate: [auth] max_unauthenticated);"
                " the latest from {peer}",
                count=self.pushed_out,
                capacity=self.capacity,
                peer=connection.peer,
            )
        why = "the hub has too many connections waiting to authenticate; this one waited longest"
        connection.session.refuse_and_close(0, 0, Status.AUTHENTICATION_FAILED, why)

    def describe(self) -> dict:
        return {
            "unauthenticated": len(self._waiting),
            "auth_timeouts": self.timed_out,
            "pushed_out": self.pushed_out,
        }
