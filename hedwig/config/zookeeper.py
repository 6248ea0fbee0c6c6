"""The [zookeeper] settings, checked when the configuration is read: a region of several
hubs that cannot work (no server list that parses, a root that is no path, an address
nobody could be redirected to) is refused in one sentence naming the setting."""

from hedwig.config.settings import Config, ConfigError, ZooKeeperSettings, check_bounds
from hedwig.protocol.addresses import parse_address

_ANY_HOST = ("", "0.0.0.0", "::")


def on_zookeeper(config: Config) -> bool:
    """Whether the hub runs in a region of several hubs (a ZooKeeper server list is set)."""
    return bool(config.zookeeper.servers.strip())


def server_list(settings: ZooKeeperSettings) -> str:
    """The servers as kazoo takes them: "host:port,host:port" (port 2181 by default)."""
    servers = []
    for item in settings.servers.split(","):
        if item.strip():
            host, port = parse_address(item if ":" in item.strip() else f"{item.strip()}:2181")
            servers.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    return ",".join(servers)


def advertised_host(config: Config) -> str:
    """The host this hub is reached at by clients and other hubs (named in redirects)."""
    return config.zookeeper.advertised_host.strip() or config.hub.host


def check_zookeeper_settings(config: Config) -> None:
    zk = config.zookeeper
    check_bounds(
        "zookeeper",
        zk,
        [
            ("session_timeout_ms", lambda ms: 100 <= ms <= 3_600_000, "100-3600000 (milliseconds)"),
            ("connect_timeout_s", lambda s: 0 < s < float("inf"), "a positive number of seconds"),
            ("topic_release_s", lambda s: 0 <= s < float("inf"), "0 (never) or a number of seconds"),
            ("rebalance_interval_s", lambda s: 0 < s < float("inf"), "a positive number of seconds"),
            ("rebalance_tolerance", lambda t: 0 <= t < float("inf"), "0 or more (a fraction: 0.1 is 10%)"),
            ("rebalance_max_shed", lambda n: n >= 1, "1 or more"),
        ],
    )
    if not on_zookeeper(config):
        return
    try:
        server_list(zk)
    except ValueError as e:
        raise ConfigError(f"[zookeeper] servers = {zk.servers}: {e}") from None
    root = zk.root.strip()
    parts = root.split("/")
    if parts[0] or any(p in ("", ".", "..") for p in parts[1:]):
        raise ConfigError(
            f"[zookeeper] root = {zk.root}: expected an absolute path below / such as /hedwig"
            " (one per region)"
        )
    if advertised_host(config) in _ANY_HOST:
        raise ConfigError(
            f"[hub] host = {config.hub.host} listens on every address: set [zookeeper] advertised_host"
            " to the address clients and the other hubs reach this hub at (redirects name it)"
        )
