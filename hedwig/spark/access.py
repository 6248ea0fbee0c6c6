"""How the Spark source and the drain reach their hubs: TLS and credentials, as the CLI
does (hedwig.commands' --tls options, --user and $HEDWIG_PASSWORD).

Data source options (case-insensitive, as every Spark option):

    tls          true | false: speak TLS (hub names the hubs' [tls] ports); implied by
                 any of the next four
    tlsCa        PEM file of the authorities that sign the hubs' certificates
    tlsCert      PEM client certificate to present (and tlsKey, its key, if apart)
    tlsKey
    tlsName      the name the hubs' certificates carry (default: each host)
    user         authenticate as this user (AUTH after HELLO)
    password     its password; without it, $HEDWIG_PASSWORD where the query is planned

The files must exist at the same paths on every Spark worker. The password travels to
the workers inside the source's (pickled) options; it is kept out of their repr, but an
option given to `spark.read.option("password", ...)` is the caller's to protect: prefer
$HEDWIG_PASSWORD on the driver.
"""

import os
from dataclasses import dataclass, field

from hedwig.protocol.auth_request import MAX_PASSWORD_BYTES, Credentials

PASSWORD_VARIABLE = "HEDWIG_PASSWORD"
OPTION_NAMES = ("tls", "tlsCa", "tlsCert", "tlsKey", "tlsName", "user", "password")


@dataclass(frozen=True)
class HubAccess:
    tls: bool = False
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    tls_name: str = ""
    user: str = ""
    password: str = field(default="", repr=False)

    def client_tls(self):
        """A hedwig.config.tls.ClientTls, or None for plain TCP."""
        if not self.tls:
            return None
        from hedwig.config.tls import ClientTls

        return ClientTls(
            ca_file=self.tls_ca, cert_file=self.tls_cert, key_file=self.tls_key, server_name=self.tls_name
        )

    def client_options(self) -> dict:
        """Keyword arguments of hedwig.client.Client for these settings."""
        credentials = Credentials(self.user, self.password) if self.user else None
        return {"tls": self.client_tls(), "credentials": credentials}

    def source_options(self) -> dict:
        """The data source options that say the same (for the drain's reader)."""
        options = {}
        if self.tls:
            options.update(tls="true", tlsCa=self.tls_ca, tlsCert=self.tls_cert, tlsKey=self.tls_key)
            options["tlsName"] = self.tls_name
        if self.user:
            options.update(user=self.user, password=self.password)
        return options


def parse_access(given: dict, error) -> HubAccess:
    """HubAccess from the source's options (lower-cased names -> strings); `error(message)`
    makes the exception to raise for a bad one."""
    files = {name: given.get(name.lower(), "") for name in ("tlsCa", "tlsCert", "tlsKey", "tlsName")}
    raw_tls = given.get("tls", "").strip().lower()
    if raw_tls not in ("", "true", "false"):
        raise error(f"option 'tls' = {given['tls']!r}: expected true or false")
    tls = raw_tls == "true" or any(files.values())
    for name in ("tlsCa", "tlsCert", "tlsKey"):
        if files[name] and not os.path.isfile(files[name]):
            raise error(f"option {name!r} = {files[name]!r}: no such file")
    user = given.get("user", "")
    password = given.get("password")
    if user:
        if password is None:
            password = os.environ.get(PASSWORD_VARIABLE)
        if not password or len(password.encode("utf-8")) > MAX_PASSWORD_BYTES:
            raise error(
                f"option 'user' = {user!r} needs option 'password' or ${PASSWORD_VARIABLE} (1 to 1024 bytes)"
            )
    elif password is not None:
        raise error("option 'password' needs option 'user'")
    return HubAccess(
        tls=tls,
        tls_ca=files["tlsCa"],
        tls_cert=files["tlsCert"],
        tls_key=files["tlsKey"],
        tls_name=files["tlsName"],
        user=user,
        password=password or "",
    )


def access_from_args(args) -> HubAccess:
    """The drain's HubAccess from the command line (the CLI's TLS options and --user)."""
    from hedwig.auth.client_options import credentials_from

    credentials = credentials_from(args)
    files = {name: getattr(args, name, "") or "" for name in ("tls_ca", "tls_cert", "tls_key", "tls_name")}
    return HubAccess(
        tls=bool(getattr(args, "tls", False)) or any(files.values()),
        **files,
        user=credentials.user if credentials else "",
        password=credentials.password if credentials else "",
    )
