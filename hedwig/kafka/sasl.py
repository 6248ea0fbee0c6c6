"""SASL on the Kafka port of a hub with [auth] on: SaslHandshake and SaslAuthenticate
(PLAIN), against the users of [auth] users_file, as the native AUTH.

A Kafka connection to such a hub is served nothing but ApiVersions, SaslHandshake and
SaslAuthenticate until it authenticates (anything else closes it, as a Kafka broker's
SASL listener does). The password is checked by the hub's authenticator (scrypt, off the
reactor), through the one LoginThrottle and queue of checks the native port uses, so
guessing is counted per user and per source across both ports; the connection waits in
the hub's WaitingRoom of unauthenticated connections (pushed out past [auth]
max_unauthenticated, closed after [auth] auth_timeout_s). Wrong credentials are answered
SASL_AUTHENTICATION_FAILED after [auth] failure_delay_s, and the connection closed.

SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802/7677) are served with SaslAuthenticate carrying
the exchange: client-first, answered server-first (the user's salt and iteration count,
looked up through the same throttle and queue); client-final, answered server-final when
the proof is right. The proof is checked against the StoredKey `hedwig user add` / `passwd`
wrote (hedwig/auth/scram.py); a user without keys, or no such user, gets mock keys and
fails as a wrong password does, after the same delay, counted by the same throttle.
"""

from twisted.internet.defer import succeed
from twisted.internet.task import deferLater
from twisted.logger import Logger

from hedwig.auth.scram import MECHANISMS as SCRAM_MECHANISMS
from hedwig.auth.scram import ScramError, ScramServer, mock_keys
from hedwig.auth.throttle import LoginRefused
from hedwig.kafka.access import guarded
from hedwig.protocol.names import printable

SASL_HANDSHAKE, SASL_AUTHENTICATE, API_VERSIONS = 17, 36, 18
# SaslHandshake v0 is advertised (librdkafka looks for it) but refused: after it the
# tokens would come unframed, which this port does not read.
SASL_API_VERSIONS = {17: ("SaslHandshake", 0, 1), 36: ("SaslAuthenticate", 0, 2)}
MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)
NONE = 0
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58
_OPEN = frozenset((API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE))


def handshake_without_auth(_version, _request, _peer):
    """A hub without [auth]: no mechanism to offer."""
    return {"error_code": UNSUPPORTED_SASL_MECHANISM, "mechanisms": []}


def authenticate_without_auth(_version, _request, _peer):
    return {
        "error_code": ILLEGAL_SASL_STATE,
        "error_message": "this hub does not authenticate",
        "auth_bytes": b"",
    }


class ConnectionSasl:
    """One Kafka connection's authentication and, once authenticated, its user's
    permissions on every request (access.py). `connection` is the KafkaConnection; the
    hub's `gate` (hedwig.auth.gate.AccessGate) holds the authenticator and waiting room."""

    log = Logger()

    def __init__(self, gate, connection, hub, clock, timeout_s: float):
        self.gate = gate
        self.connection = connection
        self.hub = hub
        self.clock = clock
        self.principal = None
        self.mechanism = None
        self.checking = False  # (the waiting room does not push out a connection being checked)
        self.failed = False  # answered SASL_AUTHENTICATION_FAILED: closed once that answer leaves
        self.peer_host = self.peer = "?"
        self.session = self  # (what the waiting room closes a connection through)
        self._timer = None
        self._timeout_s = timeout_s
        self._scram = None  # a SCRAM exchange past server-first: (ScramServer, Principal or None)

    def arrived(self, peer_host: str) -> None:
        self.peer_host = self.peer = peer_host
        self.gate.room.arrived(self)
        self._timer = self.clock.callLater(self._timeout_s, self._overdue)

    def gone(self) -> None:
        self._stop_timer()
        if self._scram is not None:  # (admitted by the throttle, its proof never came)
            self.gate.authenticator.scram_ended(self._scram[0].user, self.peer_host, None, abandoned=True)
            self._scram = None
        self.gate.room.gone(self)

    def _stop_timer(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def _overdue(self) -> None:
        self._timer = None
        if self.principal is None and not self.checking:
            self.gate.room.timed_out += 1
            self.gate.room.gone(self)
            self.refuse_and_close(0, 0, None, f"no SASL authentication within {self._timeout_s:g} s")

    def refuse_and_close(self, _request_id, _op, _status, why) -> None:
        """Closed by the waiting room (pushed out) or its own timeout."""
        self.log.info("Kafka client {peer}: closed: {why}", peer=self.peer_host, why=why)
        self.connection.close()

    # -- what is served -------------------------------------------------------------------

    def allows(self, api_key: int) -> bool:
        """Whether a request of `api_key` may be served now (before authentication only
        ApiVersions and SASL's)."""
        return self.principal is not None or api_key in _OPEN

    def handler(self, api_key: int, handler):
        if api_key == SASL_HANDSHAKE:
            return self.handshake
        if api_key == SASL_AUTHENTICATE:
            return self.authenticate
        return guarded(api_key, handler, self.principal, self.hub)

    # -- SaslHandshake, SaslAuthenticate --------------------------------------------------

    def handshake(self, version, request, _peer):
        if version == 0:  # (unframed tokens would follow: SaslAuthenticate is served instead)
            return {"error_code": UNSUPPORTED_SASL_MECHANISM, "mechanisms": []}
        if self.principal is not None or self.mechanism is not None:
            return {"error_code": ILLEGAL_SASL_STATE, "mechanisms": list(MECHANISMS)}
        if request.mechanism not in MECHANISMS:
            return {"error_code": UNSUPPORTED_SASL_MECHANISM, "mechanisms": list(MECHANISMS)}
        self.mechanism = request.mechanism
        return {"error_code": NONE, "mechanisms": list(MECHANISMS)}

    def authenticate(self, _version, request, _peer):
        if self.mechanism is None or self.principal is not None or self.checking:
            self.failed = True
            return succeed(
                self._refusal(ILLEGAL_SASL_STATE, "SaslAuthenticate before SaslHandshake, or again")
            )
        if self.mechanism != "PLAIN":
            return self._scram_step(bytes(request.auth_bytes))
        parts = bytes(request.auth_bytes).split(b"\0")
        if len(parts) != 3:
            self.failed = True
            return succeed(
                self._refusal(SASL_AUTHENTICATION_FAILED, "a PLAIN message is authzid NUL user NUL password")
            )
        authzid, user, password = parts
        user = user.decode("utf-8", "replace")
        if authzid and authzid.decode("utf-8", "replace") != user:
            self.failed = True
            return succeed(self._refusal(SASL_AUTHENTICATION_FAILED, "acting as another user is not served"))
        self.checking = True
        connection = self.connection
        checked = self.gate.authenticator.authenticate(
            user, password, self.peer_host, lambda: not connection.closed
        )
        return checked.addCallbacks(self._checked, self._not_checked, (user,))

    def _checked(self, principal, user: str, answer: bytes = b""):
        self.checking = False
        if principal is not None:
            self.principal = principal
            self._stop_timer()
            self.gate.room.proven(self)
            self.gate.successes += 1
            self.log.info(
                "Kafka client {peer}: authenticated as {user} by SASL {mechanism}",
                peer=self.peer_host, user=user, mechanism=self.mechanism,
            )  # fmt: skip
            return {"error_code": NONE, "error_message": None, "auth_bytes": answer, "session_lifetime": 0}
        self.gate.failures += 1
        return self._failed(f"wrong user name or password (user {printable(user)})")

    # -- SCRAM ----------------------------------------------------------------------------

    def _scram_step(self, message: bytes):
        """client-first (answered server-first) or client-final (answered server-final)."""
        if self._scram is not None:
            exchange, principal = self._scram
            self._scram = None
            try:
                answer = exchange.client_final(message)
            except ScramError as e:
                answer, why = None, str(e)
            else:
                why = None
            authenticator = self.gate.authenticator
            principal = authenticator.scram_ended(
                exchange.user, self.peer_host, principal if answer else None
            )
            if why is not None:  # (counted as a wrong password: a malformed proof is one)
                self.gate.failures += 1
                return self._failed(why)
            return self._checked(principal, exchange.user, answer)
        exchange = ScramServer(self.mechanism)
        try:
            user = exchange.client_first(message)
        except ScramError as e:
            self.failed = True
            return succeed(self._refusal(SASL_AUTHENTICATION_FAILED, str(e)))
        self.checking = True
        connection = self.connection
        looked_up = self.gate.authenticator.scram_keys(
            user, self.mechanism, self.peer_host, lambda: not connection.closed
        )
        return looked_up.addCallbacks(self._scram_first, self._not_checked, (exchange,))

    def _scram_first(self, found, exchange):
        self.checking = False
        keys, principal = found
        if self.connection.closed:
            self.gate.authenticator.scram_ended(exchange.user, self.peer_host, None, abandoned=True)
            return None
        self._scram = (exchange, principal)
        first = exchange.server_first(keys if keys is not None else mock_keys(self.mechanism, exchange.user))
        return {"error_code": NONE, "error_message": None, "auth_bytes": first, "session_lifetime": 0}

    def _not_checked(self, failure):
        self.checking = False
        if failure.check(LoginRefused):
            why = str(failure.value)
        else:
            self.log.failure("Kafka client {peer}: checking a password failed", failure, peer=self.peer_host)
            why = "the hub could not check the password"
        return self._failed(why)

    def _failed(self, why: str):
        """Answered after the failure delay, and the connection closed then."""
        self.failed = True
        refusal = self._refusal(SASL_AUTHENTICATION_FAILED, why)
        return deferLater(self.clock, self.gate.failure_delay_s, lambda: refusal)

    def _refusal(self, code: int, why: str) -> dict:
        return {"error_code": code, "error_message": f"Authentication failed: {why}", "auth_bytes": b""}
