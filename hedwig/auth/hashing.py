"""Password hashes: scrypt from the standard library, compared in constant time.

scrypt (RFC 7914) is memory-hard, needs no dependency (hashlib.scrypt is OpenSSL's) and
is what the brief allows beside argon2; argon2-cffi would add a compiled dependency for
no gain a hub needs. A hash is stored as one string that names its parameters, so
stronger parameters can come later without breaking the hashes already written:

    scrypt$<log2 n>$<r>$<p>$<salt, base64>$<key, base64>

n = 2**14, r = 8, p = 1 costs about 16 MiB and tens of milliseconds: the hub verifies on
a thread (never on the reactor), once per connection.
"""

import base64
import functools
import hashlib
import hmac
import os

LOG2_N = 14
R = 8
P = 1
KEY_BYTES = 32
SALT_BYTES = 16
MAX_PASSWORD_BYTES = 1024  # the AUTH request's bound too: hashing a huge input costs the hub
_MAX_LOG2_N = 20  # a hand-edited hash cannot make one check cost more than ~1 GiB
_PREFIX = "scrypt"


class HashError(ValueError):
    """A stored hash that is not one this module writes."""


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _derive(password: bytes, salt: bytes, log2_n: int, r: int, p: int) -> bytes:
    n = 1 << log2_n
    return hashlib.scrypt(
        password, salt=salt, n=n, r=r, p=p, maxmem=2 * 128 * r * n + (1 << 20), dklen=KEY_BYTES
    )


def hash_password(password: str | bytes, *, log2_n: int = LOG2_N, salt: bytes | None = None) -> str:
    """The stored form of `password` with a fresh random salt."""
    raw = password.encode("utf-8") if isinstance(password, str) else bytes(password)
    if not raw:
        raise ValueError("a password may not be empty")
    if len(raw) > MAX_PASSWORD_BYTES:
        raise ValueError(f"a password is at most {MAX_PASSWORD_BYTES} bytes")
    salt = os.urandom(SALT_BYTES) if salt is None else salt
    key = _derive(raw, salt, log2_n, R, P)
    return f"{_PREFIX}${log2_n}${R}${P}${_b64(salt)}${_b64(key)}"


def parse_hash(stored: str) -> tuple[int, int, int, bytes, bytes]:
    """(log2 n, r, p, salt, key) of a stored hash; HashError when it is not one."""
    parts = stored.split("$") if isinstance(stored, str) else []
    if len(parts) != 6 or parts[0] != _PREFIX:
        raise HashError("a password hash reads scrypt$<log2 n>$<r>$<p>$<salt>$<key>")
    try:
        log2_n, r, p = (int(x) for x in parts[1:4])
        salt = base64.b64decode(parts[4], validate=True)
        key = base64.b64decode(parts[5], validate=True)
    except ValueError:
        raise HashError("a password hash has a non-numeric parameter or bad base64") from None
    if not (1 <= log2_n <= _MAX_LOG2_N and 1 <= r <= 32 and 1 <= p <= 16 and salt and len(key) == KEY_BYTES):
        raise HashError(f"password hash parameters out of range (log2 n 1..{_MAX_LOG2_N}, r 1..32, p 1..16)")
    return log2_n, r, p, salt, key


def verify_password(password: bytes, stored: str) -> bool:
    """Whether `password` hashes to `stored` (the comparison takes the same time for any
    wrong key). CPU-heavy: call it off the reactor thread."""
    log2_n, r, p, salt, key = parse_hash(stored)
    if not password or len(password) > MAX_PASSWORD_BYTES:
        return False
    return hmac.compare_digest(_derive(password, salt, log2_n, r, p), key)


@functools.cache
def dummy_hash() -> str:
    """Checked for a user name the file does not hold, so that an unknown name costs the
    same time as a wrong password and answers cannot tell which names exist."""
    return hash_password(b"no such user", salt=b"\0" * SALT_BYTES)
