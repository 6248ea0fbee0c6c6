"""Hub configuration: hub.conf read over the defaults of hedwig.settings, then checked.

Unknown sections or keys are errors, so a typo never silently leaves a default in force.
The region and TLS sections are checked by their own packages (hedwig.region.settings,
hedwig.tls_settings), which take the setting classes from hedwig.settings, not from here:
so this loader imports them and nothing imports it back.
"""

import configparser
import dataclasses
from pathlib import Path

from hedwig.observe.settings import check_http_settings
from hedwig.auth.settings import check_auth_settings
from hedwig.region.settings import check_region_settings
from hedwig.settings import (
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
    RegionSettings,
    TlsSettings,
)
from hedwig.tls_settings import check_tls_settings

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
    "RegionSettings",
    "TlsSettings",
    "load_config",
]


def _convert(section: str, key: str, raw: str, kind):
    try:
        if kind is bool:
            return raw.strip().lower() in ("1", "true", "yes", "on")
        if kind is int:
            return int(raw.strip().replace("_", ""), 0)
        return kind(raw.strip())
    except ValueError:
        raise ConfigError(f"[{section}] {key} = {raw!r}: expected {kind.__name__}") from None


def load_config(path=None, overrides=None) -> Config:
    """Read `path` (if given) over the defaults, then apply `overrides` {"hub.port": 4081}."""
    config = Config()
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#", ";"))
    if path is not None:
        if not Path(path).is_file():
            raise ConfigError(f"configuration file {path} does not exist")
        parser.read(path)
    for section in parser.sections():
        if not hasattr(config, section):
            raise ConfigError(f"unknown section [{section}] in {path}")
        settings = getattr(config, section)
        kinds = {f.name: type(f.default) for f in dataclasses.fields(settings)}
        for key, raw in parser.items(section):
            if key not in kinds:
                raise ConfigError(f"unknown setting [{section}] {key} in {path}")
            setattr(settings, key, _convert(section, key, raw, kinds[key]))
    for dotted, value in (overrides or {}).items():
        section, key = dotted.split(".", 1)
        settings = getattr(config, section)
        if not hasattr(settings, key):
            raise ConfigError(f"unknown setting {dotted}")
        setattr(settings, key, value)
    if config.ledger.fsync not in ("never", "interval", "always"):
        raise ConfigError(f"[ledger] fsync = {config.ledger.fsync!r}: expected never, interval or always")
    _check_request_limits(config.hub)
    check_region_settings(config)
    check_tls_settings(config)
    check_http_settings(config)
    check_auth_settings(config)
    return config


def _check_request_limits(hub: HubSettings) -> None:
    """The partial-request budget must hold the largest frame (or that frame could never
    be read), and every timeout must be a positive time: none of them may be switched
    off, as each bounds what a client can make the hub keep."""
    if hub.max_partial_request_bytes < hub.max_frame_bytes + 4:
        raise ConfigError(
            f"[hub] max_partial_request_bytes = {hub.max_partial_request_bytes}: must hold the largest"
            f" frame, max_frame_bytes ({hub.max_frame_bytes}) plus its 4-byte length"
        )
    for key in ("frame_timeout_s", "hello_timeout_s", "client_error_log_interval_s"):
        value = getattr(hub, key)
        if not 0 < value < float("inf"):
            raise ConfigError(f"[hub] {key} = {value}: expected a positive number of seconds")
