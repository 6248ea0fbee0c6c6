"""A hub connection's partial requests: what it may hold of a frame still arriving, for how
long, and how long it may take to say HELLO (HubConnection's part for memory a client
could otherwise pin).

- After each read the connection reserves the size of its frame in progress from the
  hub's RequestIntake (hub-wide `[hub] max_partial_request_bytes`); refused, it stops
  reading until the intake grants it, so the bytes wait in the kernel, not in the hub.
- A frame that stops arriving (no byte for `[hub] frame_timeout_s` while the hub reads
  from the connection; time the hub itself holds the connection back does not count) ends
  the connection, and so does a connection that has not said HELLO within
  `[hub] hello_timeout_s` of connecting.
- A connection that closes, or is closed, gives its buffer and reservation back at once
  (not when the garbage collector gets to the connection's reference cycles).
- Lines about a client's mistakes go through the hub's PeerLog: once per peer per
  interval, with a count of the rest.

The common case costs a clock read and an integer comparison per read: nothing is asked
of the intake while a connection holds no partial frame.
"""


class PartialRequests:
    """Part of HubConnection (connection.py): the intake budget and the request timeouts."""

    _frame_reserved = 0  # bytes of the intake budget this connection holds
    _awaiting_intake = False  # stopped reading until the intake grants its frame
    _frame_timer = None  # checks that the frame in progress still arrives
    _hello_timer = None
    _last_read = 0.0  # when bytes of a frame in progress last arrived (or reading resumed)

    # -- HELLO ------------------------------------------------------------------------------

    def _start_hello_timer(self) -> None:
        timeout = self.hub.config.hub.hello_timeout_s
        self._hello_timer = self.hub.clock.callLater(timeout, self._hello_overdue, timeout)

    def _hello_done(self) -> None:
        if self._hello_timer is not None and self._hello_timer.active():
            self._hello_timer.cancel()
        self._hello_timer = None

    def _hello_overdue(self, timeout: float) -> None:
        self._hello_timer = None
        if self._greeted or not self._connected:
            return
        self.hub.stats.hello_timeouts += 1
        self._client_error(
            "{peer}: no HELLO within {timeout:g}s of connecting ({count} bytes received);"
            " closing the connection",
            timeout=timeout,
            count=self._decoder.buffered,
        )
        self._abandon()

    # -- the intake budget ------------------------------------------------------------------

    def _reserve_frame(self) -> None:
        """Hold the intake budget for the frame in progress (after each read)."""
        size = self._decoder.frame_in_progress
        if size and self._frame_timer is None:
            self._arm_frame_timer(self.hub.config.hub.frame_timeout_s)
        if size == self._frame_reserved:
            return
        if self.hub.intake.hold(self, size):
            self._frame_reserved = size
            if self._awaiting_intake:
                self._awaiting_intake = False
                self._update_reading()
        elif not self._awaiting_intake:
            self._awaiting_intake = True
            self._update_reading()

    def intake_granted(self) -> None:
        """The intake granted the frame this connection waited for: read on."""
        self._frame_reserved = self.hub.intake.held_by(self)
        self._awaiting_intake = False
        self._update_reading()

    def _release_frame(self) -> None:
        """Drop the frame in progress: its bytes and its share of the intake budget."""
        self._decoder.clear()
        self.hub.intake.release(self)
        self._frame_reserved = 0
        self._awaiting_intake = False

    # -- the frame timeout ------------------------------------------------------------------

    def _arm_frame_timer(self, delay: float) -> None:
        self._frame_timer = self.hub.clock.callLater(delay, self._check_frame)

    def _check_frame(self) -> None:
        """Has the frame in progress stalled? Checked frame_timeout_s after the last byte;
        a connection with no frame in progress keeps no timer."""
        self._frame_timer = None
        if not self._connected or not self._reading or not self._decoder.buffered:
            return
        timeout = self.hub.config.hub.frame_timeout_s
        if self._awaiting_intake or self._too_busy:  # the hub holds it back: not its fault
            self._arm_frame_timer(timeout)
            return
        idle = self.hub.clock.seconds() - self._last_read
        if idle < timeout:
            self._arm_frame_timer(timeout - idle)
            return
        self.hub.stats.frame_timeouts += 1
        self._client_error(
            "{peer}: a frame stopped arriving: {count} of its {size} bytes received, none for"
            " {idle:.1f}s; closing the connection",
            count=self._decoder.buffered,
            size=self._decoder.frame_in_progress,
            idle=idle,
        )
        self._abandon()

    def _reading_resumed(self) -> None:
        """The hub reads from the connection again: a stall counts from now."""
        self._last_read = self.hub.clock.seconds()

    # -- ending -----------------------------------------------------------------------------

    def _abandon(self) -> None:
        """Close a connection that broke a time limit: nothing more is read or answered,
        and what it held is released now, whether or not its socket goes at once."""
        self._reading = False
        self._release_frame()
        self.transport.abortConnection()

    def _stop_partial_requests(self) -> None:
        """The connection is gone: timers off, buffer and reservation released."""
        self._hello_done()
        if self._frame_timer is not None and self._frame_timer.active():
            self._frame_timer.cancel()
        self._frame_timer = None
        self._release_frame()

    def _client_error(self, format: str, **fields) -> None:
        """A line about this client's mistake: once per peer per interval (hub/peerlog.py)."""
        self.hub.client_errors.warn(self.log, self.peer_host, format, peer=self.peer, **fields)
