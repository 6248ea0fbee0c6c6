"""What the Twisted and asyncio client connections (protocol.py, aio_protocol.py) share:
both drive one HubSession (hedwig/protocol/session.py) and differ only in how a request
waits for its reply (a Deferred, a Future) and in how they write and keep time.

So the session's state on a new connection and the requests that only hand their
arguments to the session (`call`, `publish`, `subscribe`, `consume`, `release`) are
written once here, around each driver's own `_send_request`.
"""

from hedwig.protocol import Op
from hedwig.protocol.session import HubSession


class SessionDriver:
    """The base of the Twisted and asyncio clients' protocol classes, which give
    `_send_request(build, arguments)` (the Deferred or Future of the reply) and
    `transport`; it owns the connection's HubSession as `_session`."""

    def _start_session(self, address, client_name: str, timeout: float, credentials) -> None:
        """The state of a connection not yet made (or answered)."""
        self.address = address  # (host, port) as the client named it
        self._credentials = credentials  # AUTH after HELLO (hedwig.protocol.auth_request.Credentials)
        self._client_name = client_name
        self._timeout = timeout
        # Request ids, replies matched to their [waiter, timeout call], subscriptions
        self._session = HubSession(self)
        self.hello = None
        self.lost = None  # the ConnectionLost once the connection is gone
        self.on_lost = None  # called with the protocol when the connection ends

    def call(self, op: Op, body: bytes):
        """Send a request; a Deferred or Future of its Response."""
        return self._send_request(self._session.request, (op, body))

    def publish(self, topic: str, message_set: bytes):
        return self._send_request(self._session.publish, (topic, message_set))

    def subscribe(self, subscription):
        """SUBSCRIBE as the subscription's position asks; a SUCCESS attaches it (the
        session calls its on_attached) before the reply's waiter is told."""
        return self._send_request(self._session.subscribe, (subscription._position, subscription))

    def consume(self, handle: int, seq: int) -> None:
        """Move the consumed seq-id of the subscription `handle` (no reply on success)."""
        if self.lost is None:
            self.transport.write(self._session.consume(handle, seq))

    def ack(self, handle: int, ranges) -> None:
        """Acknowledge seq-id ranges of the shared or pull subscription `handle`."""
        if self.lost is None:
            self.transport.write(self._session.ack(handle, ranges))

    def nack(self, handle: int, ranges) -> None:
        """Ask for seq-id ranges of the subscription `handle` to be delivered again now."""
        if self.lost is None:
            self.transport.write(self._session.nack(handle, ranges))

    def release(self, handle: int) -> None:
        """The subscription `handle` is closed here: its frames go to nobody."""
        self._session.release(handle)
