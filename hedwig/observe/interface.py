"""The seam where the trust work's credentials meet the HTTP listener.

The listener serves every request when it has no guard. A guard (given to HubService as
`http_guard`, and on to HttpObserver) is asked before each request is routed; the trust
work provides one that checks the same users and permissions as the hub's protocol
(HTTP Basic against password hashes, or the TLS client certificate's user) once
authentication lands.
"""

from zope.interface import Interface


class IRequestGuard(Interface):
    """Decides whether an HTTP request to the hub's listener may be served."""

    def allows(request):
        """True to serve `request` (a twisted.web IRequest: its headers, its TLS peer
        certificate through request.transport, its path); False to refuse it with 401;
        or a Deferred firing with either (a password check on a thread pool). A guard
        that refuses may set headers on the request first (WWW-Authenticate). A guard
        that fails refuses the request, and the failure is logged."""
