"""Hub configuration: hub.conf read over the defaults of hedwig.config.settings, then checked.

Unknown sections or keys are errors, so a typo never silently leaves a default in force.
The region and TLS sections are checked by their own packages (hedwig.region.settings,
hedwig.config.tls_settings), which take the setting classes from hedwig.config.settings, not from here:
so this loader imports them and nothing imports it back.
"""

import dataclasses
import math

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
    shown,
)
from hedwig.config.tls_settings import check_tls_settings
from hedwig.config.zookeeper import check_zookeeper_settings
from hedwig.hub.reactors import reactor_problem
from hedwig.kafka.settings import check_kafka_settings
from hedwig.ledger.layout import MAX_PAGE_BYTES, RECORD_BYTES
from hedwig.ledger.mmap_ledger import MIN_PAGE_BYTES
from hedwig.observe.settings import check_http_settings
from hedwig.protocol.framing import LINK_FRAME_MARGIN
from hedwig.region.settings import check_region_settings, region_name_by_default

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
    config.region.name = ""  # (unless the file or an option names it: region_name_by_default)
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
    reactor = reactor_problem(config.hub.reactor)
    if reactor is not None:
        raise ConfigError(reactor)
    if config.ledger.fsync not in ("never", "interval", "always"):
        raise ConfigError(f"[ledger] fsync = {config.ledger.fsync!r}: expected never, interval or always")
    check_numbers(config)
    for section, bounds in _BOUNDS.items():
        check_bounds(section, getattr(config, section), bounds)
    _check_request_limits(config.hub)
    check_zookeeper_settings(config)  # (before the region's name, which may be its root's)
    config.region.name = config.region.name or region_name_by_default(config)
    check_region_settings(config)
    check_tls_settings(config)
    check_http_settings(config)
    check_kafka_settings(config)
    check_auth_settings(config)
    check_rados_settings(config)
    return config


def check_numbers(config: Config) -> None:
    """Every number a hub takes is a count, a size or a time: refuse a negative one (or
    one that is not finite) in every section, so a new setting is checked without a line
    of its own. Settings that 0 would break are in _BOUNDS (or their section's checks)."""
    for section in dataclasses.fields(config):
        settings = getattr(config, section.name)
        for setting in dataclasses.fields(settings):
            value = getattr(settings, setting.name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if not 0 <= value < math.inf:
                raise ConfigError(
                    f"[{section.name}] {setting.name} = {shown(value)}: expected {_what_number(setting.name)}"
                )


def _what_number(key: str) -> str:
    """What a setting named `key` holds, as the error for a negative one says it."""
    if key.endswith(("_s", "_secs")):
        return "0 or more seconds"
    if key.endswith("_ms"):
        return "0 or more milliseconds"
    if key.endswith("_bytes"):
        return "0 or more bytes"
    return "0 or more"


_POSITIVE_SECONDS = (lambda v: v > 0, "a positive number of seconds")

# Settings for which 0 means nothing that could work (the others' 0 means "off" or "no limit").
_BOUNDS = {
    "hub": [
        ("max_frame_bytes", lambda v: v >= 64 * KIB, "at least 65536 bytes"),
        ("max_message_bytes", lambda v: v >= 1, "at least 1 byte"),
        ("max_subscriptions_per_connection", lambda v: v >= 1, "at least 1"),
        ("shutdown_timeout_s", *_POSITIVE_SECONDS),
    ],
    "ledger": [
        (
            "page_bytes",
            lambda v: MIN_PAGE_BYTES <= v <= MAX_PAGE_BYTES,
            f"{MIN_PAGE_BYTES} to {MAX_PAGE_BYTES} bytes",
        ),
        (
            "index_page_records",
            lambda v: 1 <= v * RECORD_BYTES <= MAX_PAGE_BYTES,
            f"1 to {MAX_PAGE_BYTES // RECORD_BYTES} records",
        ),
        ("max_mapped_pages", lambda v: v >= 2, "at least 2 (a data and an index page)"),
        ("max_open_ledgers", lambda v: v >= 1, "at least 1"),
        ("fsync_interval_ms", lambda v: v >= 1, "at least 1 millisecond"),
    ],
    "log": [
        ("max_ledger_bytes", lambda v: v >= 1, "at least 1 byte"),
        ("gc_interval_s", *_POSITIVE_SECONDS),
        ("compaction_key_map_bytes", lambda v: v >= 1, "a positive number of bytes (a compaction's key map)"),
    ],
    "cache": [
        ("readahead_count", lambda v: v >= 1, "at least 1"),
        ("readahead_bytes", lambda v: v >= 1, "at least 1 byte"),
        ("cache_bytes", lambda v: v >= 1, "at least 1 byte"),
    ],
    # (a work queue cannot run without these)
    "delivery": [
        ("ack_timeout_ms", lambda v: 1 <= v <= 0xFFFFFFFF, "a number of milliseconds from 1 to 4294967295"),
        ("shared_window", lambda v: v >= 1, "at least 1 (a shared member's window is never unlimited)"),
        ("max_shared_window", lambda v: v >= 1, "at least 1"),
        ("max_delayed_runs", lambda v: v >= 1, "at least 1"),
        ("message_ttl_ms", lambda v: v >= 0, "0 (none) or more"),
        ("max_filter_bytes_per_user", lambda v: v >= 1, "at least 1 byte"),
        ("max_filter_compile_ms_per_user", lambda v: 1 <= v <= 1000, "milliseconds from 1 to 1000"),
    ],
}


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
    if hub.max_producers < 1:
        raise ConfigError(f"[hub] max_producers = {hub.max_producers}: expected at least 1")
    for key in ("frame_timeout_s", "hello_timeout_s", "client_error_log_interval_s"):
        value = getattr(hub, key)
        if not 0 < value < float("inf"):
            raise ConfigError(f"[hub] {key} = {value}: expected a positive number of seconds")
