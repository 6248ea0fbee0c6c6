"""A hub connection's partial requests: what it may hold of a frame still arriving, and for
how long (memory a client could otherwise pin).

- After each read the connection reserves the size of its frame in progress from the
  hub's RequestIntake (hub-wide `[hub] max_partial_request_bytes`); refused, it stops
  reading until the intake grants it, so the bytes wait in the kernel, not in the hub.
- A frame that stops arriving (no byte for `[hub] frame_timeout_s` while the hub reads
  from the connection; time the hub itself holds the connection back does not count)
  ends the connection. (How long a connection may take to say HELLO is its session's
  handshake deadline: hedwig/protocol/hub_side.py.)
- A connection that closes, or is closed, gives its buffer and reservation back at once
  (not when the garbage collector gets to the connection's reference cycles).

The common case costs a clock read and an integer comparison per read: nothing is asked
of the intake while a connection holds no partial frame.
"""

from hedwig.protocol.hub_side import CLOSED


class IntakeGuard:
    """One connection's share of the intake budget, and its frame timeout. It is the
    intake's holder: RequestIntake calls its `intake_granted()`."""

    __slots__ = (
        "_clock",
        "_connection",
        "_decoder",
        "_intake",
        "_session",
        "_timeout_s",
        "_timer",
        "awaiting",
        "last_read",
        "reserved",
    )

    def __init__(self, connection, session, intake, clock, frame_timeout_s: float):
        """`connection`: the HubConnection (told to read again or to end); `session`: its
        HubSideSession (the frame decoder, whether it reads)."""
        self._connection = connection
        self._session = session
        self._decoder = session.decoder
        self._intake = intake
        self._clock = clock
        self._timeout_s = frame_timeout_s
        self._timer = None  # checks that the frame in progress still arrives
        self.reserved = 0  # bytes of the intake budget this connection holds
        self.awaiting = False  # stopped reading until the intake grants its frame
        self.last_read = 0.0  # when bytes of a frame in progress last arrived (or reading resumed)

    def after_read(self) -> None:
        """Bytes arrived and a frame is in progress (or was): hold the intake budget for
        it, and time it."""
        self.last_read = self._clock.seconds()  # (a frame's stall counts from here)
        size = self._decoder.frame_in_progress
        if size and self._timer is None:
            self._arm(self._timeout_s)
        if size == self.reserved:
            return
        if self._intake.hold(self, size):
            self.reserved = size
            if self.awaiting:
                self.awaiting = False
                self._connection.update_reading()
        elif not self.awaiting:
            self.awaiting = True
            self._connection.update_reading()

    def intake_granted(self) -> None:
        """The intake granted the frame this connection waited for: read on."""
        self.reserved = self._intake.held_by(self)
        self.awaiting = False
        self._connection.update_reading()

    def reading_resumed(self) -> None:
        """The hub reads from the connection again: a stall counts from now."""
        self.last_read = self._clock.seconds()

    def release(self) -> None:
        """Drop the frame in progress: its bytes and its share of the intake budget."""
        self._decoder.clear()
        self._intake.release(self)
        self.reserved = 0
        self.awaiting = False

    def stop(self) -> None:
        """The connection is gone: the timer off, buffer and reservation released."""
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        self.release()

    def _arm(self, delay: float) -> None:
        self._timer = self._clock.callLater(delay, self._check)

    def _check(self) -> None:
        """Has the frame in progress stalled? Checked frame_timeout_s after the last byte;
        a connection with no frame in progress keeps no timer."""
        self._timer = None
        connection, session = self._connection, self._session
        if not connection.is_open or session.stage is CLOSED or not self._decoder.buffered:
            return
        if self.awaiting or session.too_busy:  # the hub holds it back: not its fault
            self._arm(self._timeout_s)
            return
        idle = self._clock.seconds() - self.last_read
        if idle < self._timeout_s:
            self._arm(self._timeout_s - idle)
            return
        connection.hub.stats.frame_timeouts += 1
        connection.client_error(
            "{peer}: a frame stopped arriving: {count} of its {size} bytes received, none for"
            " {idle:.1f}s; closing the connection",
            count=self._decoder.buffered,
            size=self._decoder.frame_in_progress,
            idle=idle,
        )
        connection.abandon()
