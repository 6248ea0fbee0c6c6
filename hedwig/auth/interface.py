"""The seams the hub is assembled with when [auth] is on (hedwig/hub/assembly.py)."""

from zope.interface import Attribute, Interface


class IAuthenticator(Interface):
    """Who a connection is: from its AUTH request, its TLS client certificate, or nothing."""

    def authenticate(user, password):
        """Deferred[Principal | None]: the user when `password` (bytes) is theirs, None
        otherwise (an unknown name costs the same time as a wrong password). The check
        runs off the reactor thread."""

    def scram_keys(user, mechanism, source, still_wanted):
        """Deferred[(ScramKeys | None, Principal | None)]: what a SCRAM login as `user` is
        checked against (hedwig.auth.scram), admitted by the login throttle; None, None
        when the user has no keys for `mechanism` (checked against mock keys, it fails
        as a wrong password does). `scram_ended` must follow."""

    def scram_ended(user, source, principal, abandoned):
        """The SCRAM login `scram_keys` admitted ended: right (`principal`), wrong (None,
        counted as a wrong password) or `abandoned` before its proof came."""

    def for_certificate(names):
        """The Principal a verified client certificate with these names maps to, or None."""

    def anonymous():
        """The Principal of connections that do not authenticate, or None when they are
        refused ([auth] allow_anonymous off)."""


class IAuthorizer(Interface):
    """What each connection may do."""

    room = Attribute("The connections not authenticated yet (hedwig.auth.waiting_room.WaitingRoom).")

    def connection_access(connection):
        """The per-connection gate (hedwig.auth.gate.ConnectionAccess): its session's
        IHubSideGate, which checks AUTH and each request after it."""

    def describe():
        """The logins checked and refused and the connections waiting to authenticate,
        for STATS and the metrics (a dict of counts)."""
