"""The HTTP listener's guard when [auth] is on: the permission STATS needs (admin).

The status page, /metrics and /api show every topic, subscription and connection, what
STATS and LIST_SUBSCRIPTIONS of every topic show, so with [auth] enabled they answer only
a user holding STATS's permission (its op spec's, hedwig.protocol.spec: an admin of the
users file): by a verified TLS client certificate that file maps to a user
(the listener speaks HTTPS with [tls] enabled), or by HTTP Basic credentials checked by
the hub's own authenticator (scrypt off the reactor, at most [auth]
max_concurrent_checks at once). A refusal answers 401 with a Basic challenge after
[auth] failure_delay_s, as a failed AUTH is; Prometheus sends Basic credentials with
`basic_auth` in its scrape configuration.
"""

from twisted.internet.task import deferLater
from twisted.logger import Logger
from zope.interface import implementer

from hedwig.auth.throttle import LoginRefused
from hedwig.config.tls import certificate_names, peer_certificate
from hedwig.observe.interface import IRequestGuard
from hedwig.protocol.names import printable
from hedwig.protocol.ops import Op
from hedwig.protocol.spec import OPS

# What the listener needs of a user: what STATS needs.
NEEDED = OPS[Op.STATS].permission
CHALLENGE = b'Basic realm="hedwig", charset="UTF-8"'


@implementer(IRequestGuard)
class AdminGuard:
    log = Logger()

    def __init__(self, authenticator, clock, failure_delay_s: float = 1.0):
        self.authenticator = authenticator  # hedwig.auth.interface.IAuthenticator
        self.clock = clock
        self.failure_delay_s = failure_delay_s
        self.refusals = 0

    def allows(self, request):
        certificate = peer_certificate(request.transport)
        if certificate is not None:
            principal = self.authenticator.for_certificate(certificate_names(certificate))
            if principal is not None:
                return self._decide(principal, request, "its client certificate")
        user = request.getUser().decode("utf-8", "replace")
        if not user:
            principal = self.authenticator.anonymous()
            return self._decide(principal, request, "anonymous access")
        peer = getattr(request.getClientAddress(), "host", "?")
        gone = []  # the request's connection was lost while its check waited
        request.notifyFinish().addBoth(gone.append)
        checking = self.authenticator.authenticate(user, request.getPassword(), peer, lambda: not gone)
        return checking.addCallbacks(
            self._decide, self._refused, (request, f"user {printable(user)}"), None, (request,)
        )

    def _refused(self, failure, request):
        """Refused without a check (too many failures, or too many checks waiting): 401
        at once, no delay to pay since nothing was checked."""
        failure.trap(LoginRefused)
        self.refusals += 1
        request.setHeader(b"www-authenticate", CHALLENGE)
        return False

    def _decide(self, principal, request, who: str):
        """True for a user holding NEEDED; otherwise False, after the failure delay (a
        Deferred)."""
        if principal is not None and principal.holds(NEEDED):
            return True
        self.refusals += 1
        request.setHeader(b"www-authenticate", CHALLENGE)
        self.log.info(
            "HTTP {path} from {peer} refused: {who} does not hold the {permission} permission",
            path=printable(request.path),
            peer=getattr(request.getClientAddress(), "host", "?"),
            who=who,
            permission=NEEDED.value,
        )
        if not self.failure_delay_s:
            return False
        return deferLater(self.clock, self.failure_delay_s, lambda: False)
