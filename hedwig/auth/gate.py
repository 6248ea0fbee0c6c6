"""The per-connection gate of a hub with [auth] on (IAuthorizer).

A connection's ConnectionAccess is the gate of its session's handshake
(hedwig.protocol.hub_side: the session decides when AUTH is due and refuses what comes
too early). After HELLO it says whether the connection acts as someone already (a client
certificate the users file maps, or anonymous access: `identify`); it checks AUTH
(`authenticate`: the password off the reactor; a wrong one is answered
AUTHENTICATION_FAILED after a delay, and the connection closed); and every request
after that needs the permission its op's spec names (hedwig.protocol.spec.Permission),
checked (`check`) as follows:

    publish, subscribe      publish / subscribe on the topic; and create, unless the
                            topic exists (it is opened as an existing topic first, in
                            the request's place in the order, so the request cannot
                            create it); a SUBSCRIBE naming a dead-letter topic or
                            max_deliveries also publish on the dead-letter topic, and
                            create unless it is open here (the hub publishes there as
                            this user, checked again each time: auth/dead_letters.py)
    read                    subscribe on the topic (an UNSUBSCRIBE's subscription owner
                            is checked by the delivery manager; a reader needs a
                            topic's bounds)
    none                    nothing more: a handle this connection attached under
                            these checks, a producer id (each set is checked)
    region                  a region user (which region, and which origins, are
                            checked where those are decoded: hedwig/region)
    hub                     [auth] hub_user, another hub of the ZooKeeper region: the
                            user it acts on behalf of is trusted from it alone (and
                            checked by the op's handler: hedwig/kafka/offsets.py)
    create                  create on the topic
    read or admin           subscribe on the topic it names (every topic's: admin)
    admin                   admin; and any op without a spec (refused rather than
                            guessed)

A refusal raises RequestRefused(NOT_AUTHORIZED), which the connection answers and logs
as it does any refused request; the connection goes on. Answers are cached per user and
topic (Principal.may), so a publisher pays the pattern match once per topic.
"""

from twisted.internet.defer import succeed
from twisted.internet.task import deferLater
from twisted.logger import Logger
from zope.interface import implementer

from hedwig.auth.interface import IAuthorizer
from hedwig.auth.principal import CREATE, PUBLISH, SUBSCRIBE
from hedwig.auth.throttle import LoginRefused
from hedwig.auth.waiting_room import WaitingRoom
from hedwig.config.tls import certificate_names, is_tls, peer_certificate
from hedwig.protocol.admin_requests import decode_create_topic, decode_list_subscriptions
from hedwig.protocol.auth_request import decode_auth, encode_auth_reply
from hedwig.protocol.hub_side import IHubSideGate
from hedwig.protocol.layouts import RequestRefused, read_topic
from hedwig.protocol.ops import Op
from hedwig.protocol.requests import decode_subscribe
from hedwig.protocol.spec import OPS, Permission
from hedwig.protocol.status import Status


def not_authorized(message: str) -> RequestRefused:
    return RequestRefused(Status.NOT_AUTHORIZED, message)


@implementer(IAuthorizer)
class AccessGate:
    """The hub-wide half: the authenticator, and how a failed attempt is paid for."""

    log = Logger()

    def __init__(
        self,
        authenticator,
        clock,
        failure_delay_s: float = 1.0,
        room: WaitingRoom | None = None,
        hub_user: str = "",
    ):
        self.authenticator = authenticator  # IAuthenticator
        self.hub_user = hub_user  # [auth] hub_user: the region's hubs' user ("": none)
        self.clock = clock
        self.failure_delay_s = failure_delay_s
        self.room = WaitingRoom(128) if room is None else room  # the connections not authenticated yet
        self.failures = 0
        self.successes = 0

    def connection_access(self, connection) -> "ConnectionAccess":
        return ConnectionAccess(self, connection)

    def describe(self) -> dict:
        """The logins checked and refused, and the connections waiting to authenticate
        (STATS' "logins")."""
        return {**self.authenticator.describe(), **self.room.describe()}


@implementer(IHubSideGate)
class ConnectionAccess:
    """One connection's user and the checks of its requests: the gate of its session's
    handshake (hedwig.protocol.hub_side), which decides when AUTH is due and what is
    taken meanwhile."""

    log = Logger()

    def __init__(self, gate: AccessGate, connection):
        self.gate = gate
        self.connection = connection
        self.principal = None
        self.authenticated = False  # by AUTH or certificate (anonymous access is not)

    # -- who ------------------------------------------------------------------------------

    def identify(self) -> bool:
        """After HELLO: a mapped TLS client certificate, else anonymous access; whether
        the connection acts as a user now."""
        authenticator = self.gate.authenticator
        transport = self.connection.transport
        if is_tls(transport):
            certificate = peer_certificate(transport)
            principal = authenticator.for_certificate(certificate_names(certificate)) if certificate else None
            if principal is not None:
                self._become(principal, "its client certificate")
                return True
        self._set(authenticator.anonymous())
        return self.principal is not None

    def _set(self, principal) -> None:
        self.principal = principal
        self.connection.principal = principal

    def _become(self, principal, how: str) -> None:
        self._set(principal)
        self.authenticated = True
        self.gate.successes += 1
        self.log.info(
            "{peer}: authenticated as {user} by {how}",
            peer=self.connection.peer,
            user=principal.name,
            how=how,
        )

    # -- AUTH -----------------------------------------------------------------------------

    def authenticate(self, request_id: int, body) -> None:
        """Check an AUTH; its outcome goes to the connection's session (which takes
        nothing else from the connection meanwhile: one guess at a time)."""
        if self.authenticated:
            raise RequestRefused(Status.MALFORMED_REQUEST, f"already authenticated as {self.principal.name}")
        request = decode_auth(body)
        connection = self.connection
        checked = self.gate.authenticator.authenticate(
            request.user, request.password, connection.peer_host, lambda: connection.is_open
        )
        checked.addCallbacks(
            self._checked, self._check_failed, (request.user, request_id), None, (request_id,)
        )

    def _check_failed(self, failure, request_id: int) -> None:
        """Refused without a check (hedwig/auth/throttle.py: too many failures, or the
        hub's queue of checks is full), answered at once; or the check itself failed (a
        bug, or no thread to run it): the hub's fault, logged with its traceback once,
        and the client refused as for wrong credentials."""
        if failure.check(LoginRefused):
            why = str(failure.value)
        else:
            self.log.failure("{peer}: checking an AUTH failed", failure, peer=self.connection.peer)
            why = "the hub could not check the password"
        refused = Status.AUTHENTICATION_FAILED
        self.connection.refuse_and_close(request_id, Op.AUTH, refused, why, succeed(None))

    def _checked(self, principal, user: str, request_id: int) -> None:
        connection = self.connection
        if principal is not None:
            self._become(principal, "AUTH")
            if connection.is_open:
                connection.session.authenticated(request_id, encode_auth_reply(principal.name))
            return
        # One line per attempt (the name, never the password); the attacker pays a delay
        # and a new connection (and HELLO) for each guess.
        self.gate.failures += 1
        connection.refuse_and_close(
            request_id, Op.AUTH, Status.AUTHENTICATION_FAILED, f"wrong user name or password (user {user})",
            deferLater(self.gate.clock, self.gate.failure_delay_s, lambda: None),
        )  # fmt: skip

    # -- the checks -----------------------------------------------------------------------

    def check(self, op: int, body) -> None:
        """Raise RequestRefused(NOT_AUTHORIZED) unless the user holds the permission the
        request's op needs (its spec's)."""
        _CHECKS.get(op, _admin)(self, self.principal, op, body)

    # -- permissions ----------------------------------------------------------------------

    def _require(self, principal, action: str, topic: str) -> None:
        if not principal.may(action, topic):
            raise not_authorized(f"user {principal.name} may not {action} on topic {topic}")

    def _topic_request(self, principal, op, body, action: str) -> None:
        topic, _ = read_topic(body, 0)
        self._require(principal, action, topic)
        if principal.may(CREATE, topic):
            return
        topics = self.connection.hub.topics
        if topics.get(topic) is not None:
            return
        missing = not_authorized(f"topic {topic} does not exist, and user {principal.name} may not create it")
        opening = topics.acquire_existing(topic, missing)
        failed = []
        opening.addErrback(failed.append)  # the request itself joins the opening, and fails with it
        if failed:
            raise failed[0].value


def _publish(access, principal, op, body):
    access._topic_request(principal, op, body, PUBLISH)


def _subscribe(access, principal, op, body):
    request = decode_subscribe(body)
    if request.max_deliveries is not None or request.dead_letter_topic:
        # The hub will publish dead letters as this user (now, or once a later SUBSCRIBE
        # names max_deliveries: the topic named here is stored). Each dead letter is
        # checked again as it is published, create included (hedwig/auth/dead_letters.py).
        dead_letters = request.dead_letter_topic or f"{request.topic}.dlq"
        access._require(principal, PUBLISH, dead_letters)
        if access.connection.hub.topics.get(dead_letters) is None:  # (not open here: it may not exist)
            access._require(principal, CREATE, dead_letters)
    access._topic_request(principal, op, body, SUBSCRIBE)


def _read(access, principal, op, body):
    topic, _ = read_topic(body, 0)
    access._require(principal, SUBSCRIBE, topic)


def _create(access, principal, op, body):
    access._require(principal, CREATE, decode_create_topic(body).topic)


def _list_subscriptions(access, principal, op, body):
    topic = decode_list_subscriptions(body)
    if topic is None:
        _admin(access, principal, op, body)
    else:
        access._require(principal, SUBSCRIBE, topic)


def _handle(access, principal, op, body):
    """The handle was attached by a SUBSCRIBE this gate let through."""


def _region(access, principal, op, body):
    if not principal.holds(Permission.REGION):
        raise not_authorized(f"{Op(op).name} is a region link's: user {principal.name} names no region")


def _hub(access, principal, op, body):
    hub_user = access.gate.hub_user
    if not hub_user or principal.name != hub_user:
        raise not_authorized(
            f"{Op(op).name} acts on behalf of another user: "
            f"only [auth] hub_user may send it, not {principal.name}"
        )


def _admin(access, principal, op, body):
    if not principal.holds(Permission.ADMIN):
        name = Op(op).name if op in Op._value2member_map_ else f"op {op}"
        raise not_authorized(f"user {principal.name} may not send {name} (admins only)")


# What each permission checks (hedwig.protocol.spec.Permission), and so each op's check.
_BY_PERMISSION = {
    Permission.NONE: _handle,
    Permission.PUBLISH: _publish,
    Permission.SUBSCRIBE: _subscribe,
    Permission.READ: _read,
    Permission.CREATE: _create,
    Permission.READ_OR_ADMIN: _list_subscriptions,
    Permission.REGION: _region,
    Permission.HUB: _hub,
    Permission.ADMIN: _admin,
}
_CHECKS = {op: _BY_PERMISSION[spec.permission] for op, spec in OPS.items() if spec.permission is not None}
