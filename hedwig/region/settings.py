"""The [region] settings, checked when the configuration is read, and relay subscriber ids.

A hierarchy that cannot work is refused before the hub starts, with a sentence naming the
setting: a region naming itself as its parent, a parent without an address (or an
address without a parent), an address that does not parse or is this hub's own. Cycles
through other regions cannot be seen from one configuration file; the link handshake
refuses those (see path.py).
"""

import re

from hedwig.config.settings import Config, ConfigError, check_bounds, read_password_file
from hedwig.config.zookeeper import on_zookeeper
from hedwig.protocol.addresses import parse_addresses

# Relay subscriptions: the neighbour region N relays a topic from this hub as `__region__N`.
RELAY_PREFIX = "__region__"
# Subscriber ids are at most 255 bytes, so a region name may use what the prefix leaves.
MAX_REGION_NAME = 255 - len(RELAY_PREFIX)
_REGION_NAME = re.compile(r"[A-Za-z0-9._-]+")


def late_start(since_us: int | None, margin_ms: int):
    """The SUBSCRIBE start of a relay subscription created after its interest began (the
    link was down then): `margin_ms` ([region] clock_margin_ms, for regions' clocks that
    differ) before that moment; None (the latest) when the interest's time is not known."""
    if not since_us:
        return None
    return ("time", max(0, since_us - margin_ms * 1000))


def relay_subscriber_id(region: str) -> str:
    """The subscriber id under which `region` relays a topic from a neighbour."""
    return RELAY_PREFIX + region


def relay_peer(subscriber_id: str) -> str | None:
    """The region a relay subscriber id belongs to; None for any other subscriber."""
    if subscriber_id.startswith(RELAY_PREFIX):
        return subscriber_id[len(RELAY_PREFIX) :]
    return None


def is_region_name(name: str) -> bool:
    return bool(_REGION_NAME.fullmatch(name)) and len(name.encode("utf-8")) <= MAX_REGION_NAME


def region_name_by_default(config: Config) -> str:
    """[region] name when it is not set: "standalone" for one hub on its own; in a region
    of several hubs on ZooKeeper, the last part of its [zookeeper] root (/hedwig: hedwig),
    which all its hubs share (and which the root records as its region's name)."""
    if not on_zookeeper(config):
        return "standalone"
    root = config.zookeeper.root.strip()
    last = root.rstrip("/").rsplit("/", 1)[-1]
    if not is_region_name(last):
        raise ConfigError(
            f"[region] name is not set and [zookeeper] root = {root} ends in no region name"
            f" (1-{MAX_REGION_NAME} characters of [A-Za-z0-9._-]): set [region] name"
        )
    return last


def check_region_name(name: str, setting: str) -> None:
    if not name:
        raise ConfigError(f"[region] {setting} is empty: name the region")
    if not is_region_name(name):
        raise ConfigError(
            f"[region] {setting} = {name!r}: region names are 1-{MAX_REGION_NAME} characters of "
            "[A-Za-z0-9._-]"
        )


def read_parent_password(region) -> str:
    """The password of [region] parent_user, from parent_password_file (its first line)."""
    if not region.parent_password_file:
        raise ConfigError("[region] parent_user needs parent_password_file (a file holding its password)")
    return read_password_file("[region] parent_password_file", region.parent_password_file)


def check_region_settings(config: Config) -> None:
    """Raise ConfigError (one sentence naming the setting) for a [region] that cannot work."""
    region = config.region
    check_region_name(region.name, "name")
    if region.parent:
        check_region_name(region.parent, "parent")
        if region.parent == region.name:
            raise ConfigError(
                f"[region] parent = {region.parent!r}: region {region.name} names itself as its parent; "
                "the root region has no parent (leave parent and parent_address empty)"
            )
        if not region.parent_address.strip():
            raise ConfigError(
                f"[region] parent = {region.parent!r} needs parent_address: host:port of the parent "
                "region's hub (several separated by commas)"
            )
        try:
            addresses = parse_addresses(region.parent_address)
        except ValueError as e:
            raise ConfigError(f"[region] parent_address = {region.parent_address!r}: {e}") from None
        hub = config.hub
        if hub.port and (hub.host, hub.port) in addresses:
            raise ConfigError(
                f"[region] parent_address = {region.parent_address!r} names this hub's own address "
                f"{hub.host}:{hub.port}: a region cannot relay from itself"
            )
        if region.parent_user:
            read_parent_password(region)
        elif region.parent_password_file:
            raise ConfigError("[region] parent_password_file is set but parent_user is not")
    elif region.parent_address.strip():
        raise ConfigError(
            f"[region] parent_address = {region.parent_address!r} is set but parent is not: name the "
            "parent region too (both stay empty for the root)"
        )
    check_bounds("region", region, [("retry_backoff_ms", lambda ms: ms > 0, "> 0")])
    if region.max_retry_backoff_ms < region.retry_backoff_ms:
        raise ConfigError(
            f"[region] max_retry_backoff_ms = {region.max_retry_backoff_ms} is below retry_backoff_ms = "
            f"{region.retry_backoff_ms}"
        )
    check_bounds(
        "region",
        region,
        [
            ("relay_inflight_bytes", lambda size: size >= 64 * 1024, ">= 65536"),
            ("clock_margin_ms", lambda ms: ms >= 0, ">= 0"),
            ("link_timeout_s", lambda seconds: seconds > 0, "> 0"),
        ],
    )
