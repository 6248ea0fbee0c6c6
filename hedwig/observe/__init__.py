"""What a hub shows of itself over HTTP: Prometheus metrics, a status page, JSON.

The hub's HTTP listener (twisted.web on the hub's reactor, `[http] port`) serves:

- `/metrics`: the Prometheus text format, produced by prometheus-client from the hub's
  own counters (metrics.py) in a CollectorRegistry of its own;
- `/`: the status page (page.py), one self-contained document with inline SVG charts,
  refreshed from `/api/status`;
- `/api/...`: the same as JSON (view.py reads the hub, history.py keeps the rates).

The modules: settings.py checks [http]; view.py turns the hub's parts into rows;
history.py samples rates for the charts; metrics.py is the Prometheus collector;
resources.py the twisted.web resources (bounded requests, an optional IRequestGuard);
listener.py builds all of it for HubService. Nothing here is on the publish or delivery
path: the hot path keeps plain integer counters (hedwig.hub.stats), read when asked.
"""
