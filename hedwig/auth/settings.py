"""Checks of the [auth] section, called by the configuration loader (hedwig.config)."""

from hedwig.auth.users import UsersFile, UsersFileError
from hedwig.settings import Config, ConfigError


def check_auth_settings(config: Config) -> None:
    """Refuse [auth] settings that cannot work, and a users file that does not read."""
    auth = config.auth
    if auth.failure_delay_s < 0 or auth.failure_delay_s > 60:
        raise ConfigError(f"[auth] failure_delay_s = {auth.failure_delay_s}: expected 0..60")
    if not 1 <= auth.max_concurrent_checks <= 64:
        raise ConfigError(f"[auth] max_concurrent_checks = {auth.max_concurrent_checks}: expected 1..64")
    if not auth.enabled:
        return
    if not auth.users_file:
        raise ConfigError("[auth] enabled needs users_file (create it with `hedwig user add NAME`)")
    try:
        UsersFile.load(auth.users_file)
    except UsersFileError as e:
        raise ConfigError(f"[auth] users_file: {e}") from None
