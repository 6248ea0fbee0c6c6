"""Hub configuration: hub.conf read over the defaults of hedwig.config.settings, then checked.

Unknown sections or keys are errors, so a typo never silently leaves a default in force.
The region and TLS sections are checked by their own packages (hedwig.region.settings,
hedwig.config.tls_settings), which take the setting classes from hedwig.config.settings, not from here:
so this loader imports them and nothing imports it back.
"""

from hedwig.auth.settings import check_auth_settings
from hedwig.config.files import check_port, read_config_file
from hedwig.config.rados import check_rados_settings
from hedwig.config.settings import (
    GIB,
    KIB,
    MIB,
    CacheSettings,
    Config,
    ConfigError,
    DeliverySettings,
    HttpSettings,
    HubSettings,
    LedgerSettings,
    LogSettings,
    RadosSettings,
    RegionSettings,
    TlsSettings,
    ZooKeeperSettings,
    check_bounds,
)
from hedwig.config.tls_settings import check_tls_settings
from hedwig.config.zookeeper import check_zookeeper_settings
from hedwig.kafka.settings import check_kafka_settings
from hedwig.observe.settings import check_http_settings
from hedwig.protocol.framing import LINK_FRAME_MARGIN
from hedwig.region.settings import check_region_settings

__all__ = [
    "GIB",
    "KIB",
    "MIB",
    "CacheSettings",
    "Config",
    "ConfigError",
    "DeliverySettings",
    "HttpSettings",
    "HubSettings",
    "LedgerSettings",
    "LogSettings",
    "RadosSettings",
    "RegionSettings",
    "TlsSettings",
    "ZooKeeperSettings",
    "load_config",
]


def load_config(path=None, overrides=None) -> Config:
    """Read `path` (if given) over the defaults, then apply `overrides` {"hub.port": 4081}.
    A ConfigError is one line, and names the file when there is one."""
    try:
        return _load_config(path, overrides)
    except ConfigError as e:
        if path is None or str(e).startswith((str(path), "configuration file ")):
            raise
        raise ConfigError(f"{path}: {e}") from None


def _load_config(path, overrides) -> Config:
    config = Config()
    if path is not None:
        read_config_file(config, path)  # hedwig.config.files: its errors name file, key and value
    for dotted, value in (overrides or {}).items():
        if dotted.endswith("port") and isinstance(value, int):  # ([http] port may be "auto")
            check_port(value, f"{dotted} = {value}")
        section, key = dotted.split(".", 1)
        settings = getattr(config, section)
        if not hasattr(settings, key):
            raise ConfigError(f"unknown setting {dotted}")
        setattr(settings, key, value)
    if config.ledger.fsync not in ("never", "interval", "always"):
        raise ConfigError(f"[ledger] fsync = {config.ledger.fsync!r}: expected never, interval or always")
    _check_request_limits(config.hub)
    check_bounds("delivery", config.delivery, _DELIVERY_BOUNDS)
    check_region_settings(config)
    check_tls_settings(config)
    check_http_settings(config)
    check_kafka_settings(config)
    check_auth_settings(config)
    check_zookeeper_settings(config)
    check_rados_settings(config)
    return config


# [delivery] settings a work queue cannot run without (the others' 0 means "off").
_DELIVERY_BOUNDS = [
    ("ack_timeout_ms", lambda v: 1 <= v <= 0xFFFFFFFF, "a number of milliseconds from 1 to 4294967295"),
    ("shared_window", lambda v: v >= 1, "at least 1 (a shared member's window is never unlimited)"),
    ("max_shared_window", lambda v: v >= 1, "at least 1"),
]


def _check_request_limits(hub: HubSettings) -> None:
    """The partial-request budget must hold the largest frame (or that frame could never
    be read), and every timeout must be a positive time: none of them may be switched
    off, as each bounds what a client can make the hub keep."""
    if hub.max_partial_request_bytes < hub.max_frame_bytes + 4 + LINK_FRAME_MARGIN:
        raise ConfigError(
            f"[hub] max_partial_request_bytes = {hub.max_partial_request_bytes}: must hold the largest"
            f" frame, max_frame_bytes ({hub.max_frame_bytes}) plus its 4-byte length and the"
            f" {LINK_FRAME_MARGIN} bytes a region link's RELAY_PUBLISH carries besides"
        )
    for key in ("frame_timeout_s", "hello_timeout_s", "client_error_log_interval_s"):
        value = getattr(hub, key)
        if not 0 < value < float("inf"):
            raise ConfigError(f"[hub] {key} = {value}: expected a positive number of seconds")
