"""The seams the hub is assembled with when [auth] is on (hedwig/hub/assembly.py)."""

from zope.interface import Interface


class IAuthenticator(Interface):
    """Who a connection is: from its AUTH request, its TLS client certificate, or nothing."""

    def authenticate(user, password):
        """Deferred[Principal | None]: the user when `password` (bytes) is theirs, None
        otherwise (an unknown name costs the same time as a wrong password). The check
        runs off the reactor thread."""

    def for_certificate(names):
        """The Principal a verified client certificate with these names maps to, or None."""

    def anonymous():
        """The Principal of connections that do not authenticate, or None when they are
        refused ([auth] allow_anonymous off)."""


class IAuthorizer(Interface):
    """What each connection may do."""

    def connection_access(connection):
        """The per-connection gate (hedwig.auth.gate.ConnectionAccess) the connection asks
        about each request it reads after HELLO."""
