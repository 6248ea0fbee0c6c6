"""The [kafka] settings, checked when the configuration is read (one sentence naming the
setting at fault)."""

from hedwig.config.files import check_port
from hedwig.config.settings import Config, ConfigError

# The smallest request bound that still holds a client's first requests.
MIN_REQUEST_BYTES = 64 * 1024


def check_kafka_settings(config: Config) -> None:
    kafka = config.kafka
    check_port(kafka.port, f"[kafka] port = {kafka.port}")
    if kafka.port and kafka.port in (config.hub.port, config.tls.port if config.tls.enabled else None):
        raise ConfigError(
            f"[kafka] port = {kafka.port} is the hub's port too: the Kafka listener needs its own"
        )
    if kafka.tls and not config.tls.enabled:
        raise ConfigError(
            "[kafka] tls = true takes [tls]'s certificate: set [tls] enabled = true (and its cert_file)"
        )
    if kafka.max_request_bytes and kafka.max_request_bytes < MIN_REQUEST_BYTES:
        raise ConfigError(
            f"[kafka] max_request_bytes = {kafka.max_request_bytes}: expected 0 ([hub] max_frame_bytes)"
            f" or at least {MIN_REQUEST_BYTES}"
        )
    if kafka.produced_cache_bytes < 0:
        raise ConfigError(
            f"[kafka] produced_cache_bytes = {kafka.produced_cache_bytes}: expected 0 (none kept) or more"
        )
    if max_request_bytes(config) + 4 > config.hub.max_partial_request_bytes:
        raise ConfigError(
            f"[kafka] max_request_bytes = {kafka.max_request_bytes}: a request must fit [hub]"
            f" max_partial_request_bytes ({config.hub.max_partial_request_bytes})"
        )


def max_request_bytes(config: Config) -> int:
    """The largest Kafka request the hub reads: [kafka] max_request_bytes, or [hub]
    max_frame_bytes when that is 0."""
    return config.kafka.max_request_bytes or config.hub.max_frame_bytes


def listen_host(config: Config) -> str:
    return config.kafka.host.strip() or config.hub.host
