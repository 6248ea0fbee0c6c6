"""The [tls] settings and the TLS ones of [region], checked when the configuration is read.

Every file named is read and every certificate parsed before the hub starts, so a wrong
path, a key that is not the certificate's, or a missing pyOpenSSL is one sentence and
exit status 2, never a failure at the first connection or the first link attempt.
"""

from hedwig.config.settings import Config, ConfigError
from hedwig.config.tls import INSTALL_HINT, ClientTls, TlsError, server_options, tls_available


def parent_tls(config: Config) -> ClientTls | None:
    """How the link reaches the parent over TLS; None for a plain link."""
    if not config.region.parent_tls:
        return None
    tls = config.tls
    return ClientTls(
        ca_file=tls.ca_file,
        cert_file=tls.cert_file,
        key_file=tls.key_file,
        server_name=config.region.parent_tls_name,
    )


def _needs_tls_library(setting: str) -> None:
    if not tls_available():
        raise ConfigError(f"{setting}: {INSTALL_HINT}")


def check_tls_settings(config: Config) -> None:
    """Raise ConfigError (one sentence naming the setting) for TLS settings that cannot work."""
    tls, region, hub = config.tls, config.region, config.hub
    if tls.require_client_cert and not tls.ca_file:
        raise ConfigError(
            "[tls] require_client_cert = true needs ca_file: the authorities that client certificates "
            "must verify against"
        )
    if tls.key_file and not tls.cert_file:
        raise ConfigError(f"[tls] key_file = {tls.key_file!r} is set without cert_file")
    if tls.enabled:
        _needs_tls_library("[tls] enabled = true")
        if not tls.cert_file:
            raise ConfigError("[tls] enabled = true needs cert_file (and key_file, unless the key is in it)")
        if not 0 <= tls.port <= 65535:
            raise ConfigError(f"[tls] port = {tls.port}: expected 0-65535")
        if tls.port and tls.port == hub.port:
            raise ConfigError(f"[tls] port = {tls.port} is [hub] port too: the TLS listener needs its own")
        try:
            server_options(tls)
        except TlsError as e:
            raise ConfigError(f"[tls] {e}") from None
    if region.parent_tls_name and not region.parent_tls:
        raise ConfigError(
            f"[region] parent_tls_name = {region.parent_tls_name!r} is set but parent_tls is not"
        )
    if region.parent_tls:
        if not region.parent:
            raise ConfigError("[region] parent_tls = true, but this region has no parent")
        _needs_tls_library("[region] parent_tls = true")
        try:
            parent_tls(config).check()
        except TlsError as e:
            raise ConfigError(f"[region] parent_tls: [tls] {e}") from None
    if region.require_child_certificate and not (tls.enabled and tls.ca_file):
        raise ConfigError(
            "[region] require_child_certificate = true needs [tls] enabled = true and a ca_file: children "
            "link over TLS with a certificate that verifies against it"
        )
