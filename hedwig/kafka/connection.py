"""One Kafka client connection: size-prefixed requests in, responses out in request order.

A request's size is checked as its four bytes arrive (over max_request_bytes, or under a
header's: one log line and the connection closed, before the body is buffered); its
header and body are decoded whole (a request that does not decode: one line, closed, as
a Kafka broker does). An API or version the hub does not serve is answered with Kafka's
UNSUPPORTED_VERSION and the connection kept: ApiVersions with the versions it does serve
(in a v0 header, so that the client can negotiate), any other API kio knows with its own
response at that version, every error code UNSUPPORTED_VERSION, and an API no schema
names with the error alone. At most MAX_IN_FLIGHT requests are worked on at once: past
it the connection stops reading until answers leave.
"""

import struct
from collections import deque

from twisted.internet.defer import maybeDeferred
from twisted.internet.protocol import Factory, Protocol
from twisted.logger import Logger

from hedwig.kafka.apis import API_VERSIONS, UNSUPPORTED_VERSION, api_versions_answer
from hedwig.kafka.envelope import (
    API_VERSIONS_KEY,
    KafkaRequestError,
    decode_request,
    encode_error_only,
    encode_response,
    read_header,
    request_codec,
)
from hedwig.protocol.names import printable

_SIZE = struct.Struct("!i")
MAX_IN_FLIGHT = 64
_MIN_REQUEST = 8  # api key, version and correlation id at least
_NO_ANSWER = object()


class KafkaConnection(Protocol):
    log = Logger()

    def __init__(
        self, apis, max_request_bytes: int, client_errors, intake=None, clock=None, frame_timeout_s=None
    ):
        """`intake`: the hub's budget of partial-request bytes (hedwig.hub.intake), which
        a request in progress holds its size of, as a native frame does; a request that
        stops arriving for `frame_timeout_s` ([hub] frame_timeout_s, on `clock`) closes
        the connection."""
        self.clock = clock
        self.frame_timeout_s = frame_timeout_s
        self._frame_timer = None
        self.apis = apis
        self.max_request_bytes = max_request_bytes
        self.client_errors = client_errors
        self.intake = intake
        self._buffer = bytearray()
        self._answers = deque()  # per request in order: [bytes or None (pending) or _NO_ANSWER]
        self._paused = False  # past MAX_IN_FLIGHT
        self._awaiting_intake = False  # the budget cannot hold its request in progress yet
        self.closed = False
        self.peer = None
        self.sasl = None  # with [auth] on: its SASL authentication and permissions (sasl.py)

    def connectionMade(self):
        self.peer = self.transport.getPeer()
        self.sasl = self.apis.sasl_for(self)
        if self.sasl is not None:
            self.sasl.arrived(getattr(self.peer, "host", "?"))

    def connectionLost(self, reason=None):
        self.closed = True
        self._answers.clear()
        self._buffer.clear()
        self._stop_timer()
        if self.intake is not None:
            self.intake.release(self)
        if self.sasl is not None:
            self.sasl.gone()

    def close(self) -> None:
        self.closed = True
        self.transport.loseConnection()

    def intake_granted(self) -> None:
        """The hub's budget holds this connection's request in progress now: read on."""
        self._awaiting_intake = False
        if not self._paused and not self.closed:
            self.transport.resumeProducing()

    def _stop_timer(self) -> None:
        if self._frame_timer is not None and self._frame_timer.active():
            self._frame_timer.cancel()
        self._frame_timer = None

    def _frame_timed_out(self) -> None:
        self._frame_timer = None
        self._refuse(f"a request stopped arriving for {self.frame_timeout_s:g} s")

    def _hold(self, size: int) -> None:
        if self.clock is not None and not self.closed:
            if size:  # (each read that brings more of it starts the wait again)
                self._stop_timer()
                self._frame_timer = self.clock.callLater(self.frame_timeout_s, self._frame_timed_out)
            elif self._frame_timer is not None:
                self._stop_timer()
        if self.intake is not None and not self.intake.hold(self, size):
            self._awaiting_intake = True
            self.transport.pauseProducing()

    # -- reading -----------------------------------------------------------------------------

    def dataReceived(self, data):
        buffer = self._buffer
        buffer += data
        while not self.closed and len(buffer) >= 4:
            (size,) = _SIZE.unpack_from(buffer)
            if size < _MIN_REQUEST or size > self.max_request_bytes:
                self._refuse(
                    f"a request of {size} bytes (expected {_MIN_REQUEST} to {self.max_request_bytes})"
                )
                return
            if len(buffer) < 4 + size:
                self._hold(4 + size)
                return
            frame = bytes(buffer[4 : 4 + size])
            del buffer[: 4 + size]
            self._request(frame)
            if len(self._answers) >= MAX_IN_FLIGHT and not self._paused:
                self._paused = True
                self.transport.pauseProducing()
                break
        if not self.closed and len(buffer) < 4:
            self._hold(0)

    def _request(self, frame: bytes) -> None:
        try:
            header = read_header(frame)
        except KafkaRequestError as e:
            self._refuse(str(e))
            return
        key, version = header.api_key, header.api_version
        served = API_VERSIONS.get(key)
        if served is None or not served[1] <= version <= served[2]:
            self._unsupported(frame, header)
            return
        if self.sasl is not None and not self.sasl.allows(key):
            self._refuse(f"{served[0]} before SASL authentication")
            return
        try:
            request = decode_request(frame, header)
        except KafkaRequestError as e:
            self._refuse(f"{served[0]} v{version}: {e}")
            return
        slot = [None]
        self._answers.append(slot)
        handler = self.apis.handlers[key]
        if self.sasl is not None:
            handler = self.sasl.handler(key, handler)
        d = maybeDeferred(handler, version, request, self.peer)
        d.addCallback(self._encode, key, version, header.correlation_id)
        d.addErrback(self._failed, served[0], key, version, header.correlation_id)
        d.addCallback(self._answered, slot)

    def _encode(self, values, key, version, correlation_id):
        if values is None:
            return _NO_ANSWER
        return encode_response(key, version, correlation_id, values)

    def _failed(self, failure, name, key, version, correlation_id):
        """A handler's own failure (a bug): logged with its traceback, and the connection
        closed, as no answer of that API can say so."""
        self.log.failure(
            "Kafka {api} v{version} from {peer} failed", failure, api=name, version=version, peer=self._who()
        )
        if self.transport is not None:
            self.transport.loseConnection()
        self.closed = True
        return _NO_ANSWER

    def _answered(self, answer, slot):
        slot[0] = answer
        self._flush()

    def _flush(self) -> None:
        answers = self._answers
        while answers and answers[0][0] is not None:
            answer = answers.popleft()[0]
            if answer is not _NO_ANSWER and not self.closed:
                self.transport.write(answer)
        if self.sasl is not None and self.sasl.failed and not answers and not self.closed:
            self.close()  # (SASL_AUTHENTICATION_FAILED went out: the connection ends)
        if self._paused and len(answers) < MAX_IN_FLIGHT // 2 and not self.closed:
            self._paused = False
            if not self._awaiting_intake:
                self.transport.resumeProducing()
            if self._buffer:
                self.dataReceived(b"")

    def _unsupported(self, frame: bytes, header) -> None:
        """An API or version not served: UNSUPPORTED_VERSION, the connection kept."""
        key, version, correlation_id = header.api_key, header.api_version, header.correlation_id
        if key == API_VERSIONS_KEY:  # (a newer client negotiating: nothing wrong)
            answer = encode_response(key, 0, correlation_id, api_versions_answer(UNSUPPORTED_VERSION))
        else:
            self._warn("an API not served: key {key} version {version}", key=key, version=version)
            try:
                request_codec(key, version)
                answer = encode_response(key, version, correlation_id, _all_errors(UNSUPPORTED_VERSION))
            except Exception:
                answer = encode_error_only(correlation_id, UNSUPPORTED_VERSION)
        self._answers.append([answer])
        self._flush()

    def _refuse(self, reason: str) -> None:
        """A request that cannot be read: one line, and the connection closed."""
        self._warn("Kafka request refused, connection closed: {reason}", reason=reason)
        self.closed = True
        self._buffer.clear()
        self.transport.loseConnection()

    def _warn(self, format: str, **fields) -> None:
        self.client_errors.warn(
            self.log,
            self.peer.host if self.peer else "?",
            "Kafka client {peer}: " + format,
            peer=self._who(),
            **fields,
        )

    def _who(self) -> str:
        peer = self.peer
        return printable(f"{peer.host}:{peer.port}") if peer is not None and hasattr(peer, "host") else "?"


def _all_errors(code: int) -> dict:
    return {"error_code": code, "throttle_time": 0}


class KafkaFactory(Factory):
    """Makes a KafkaConnection per client, over one KafkaApis."""

    noisy = False

    def __init__(
        self, apis, max_request_bytes: int, client_errors, intake=None, clock=None, frame_timeout_s=None
    ):
        self.apis = apis
        self.max_request_bytes = max_request_bytes
        self.client_errors = client_errors
        self.intake = intake
        self.clock = clock
        self.frame_timeout_s = frame_timeout_s

    def buildProtocol(self, addr):
        return KafkaConnection(
            self.apis,
            self.max_request_bytes,
            self.client_errors,
            self.intake,
            self.clock,
            self.frame_timeout_s,
        )
