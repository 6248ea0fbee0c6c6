"""The [http] settings, checked when the configuration is read (one sentence naming the
setting, exit status 2), so a hub never starts with an HTTP listener that cannot work.

`[http] port = auto` (the default) is the hub's port + 1: two hubs that differ only in
`--port` get listeners of their own (4080 -> 4081, 4090 -> 4091), and a hub on a free
port (0) gets a free one too. A number is that port; 0 turns the listener off.
"""

from hedwig.config.settings import Config, ConfigError, check_bounds

AUTO = "auto"


def parse_http_port(text) -> int | str:
    """`auto` or a port number 0-65535, as [http] port and --http-port take it;
    ValueError naming what was expected otherwise."""
    if isinstance(text, int):
        value = text
    else:
        word = str(text).strip().lower()
        if word == AUTO:
            return AUTO
        try:
            value = int(word.replace("_", ""), 0)
        except ValueError:
            raise ValueError("expected auto (the hub's port + 1) or a port number (0: none)") from None
    if not 0 <= value <= 65535:
        raise ValueError("expected auto (the hub's port + 1) or a port number from 0 to 65535 (0: none)")
    return value


def http_listen_port(config: Config) -> int | None:
    """The port the HTTP listener listens on: None for no listener, 0 for a free one."""
    port = config.http.port
    if port == AUTO:
        hub_port = config.hub.port
        return hub_port + 1 if hub_port else 0
    return port or None


def describe_http_port(config: Config) -> str:
    """How the HTTP port was chosen, for the line that says it could not listen."""
    if config.http.port == AUTO:
        return "[http] port auto: the hub's port + 1"
    return f"[http] port = {config.http.port}"


def check_http_settings(config: Config) -> None:
    http, hub, tls = config.http, config.hub, config.tls
    try:
        http.port = parse_http_port(http.port)
    except ValueError as e:
        raise ConfigError(f"[http] port = {http.port}: {e}") from None
    if http.port == AUTO and hub.port == 65535:
        raise ConfigError("[http] port = auto: the hub's port + 1 is past 65535; give [http] port a number")
    port = http_listen_port(config)
    if port and port == hub.port:
        raise ConfigError(f"[http] port = {http.port} is [hub] port too: the HTTP listener needs its own")
    if port and tls.enabled and port == tls.port:
        raise ConfigError(
            f"[http] port = {http.port} ({port}) is [tls] port too: the HTTP listener needs its own"
            + ("; give [http] port a number" if http.port == AUTO else "")
        )
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
