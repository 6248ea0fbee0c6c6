"""The users file: who may connect, how they prove it, and what they may do.

JSON, so that the operator's tool (`hedwig user`) writes it with the standard library and
a person can still read and edit the permissions by hand:

    {"users": {
       "alice": {"password": "scrypt$14$8$1$...$...",
                 "scram": {"SCRAM-SHA-256": {"salt": "...", "iterations": 4096,
                                             "stored_key": "...", "server_key": "..."},
                           "SCRAM-SHA-512": {...}},
                 "publish": ["orders.*"], "subscribe": ["orders.*", "audit"],
                 "create": ["orders.*"]},
       "ops":   {"password": "scrypt$...", "admin": true},
       "eu":    {"password": "scrypt$...", "region": "eu", "relay_origins": ["eu", "eu-*"]},
       "spark": {"certificates": ["spark.example.com"], "subscribe": ["*"]}}}

Every field is checked when the file is read, so a typo is refused when the hub starts
(or the file is reloaded), never discovered by a refused client. A user needs a password
hash or certificate names (a TLS client certificate naming one of them, verified by
[tls] ca_file, authenticates as the user). "scram" holds, per SCRAM mechanism, what the
Kafka port's SCRAM login checks (hedwig/auth/scram.py), written with the password hash.
The name "anonymous" (no password) holds what
connections that do not authenticate may do when [auth] allow_anonymous is on.
"""

import json
import os
import re
from pathlib import Path

from hedwig.auth.hashing import HashError, parse_hash
from hedwig.auth.principal import ACTIONS, Principal
from hedwig.auth.scram import ScramError, parse_keys
from hedwig.protocol.names import is_user_name

_PATTERN = re.compile(r"^[A-Za-z0-9._*?-]{1,255}$")  # topic and region patterns
_CERT_NAME = re.compile(r"^[A-Za-z0-9.*_-]{1,253}$")
_FIELDS = {"password", "scram", "certificates", "admin", "region", "relay_origins", *ACTIONS}
ANONYMOUS_NAME = "anonymous"
MAX_USERS_FILE_BYTES = 16 * 1024 * 1024


class UsersFileError(ValueError):
    """The users file cannot be read, or holds something this module would not write."""


def _patterns(user: str, key: str, value) -> tuple:
    if not isinstance(value, list) or not all(isinstance(p, str) and _PATTERN.fullmatch(p) for p in value):
        raise UsersFileError(
            f"user {user}: {key} is a list of name patterns ([A-Za-z0-9._-], * and ?), not {value!r}"
        )
    return tuple(value)


def check_user(name: str, record) -> dict:
    """`record` checked field by field (UsersFileError naming what is wrong)."""
    if not is_user_name(name):
        raise UsersFileError(f"{name!r} is not a user name (1-64 of [A-Za-z0-9._@-])")
    if not isinstance(record, dict):
        raise UsersFileError(f"user {name}: a user is an object, not {type(record).__name__}")
    unknown = sorted(set(record) - _FIELDS)
    if unknown:
        raise UsersFileError(f"user {name}: unknown field(s) {', '.join(unknown)}")
    if "password" in record:
        try:
            parse_hash(record["password"])
        except HashError as e:
            raise UsersFileError(f"user {name}: {e}") from None
    if "scram" in record:
        scram = record["scram"]
        if "password" not in record or not isinstance(scram, dict):
            raise UsersFileError(f"user {name}: scram is an object of SCRAM keys, beside a password")
        try:
            for mechanism, keys in scram.items():
                parse_keys(mechanism, keys)
        except ScramError as e:
            raise UsersFileError(f"user {name}: {e}") from None
    certificates = record.get("certificates", [])
    if not isinstance(certificates, list) or not all(
        isinstance(c, str) and _CERT_NAME.fullmatch(c) for c in certificates
    ):
        raise UsersFileError(f"user {name}: certificates is a list of certificate names")
    if "password" not in record and not certificates and name != ANONYMOUS_NAME:
        raise UsersFileError(f"user {name}: needs a password or certificates to authenticate with")
    if name == ANONYMOUS_NAME and ("password" in record or certificates):
        raise UsersFileError(f"user {ANONYMOUS_NAME} stands for connections that do not authenticate")
    if not isinstance(record.get("admin", False), bool):
        raise UsersFileError(f"user {name}: admin is true or false")
    region = record.get("region", "")
    if not isinstance(region, str) or (region and not is_user_name(region)):
        raise UsersFileError(f"user {name}: region is a region name")
    for key in (*ACTIONS, "relay_origins"):
        if key in record:
            _patterns(name, key, record[key])
    if "relay_origins" in record and not region:
        raise UsersFileError(f"user {name}: relay_origins needs region")
    return record


def principal_of(name: str, record: dict) -> Principal:
    region = record.get("region", "")
    return Principal(
        name=name,
        grants={action: tuple(record.get(action, ())) for action in ACTIONS},
        admin=bool(record.get("admin", False)),
        region=region,
        relay_origins=tuple(record.get("relay_origins", [region] if region else [])),
    )


class UsersFile:
    """The users file's content, checked; `load` reads it, `save` writes it atomically
    (readable by its owner only: it holds password hashes)."""

    def __init__(self, users: dict | None = None, path: str | None = None):
        self.path = path
        self.users = {}
        for name, record in (users or {}).items():
            self.users[name] = check_user(name, record)

    @classmethod
    def load(cls, path: str, missing_ok: bool = False) -> "UsersFile":
        file = Path(path)
        if missing_ok and not file.exists():
            return cls({}, path)
        try:
            if file.stat().st_size > MAX_USERS_FILE_BYTES:
                raise UsersFileError(f"{path} is larger than {MAX_USERS_FILE_BYTES} bytes")
            content = json.loads(file.read_text("utf-8"))
        except OSError as e:
            raise UsersFileError(f"cannot read the users file {path}: {e.strerror or e}") from None
        except ValueError as e:
            raise UsersFileError(f"the users file {path} is not JSON: {e}") from None
        if (
            not isinstance(content, dict)
            or set(content) != {"users"}
            or not isinstance(content["users"], dict)
        ):
            raise UsersFileError(f'the users file {path} is an object {{"users": {{name: user, ...}}}}')
        try:
            return cls(content["users"], path)
        except UsersFileError as e:
            raise UsersFileError(f"{path}: {e}") from None

    def save(self, path: str | None = None) -> None:
        target = Path(path or self.path)
        temporary = target.with_name(target.name + ".tmp")
        text = json.dumps({"users": self.users}, indent=2, sort_keys=True) + "\n"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)

    def password_hash(self, name: str) -> str | None:
        record = self.users.get(name)
        return None if record is None else record.get("password")

    def scram_keys(self, name: str, mechanism: str):
        """The user's ScramKeys for `mechanism`, or None (no such user, or no keys)."""
        record = self.users.get(name)
        keys = None if record is None else record.get("scram", {}).get(mechanism)
        return None if keys is None else parse_keys(mechanism, keys)

    def principal(self, name: str) -> Principal | None:
        record = self.users.get(name)
        return None if record is None else principal_of(name, record)

    def principal_for_certificate(self, names) -> Principal | None:
        """The user one of a verified certificate's names is mapped to, if any."""
        wanted = {n.lower() for n in names}
        for user, record in sorted(self.users.items()):
            if wanted.intersection(c.lower() for c in record.get("certificates", ())):
                return self.principal(user)
        return None

    def anonymous(self) -> Principal:
        record = self.users.get(ANONYMOUS_NAME, {})
        return principal_of(ANONYMOUS_NAME, record)

    def put(self, name: str, record: dict) -> None:
        self.users[name] = check_user(name, record)

    def remove(self, name: str) -> bool:
        return self.users.pop(name, None) is not None
