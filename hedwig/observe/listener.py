"""HttpObserver: the hub's HTTP listener's parts, built once for HubService.

It holds the HubView of the hub, the History sampling it for the charts (a Service:
HubService runs it beside the listener), the hub's own prometheus-client registry, and
the twisted.web site serving them. HubService listens on `endpoint()`: plain TCP on
[hub] host and [http] port, or TLS with the [tls] certificate when [tls] is enabled (an
HTTPS listener, so a hub that encrypts its protocol does not expose its state in clear).
`guard` (IRequestGuard, optional) is asked before every request: the trust work's
credentials plug in there.
"""

from twisted.internet.defer import gatherResults, succeed
from twisted.internet.endpoints import SSL4ServerEndpoint, TCP4ServerEndpoint

from hedwig.concurrency.deferreds import SharedResult
from hedwig.config.settings import Config
from hedwig.observe.history import History
from hedwig.observe.interface import IRequestGuard
from hedwig.observe.metrics import hub_registry
from hedwig.observe.resources import ObservationSite, RootResource
from hedwig.observe.settings import http_listen_port
from hedwig.observe.view import MAX_ROWS, HubView


class HttpObserver:
    def __init__(self, hub, ledgers, gc, config: Config, reactor, guard=None):
        if guard is not None and not IRequestGuard.providedBy(guard):
            raise TypeError(f"{guard!r} does not provide IRequestGuard")
        self.config = config
        self.reactor = reactor
        self.view = HubView(hub, ledgers, gc)
        http = config.http
        self.history = History(self.view, reactor, http.sample_interval_s, http.history_s)
        self.registry = hub_registry(self.view, http.max_topic_labels)
        self._listing = None  # (when, SharedResult) of the last /api/region listing
        self.site = ObservationSite(
            RootResource(self, self.registry, guard), reactor, hub_name=lambda: hub.name
        )

    @property
    def scheme(self) -> str:
        return "https" if self.config.tls.enabled else "http"

    def status(self) -> dict:
        history = self.history
        return self.view.status(history.topic_rates, history.samples)

    def region_listing(self):
        """Deferred[dict | None]: /api/region, the whole region of a hub of a region of
        several (None for an embedded hub): the region part of the status, every topic
        with its owner and every subscription with its lag and owner, as LIST_OWNERS and
        LIST_SUBSCRIPTIONS give them (asking the other hubs). One listing serves every
        request for a sample interval, so that pages refreshing do not multiply the asking."""
        region = self.view.region()
        if region is None:
            return succeed(None)
        now = self.reactor.seconds()
        if self._listing is not None and now - self._listing[0] < self.config.http.sample_interval_s:
            return self._listing[1].wait()
        hub = self.view.hub
        listing = SharedResult(
            gatherResults([hub.topic_owners(), hub.list_subscriptions(None)], consumeErrors=True).addCallback(
                lambda results: {
                    **region,
                    "topics": [{"topic": t, "owner": o} for t, o in sorted(results[0].items())][:MAX_ROWS],
                    "subscriptions": results[1][:MAX_ROWS],
                }
            )
        )
        self._listing = (now, listing)
        return listing.wait()

    def endpoint(self):
        config = self.config
        port = http_listen_port(config)
        if config.tls.enabled:
            from hedwig.config.tls import server_options

            options = server_options(config.tls)
            return SSL4ServerEndpoint(self.reactor, port, options, interface=config.hub.host)
        return TCP4ServerEndpoint(self.reactor, port, interface=config.hub.host)
