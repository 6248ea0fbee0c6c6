"""The AUTH request: a user name and password, sent after HELLO on a hub with [auth] on.

    AUTH request:  str8 user   u16 length + password bytes (1..1024)
    AUTH payload:  str8 the user the connection now acts as

The password travels as the client typed it (as SASL PLAIN does), so a hub reachable
over untrusted networks takes AUTH on its [tls] listener. Every field is range-checked
here, where it is decoded: a name outside the users file's rules or a password longer
than the hub would hash is MALFORMED_REQUEST, before any work is done for it.
"""

from typing import NamedTuple

from hedwig.protocol.layouts import U16, RequestRefused, expect_end, read_str8, str8, unpack_field
from hedwig.protocol.names import is_user_name, printable
from hedwig.protocol.status import Status

MAX_PASSWORD_BYTES = 1024


class Auth(NamedTuple):
    user: str
    password: bytes


def encode_auth(user: str, password: str | bytes) -> bytes:
    raw = password.encode("utf-8") if isinstance(password, str) else bytes(password)
    if not 1 <= len(raw) <= MAX_PASSWORD_BYTES:
        raise ValueError(f"a password is 1 to {MAX_PASSWORD_BYTES} bytes")
    return str8(user) + U16.pack(len(raw)) + raw


def decode_auth(body) -> Auth:
    raw_user, offset = read_str8(body, 0, "user name")
    try:
        user = raw_user.decode("utf-8")
    except UnicodeDecodeError:
        raise RequestRefused(Status.MALFORMED_REQUEST, "the AUTH user name is not UTF-8") from None
    if not user:
        raise RequestRefused(Status.MALFORMED_REQUEST, "AUTH names no user")
    if not is_user_name(user):
        shown = printable(user, 64)
        why = f"AUTH user name '{shown}' is not 1-64 of [A-Za-z0-9._@-]"
        raise RequestRefused(Status.MALFORMED_REQUEST, why)
    (length,) = unpack_field(U16, body, offset, "AUTH")
    offset += U16.size
    if not 1 <= length <= MAX_PASSWORD_BYTES:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"an AUTH password is 1 to {MAX_PASSWORD_BYTES} bytes")
    end = offset + length
    if end > len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, "the AUTH password runs past the end of the body")
    expect_end(body, end, "AUTH")
    return Auth(user, bytes(body[offset:end]))


def encode_auth_reply(user: str) -> bytes:
    return str8(user)


def decode_auth_reply(payload) -> str:
    raw, offset = read_str8(payload, 0, "user name")
    expect_end(payload, offset, "AUTH reply")
    return raw.decode("utf-8", "replace")


class Credentials(NamedTuple):
    """What a client authenticates with (the AUTH request after HELLO); its repr never
    shows the password, so a logged or printed client does not leak it."""

    user: str
    password: str

    def __repr__(self) -> str:
        return f"Credentials(user={self.user!r}, password=...)"

    def request_body(self) -> bytes:
        return encode_auth(self.user, self.password)
