"""What the three clients' constructors set up alike, once.

Every client takes the same connection settings (how long a reply may take, how many
redirects to follow, the subscription window, ...) and keeps them under the same public
names; the Twisted and asyncio clients also batch publishes and track the connections
being made the same way. Each constructor keeps its own signature (the documented face
of that client) and what only it needs (TLS, a reactor or an event loop, threads), and
hands the rest here.
"""

from collections import deque

from hedwig import __version__
from hedwig.protocol.redirects import Routes


class ClientSettings:
    """Mixed into each client: its settings, as the constructor was given them."""

    def _take_settings(self, timeout, connect_timeout, max_redirects, window, ack_every, client_name) -> None:
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_redirects = max_redirects
        self.window = window
        self.ack_every = ack_every
        # What the hub shows of this client (its log, its status page's connections)
        # when the application named none: "hedwig-python/VERSION (blocking)".
        kind = type(self).__module__.rsplit(".", 1)[-1]
        self.client_name = client_name or f"hedwig-python/{__version__} ({kind})"


class BatchingClientSettings(ClientSettings):
    """Mixed into the Twisted and asyncio clients, which batch every publish of a topic
    made in one turn of their event loop and keep one protocol per hub."""

    def _start_batching(self, max_in_flight, max_batch_bytes, ack_delay) -> None:
        """The publish limits and the empty state of a client not yet connected (needs
        `_addresses`: the first hub is the one asked first)."""
        self.max_in_flight = max_in_flight
        self.max_batch_bytes = max_batch_bytes
        self.ack_delay = ack_delay
        self._routes = Routes(self._addresses[0], tls=self.tls is not None)
        self._protocols = {}  # address -> the protocol connected to it (HELLO answered)
        self._connecting = {}  # address -> what waits for the connection being made
        self._subscriptions = set()
        self._batches = {}  # topic -> PublishBatch not yet sent
        self._waiting = deque()  # (topic, PublishBatch) ready to send when in-flight allows
        self.in_flight = 0  # messages sent, not answered
        self._idle_waiters = []  # what waits for no publish to be queued or in flight
        self._closed = False
