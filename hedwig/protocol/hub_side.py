"""The hub's side of one connection, without I/O: bytes in, requests to their handlers,
replies out in request order.

HubSession (session.py) is a client's side of a connection; HubSideSession is the hub's.
Like it, it owns no socket and no reactor: a driver (the hub's HubConnection,
hedwig/hub/connection.py) hands it what its transport read (`data_received`) and
writes what it is given to write (IHubSideDriver). Its clock is an argument (IReactorTime:
a task.Clock in tests), used for the handshake's deadline only. It holds what the
protocol itself promises:

- one frame parser (FrameDecoder, framing.py), and the rule that turns a stream that is
  not frames into a status: FRAME_TOO_LARGE or MALFORMED_REQUEST, answered with request
  id 0 and op 0 after the replies already owed, then the connection closes;
- the handshake, a small state machine (Stage): HELLO first (MALFORMED_REQUEST for any
  other request, UNSUPPORTED_VERSION for another version: both close) within
  `hello_timeout_s` of connecting; then, on a hub with [auth] on (a `gate`, an
  IHubSideGate), AUTH unless the gate knows who the connection is (a client
  certificate, anonymous access), the AUTH being checked while nothing else is taken,
  and a permission check of every request (the gate's, by the op's spec). Rules about
  AUTH (what may be pipelined behind it, how long it may take, how many connections
  may wait for it) belong to these stages;
- requests past the handshake go to their op's handler (`handlers`: op ->
  handle(driver, request_id, body, started)); an op nobody serves is answered
  UNKNOWN_OPERATION and the connection goes on;
- replies in request order (`replies`, replies.py), and reading stops while more than
  `max_requests` requests, or `max_bytes` of their bodies, wait for their replies, until
  half of them are answered;
- the connection's subscription handles (`handles`, handles.py).

A request's failure is the driver's to turn into a status (the hub knows its own
exceptions); a refusal of the protocol's (handshake, unknown op, framing) is answered
here, and the driver told, to log it.
"""

from enum import Enum

from zope.interface import Interface

from hedwig.protocol.framing import FrameDecoder, FrameError, FrameTooLarge
from hedwig.protocol.handles import HandleTable
from hedwig.protocol.layouts import RequestRefused
from hedwig.protocol.ops import PROTOCOL_VERSION, Op
from hedwig.protocol.replies import ReplyQueue
from hedwig.protocol.requests import decode_hello
from hedwig.protocol.responses import response_frame
from hedwig.protocol.status import Status


class Stage(Enum):
    """Where a connection is in its handshake."""

    HELLO = "hello"  # nothing taken yet: HELLO must come first
    AUTH = "auth"  # greeted on a hub with [auth] on, acting as nobody yet: AUTH must come
    CHECKING = "checking"  # an AUTH is being checked: nothing else is taken meanwhile
    GATED = "gated"  # acting as a user: each request is checked by the gate, then handled
    OPEN = "open"  # greeted on a hub with [auth] off: each request is handled
    CLOSED = "closed"  # reading nothing more (a protocol error, a shutdown, the connection gone)


HELLO, AUTH, CHECKING, GATED, OPEN, CLOSED = Stage  # (module names: one load on the hot path)
_AUTH = int(Op.AUTH)


class IHubSideDriver(Interface):
    """What a HubSideSession asks of its connection (the hub's HubConnection); also the
    `driver` every request's handler is given."""

    def write(data):
        """Send `data` (bytes), after everything written before."""

    def write_sequence(chunks):
        """Send `chunks` (a sequence of bytes), after everything written before."""

    def close_when_sent():
        """Close once what was written is sent."""

    def greeted(client_name):
        """The handshake's HELLO was taken (answered already)."""

    def refused(request_id, op, status, message, closing):
        """The session refused a request with `status` (a protocol error when `closing`:
        the connection closes once the reply is sent): for the log."""

    def request_failed(error, request_id, op, started):
        """A handler (or the gate) raised `error` for a request: answer it with its status."""

    def reading_changed():
        """The session's wish to read changed (`reading`): pause or resume the transport."""

    def replies_idle():
        """No request waits for its reply any more (after some did, or the connection is gone)."""

    def hello_overdue(timeout):
        """No HELLO came within `timeout` seconds of connecting: end the connection."""

    def admitted():
        """With [auth] on: the connection acts as a user now (AUTH taken, or the gate
        knew it at HELLO)."""

    def auth_overdue(timeout):
        """With [auth] on: no AUTH came within `timeout` seconds of HELLO (none is being
        checked): end the connection."""


class IHubSideGate(Interface):
    """A connection's authentication and permissions on a hub with [auth] on
    (hedwig.auth.gate.ConnectionAccess)."""

    def identify():
        """After HELLO: whether the connection acts as a user without AUTH (a mapped
        client certificate, or anonymous access)."""

    def authenticate(request_id, body):
        """Check an AUTH (raising RequestRefused for one refused at once); the outcome
        comes back later as session.authenticated(...) or session.refuse_and_close(...)."""

    def check(op, body):
        """Raise RequestRefused(NOT_AUTHORIZED) unless the connection's user holds what
        the request needs."""


class HubSideSession:
    __slots__ = (
        "_clock",
        "_driver",
        "_check",
        "_gate",
        "_handlers",
        "_auth_timeout_s",
        "_hello_reply",
        "_hello_timeout_s",
        "_handshake_timer",
        "_seconds",
        "decoder",
        "handles",
        "last_request",
        "max_bytes",
        "max_requests",
        "replies",
        "stage",
        "too_busy",
    )

    def __init__(
        self,
        driver,
        handlers: dict,
        *,
        clock,
        hello_reply: bytes,
        hello_timeout_s: float,
        max_frame_bytes: int,
        max_requests: int,
        max_bytes: int,
        gate=None,
        auth_timeout_s: float = 10.0,
    ):
        """`handlers`: op -> handle(driver, request_id, body, started); `hello_reply`:
        the HELLO reply's payload; `gate`: an IHubSideGate on a hub with [auth] on, and
        `auth_timeout_s` how long after HELLO its AUTH may take to come."""
        self._driver = driver
        self._handlers = handlers
        self._clock = clock
        self._seconds = clock.seconds
        self._hello_reply = hello_reply
        self._hello_timeout_s = hello_timeout_s
        self._auth_timeout_s = auth_timeout_s
        self._handshake_timer = None  # HELLO's deadline, then AUTH's
        self.max_requests = max_requests  # requests waiting for their reply before reading stops
        self.max_bytes = max_bytes  # bytes of their bodies (publishes') likewise
        self._gate = gate
        self._check = None if gate is None else gate.check
        # Called before the last request of a read is handled (the driver's: hub/sending.py).
        self.last_request = _nothing
        self.decoder = FrameDecoder(max_frame_bytes)
        self.replies = ReplyQueue(
            driver.write, driver.write_sequence, self._replies_released, driver.replies_idle
        )
        self.handles = HandleTable()
        self.stage = HELLO
        self.too_busy = False  # reading stopped until half the requests waiting are answered

    @property
    def reading(self) -> bool:
        """Whether the session takes more bytes now."""
        return self.stage is not CLOSED and not self.too_busy

    # -- the connection ---------------------------------------------------------------------

    def start(self) -> None:
        """The connection is made: HELLO is due within hello_timeout_s."""
        self._handshake_timer = self._clock.callLater(self._hello_timeout_s, self._hello_overdue)

    def connection_lost(self) -> None:
        """The connection is gone: nothing more is read or answered, the frame in
        progress is dropped, the handles are free."""
        self.stage = CLOSED
        self._cancel_handshake_timer()
        self.replies.discard()
        self.handles.clear()
        self.decoder.clear()

    def stop_reading(self) -> None:
        """Read nothing more (a shutdown, a broken limit); replies owed still go out."""
        if self.stage is not CLOSED:
            self.stage = CLOSED
            self._driver.reading_changed()

    # -- bytes in ---------------------------------------------------------------------------

    def data_received(self, data) -> None:
        """Take what the transport read: every whole request is handled (or refused) in
        order; a stream that is not frames is refused after the requests before it."""
        framing_error = None
        try:
            frames = self.decoder.feed(data)
        except FrameError as e:
            frames, framing_error = e.frames, e
        if frames:
            driver = self._driver
            handlers = self._handlers
            last = frames[-1]
            for frame in frames:
                stage = self.stage
                if stage is CLOSED:
                    return
                op, request_id, body = frame
                if frame is last:  # (a publish's deliveries to others may leave at once)
                    self.last_request()
                if stage is not OPEN:
                    if stage is GATED and op != _AUTH:  # (a user's request: its permission first)
                        try:
                            self._check(op, body)
                        except Exception as e:
                            driver.request_failed(e, request_id, op, self._seconds())
                            continue
                    elif not self._admit(stage, op, request_id, body):
                        continue
                handler = handlers.get(op)
                if handler is None:
                    self._refuse(request_id, op, Status.UNKNOWN_OPERATION, f"unknown operation {op}")
                    continue
                started = self._seconds()
                try:
                    handler(driver, request_id, body, started)
                except Exception as e:  # every failure becomes a status
                    driver.request_failed(e, request_id, op, started)
            replies = self.replies
            if len(replies.waiting) >= self.max_requests or replies.weight >= self.max_bytes:
                self.too_busy = True
                driver.reading_changed()
        if framing_error is not None and self.stage is not CLOSED:
            status = (
                Status.FRAME_TOO_LARGE
                if isinstance(framing_error, FrameTooLarge)
                else Status.MALFORMED_REQUEST
            )
            self.refuse_and_close(0, 0, status, str(framing_error))

    # -- the handshake ----------------------------------------------------------------------

    def _admit(self, stage, op: int, request_id: int, body) -> bool:
        """Whether a request at this stage goes on to its handler; if not, it was taken
        (HELLO, AUTH) or refused here."""
        if stage is GATED:  # (AUTH: other requests are checked in data_received)
            self._authenticate(request_id, body)
            return False
        if stage is HELLO:
            self._hello(op, request_id, body)
        elif stage is AUTH and op == Op.AUTH:
            self._authenticate(request_id, body)
        else:
            why = "an AUTH is being checked" if stage is CHECKING else "this hub requires AUTH after HELLO"
            self.refuse_and_close(request_id, op, Status.AUTHENTICATION_FAILED, why)
        return False

    def _hello(self, op: int, request_id: int, body) -> None:
        if op != Op.HELLO:
            self.refuse_and_close(request_id, op, Status.MALFORMED_REQUEST, "the first request must be HELLO")
            return
        try:
            hello = decode_hello(body)
        except RequestRefused as e:
            self.refuse_and_close(request_id, op, e.status, e.reason)
            return
        if hello.version != PROTOCOL_VERSION:
            self.refuse_and_close(
                request_id,
                op,
                Status.UNSUPPORTED_VERSION,
                f"this hub speaks protocol version {PROTOCOL_VERSION}, not {hello.version}",
            )
            return
        self._cancel_handshake_timer()
        gate = self._gate
        self.stage = stage = OPEN if gate is None else GATED if gate.identify() else AUTH
        self._driver.greeted(hello.client_name)
        self.replies.send(response_frame(request_id, Op.HELLO, payload=self._hello_reply))
        if stage is GATED:
            self._driver.admitted()
        elif stage is AUTH:
            self._handshake_timer = self._clock.callLater(self._auth_timeout_s, self._auth_overdue)

    def _authenticate(self, request_id: int, body) -> None:
        before, self.stage = self.stage, CHECKING
        try:
            self._gate.authenticate(request_id, body)
        except Exception as e:  # (refused at once: the connection goes on as it was)
            if self.stage is CHECKING:
                self.stage = before
            self._driver.request_failed(e, request_id, Op.AUTH, self._seconds())

    def authenticated(self, request_id: int, payload: bytes) -> None:
        """The gate took the AUTH `request_id`: answer it; requests are taken again."""
        self._cancel_handshake_timer()
        if self.stage is not CLOSED:
            self.stage = GATED
        self.replies.send(response_frame(request_id, Op.AUTH, payload=payload))
        self._driver.admitted()

    def _hello_overdue(self) -> None:
        self._handshake_timer = None
        if self.stage is HELLO:
            self._driver.hello_overdue(self._hello_timeout_s)

    def _auth_overdue(self) -> None:
        """AUTH's deadline: a connection still acting as nobody goes; one whose AUTH is
        being checked waits for the check (the hub's queue of checks is bounded)."""
        self._handshake_timer = None
        if self.stage is AUTH:
            self._driver.auth_overdue(self._auth_timeout_s)

    def _cancel_handshake_timer(self) -> None:
        timer, self._handshake_timer = self._handshake_timer, None
        if timer is not None and timer.active():
            timer.cancel()

    # -- refusals ---------------------------------------------------------------------------

    def _refuse(self, request_id: int, op: int, status: Status, message: str) -> None:
        """Answer `status`; the connection goes on."""
        self._driver.refused(request_id, op, status, message, False)
        self.replies.send(response_frame(request_id, op, status, message))

    def refuse_and_close(self, request_id: int, op: int, status: Status, message: str) -> None:
        """A protocol error: read nothing more, answer `status` after the replies owed,
        then close."""
        driver = self._driver
        driver.refused(request_id, op, status, message, True)
        self.stop_reading()
        self.replies.send(response_frame(request_id, op, status, message), driver.close_when_sent)

    # -- replies ----------------------------------------------------------------------------

    def _replies_released(self) -> None:
        """Replies went out: a session that stopped reading for having too many requests
        in flight reads again once half of them are answered."""
        if (
            self.too_busy
            and len(self.replies) <= self.max_requests // 2
            and self.replies.weight <= self.max_bytes // 2
        ):
            self.too_busy = False
            self._driver.reading_changed()


def _nothing() -> None:
    pass
