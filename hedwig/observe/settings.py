"""The [http] settings, checked when the configuration is read (one sentence naming the
setting, exit status 2), so a hub never starts with an HTTP listener that cannot work."""

from hedwig.config.settings import Config, ConfigError, check_bounds


def check_http_settings(config: Config) -> None:
    http, hub, tls = config.http, config.hub, config.tls
    check_bounds("http", http, [("port", lambda port: 0 <= port <= 65535, "0-65535 (0: no HTTP listener)")])
    if http.port and http.port == hub.port:
        raise ConfigError(f"[http] port = {http.port} is [hub] port too: the HTTP listener needs its own")
    if http.port and tls.enabled and http.port == tls.port:
        raise ConfigError(f"[http] port = {http.port} is [tls] port too: the HTTP listener needs its own")
    check_bounds(
        "http",
        http,
        [
            ("max_topic_labels", lambda labels: labels >= 0, "0 or more"),
            ("sample_interval_s", lambda seconds: seconds > 0, "more than 0"),
        ],
    )
    if http.history_s < http.sample_interval_s:
        raise ConfigError(
            f"[http] history_s = {http.history_s}: expected at least"
            f" sample_interval_s ({http.sample_interval_s})"
        )
