"""Checks of the [auth] section, called by the configuration loader (hedwig.config.loading)."""

from hedwig.auth.users import UsersFile, UsersFileError
from hedwig.config.settings import Config, ConfigError, read_password_file
from hedwig.protocol.auth_request import Credentials


def check_auth_settings(config: Config) -> None:
    """Refuse [auth] settings that cannot work, and a users file that does not read."""
    auth = config.auth
    if auth.failure_delay_s < 0 or auth.failure_delay_s > 60:
        raise ConfigError(f"[auth] failure_delay_s = {auth.failure_delay_s}: expected 0..60")
    if not 0 < auth.auth_timeout_s <= 3600:
        raise ConfigError(f"[auth] auth_timeout_s = {auth.auth_timeout_s}: expected 0 < s <= 3600")
    for key, low, high in (
        ("max_concurrent_checks", 1, 64),
        ("max_waiting_checks", 0, 100_000),
        ("failure_window_s", 1, 86_400),
        ("max_failures_per_source", 1, 1_000_000),
        ("max_failures_per_user", 1, 1_000_000),
        ("max_unauthenticated", 1, 1_000_000),
    ):
        value = getattr(auth, key)
        if not low <= value <= high:
            raise ConfigError(f"[auth] {key} = {value}: expected {low}..{high}")
    if auth.hub_user:
        hub_credentials(config)  # (refused here, at load, rather than at the first dead letter)
    if not auth.enabled:
        return
    if not auth.users_file:
        raise ConfigError("[auth] enabled needs users_file (create it with `hedwig user add NAME`)")
    try:
        UsersFile.load(auth.users_file)
    except UsersFileError as e:
        raise ConfigError(f"[auth] users_file: {e}") from None


def hub_credentials(config: Config):
    """The Credentials this hub authenticates with towards the other hubs of its region
    ([auth] hub_user and hub_password_file), or None when hub_user is not set."""
    auth = config.auth
    if not auth.hub_user:
        return None
    if not auth.hub_password_file:
        raise ConfigError("[auth] hub_user needs hub_password_file (a file holding its password)")
    return Credentials(auth.hub_user, read_password_file("[auth] hub_password_file", auth.hub_password_file))
