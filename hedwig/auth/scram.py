"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): the keys the users file keeps
per mechanism, and the server side of one exchange.

The users file never holds what a SCRAM client sends (a proof valid once) nor the
password: per mechanism it keeps the salt, the iteration count and the PBKDF2-derived
StoredKey and ServerKey, written by `hedwig user add` / `passwd` when it is given the
password. With them the hub checks a proof with two HMACs (no PBKDF2 on the hub: the
client pays the iterations), and proves itself to the client with the ServerSignature.
The password is taken as its UTF-8 bytes, without SASLprep, as Kafka's brokers do.

A name with no keys (no such user, or one whose password was set before SCRAM was
served) is answered with a salt derived from the name and a process secret, so the
server-first message does not tell which names exist; its proof then never matches.
"""

import base64
import hashlib
import hmac
import os
import secrets
from typing import NamedTuple

ITERATIONS = 4096  # RFC 7677's minimum, and Kafka's default
MAX_ITERATIONS = 1 << 24  # (the client pays them: a hand-edited file may ask for more, not without bound)
SALT_BYTES = 16
DIGESTS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = tuple(DIGESTS)
_KEY_FIELDS = {"salt", "iterations", "stored_key", "server_key"}
_MOCK_SECRET = secrets.token_bytes(32)


class ScramError(ValueError):
    """A SCRAM message that is not one RFC 5802 allows, or keys that are not ours."""


class ScramKeys(NamedTuple):
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise ScramError(f"{what} is not base64") from None


def derive_keys(password: bytes, mechanism: str, *, salt: bytes | None = None,
                iterations: int = ITERATIONS) -> ScramKeys:  # fmt: skip
    """The keys of `password` for `mechanism` (a fresh random salt unless given)."""
    digest = DIGESTS[mechanism]
    salt = os.urandom(SALT_BYTES) if salt is None else salt
    salted = hashlib.pbkdf2_hmac(digest, password, salt, iterations)
    client_key = hmac.digest(salted, b"Client Key", digest)
    stored_key = hashlib.new(digest, client_key).digest()
    return ScramKeys(salt, iterations, stored_key, hmac.digest(salted, b"Server Key", digest))


def stored_keys(password: str | bytes) -> dict:
    """The users file's "scram" field for `password`: every mechanism's keys."""
    raw = password.encode("utf-8") if isinstance(password, str) else bytes(password)
    stored = {}
    for mechanism in MECHANISMS:
        keys = derive_keys(raw, mechanism)
        stored[mechanism] = {
            "salt": _b64(keys.salt),
            "iterations": keys.iterations,
            "stored_key": _b64(keys.stored_key),
            "server_key": _b64(keys.server_key),
        }
    return stored


def parse_keys(mechanism: str, record) -> ScramKeys:
    """The keys of a users file's "scram" entry; ScramError when they are not ones
    `stored_keys` writes."""
    if mechanism not in DIGESTS:
        raise ScramError(f"{mechanism!r} is not a SCRAM mechanism served ({', '.join(MECHANISMS)})")
    if not isinstance(record, dict) or set(record) != _KEY_FIELDS:
        raise ScramError(f"{mechanism} keys are an object of {', '.join(sorted(_KEY_FIELDS))}")
    iterations = record["iterations"]
    if type(iterations) is not int or not ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ScramError(f"{mechanism} iterations is a whole number {ITERATIONS}..{MAX_ITERATIONS}")
    size = hashlib.new(DIGESTS[mechanism]).digest_size
    salt, stored_key, server_key = (
        _unb64(record[field], f"{mechanism} {field}") if isinstance(record[field], str) else b""
        for field in ("salt", "stored_key", "server_key")
    )
    if not salt or len(stored_key) != size or len(server_key) != size:
        raise ScramError(f"{mechanism} keys: a salt, and keys of {size} bytes (base64)")
    return ScramKeys(salt, iterations, stored_key, server_key)


def mock_keys(mechanism: str, user: str) -> ScramKeys:
    """Keys for a name that has none: the same salt for the name every time (in this
    process), and a StoredKey no proof matches."""
    digest = DIGESTS[mechanism]
    salt = hmac.digest(_MOCK_SECRET, f"{mechanism}\0{user}".encode(), digest)[:SALT_BYTES]
    size = hashlib.new(digest).digest_size
    return ScramKeys(salt, ITERATIONS, secrets.token_bytes(size), secrets.token_bytes(size))


def _decode_name(text: str) -> str:
    """A saslname: "," and "=" are sent as =2C and =3D, any other "=" is an error."""
    if "=" in text.replace("=2C", "").replace("=3D", ""):
        raise ScramError("a user name with an '=' that is neither =2C nor =3D")
    return text.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """The server side of one SCRAM exchange: `client_first` (the user named),
    `server_first` (with that user's keys, or mock_keys), `client_final` (the
    server-final message when the proof is right, None when it is wrong). A message that
    is not SCRAM's raises ScramError. `nonce` is the server's part of the nonce
    (default: 24 random bytes, urlsafe base64)."""

    def __init__(self, mechanism: str, nonce: str | None = None):
        self.mechanism = mechanism
        self._digest = DIGESTS[mechanism]
        self._server_nonce = secrets.token_urlsafe(24) if nonce is None else nonce
        self.user = None
        self._gs2_header = self._client_first_bare = self._server_first = None
        self._client_nonce = self._nonce = None
        self._keys = None

    def client_first(self, message: bytes) -> str:
        try:
            text = message.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("a SCRAM message is UTF-8") from None
        parts = text.split(",", 2)
        if len(parts) != 3:
            raise ScramError("a client-first message is gs2-header,n=user,r=nonce")
        flag, authzid, bare = parts
        if flag.startswith("p="):
            raise ScramError("channel binding is not served")
        if flag not in ("n", "y") or (authzid and not authzid.startswith("a=")):
            raise ScramError("a client-first message starts n,, or y,, (or a=authzid)")
        attributes = bare.split(",")
        if len(attributes) < 2 or not attributes[0].startswith("n=") or not attributes[1].startswith("r="):
            raise ScramError("a client-first message is gs2-header,n=user,r=nonce")
        user = _decode_name(attributes[0][2:])
        nonce = attributes[1][2:]
        if not user or not nonce or not nonce.isprintable() or not nonce.isascii():
            raise ScramError("a client-first message names a user and a printable nonce")
        for extension in attributes[2:]:
            if extension.startswith("tokenauth="):
                raise ScramError("delegation tokens are not served")
        if authzid and _decode_name(authzid[2:]) != user:
            raise ScramError("acting as another user is not served")
        self._gs2_header = f"{flag},{authzid},"
        self._client_first_bare = bare
        self._client_nonce = nonce
        self._nonce = nonce + self._server_nonce
        self.user = user
        return user

    def server_first(self, keys: ScramKeys) -> bytes:
        self._keys = keys
        self._server_first = f"r={self._nonce},s={_b64(keys.salt)},i={keys.iterations}"
        return self._server_first.encode("ascii")

    def client_final(self, message: bytes) -> bytes | None:
        try:
            text = message.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("a SCRAM message is UTF-8") from None
        without_proof, separator, proof = text.rpartition(",p=")
        attributes = without_proof.split(",")
        if not separator or len(attributes) < 2 or not attributes[0].startswith("c="):
            raise ScramError("a client-final message is c=binding,r=nonce,p=proof")
        if _unb64(attributes[0][2:], "the channel binding") != self._gs2_header.encode("utf-8"):
            raise ScramError("the channel binding is not the client-first message's")
        # librdkafka before 2.x sends the client's nonce again before the whole nonce;
        # Kafka's brokers accept any nonce ending with the exchange's, this the two forms.
        if attributes[1] not in (f"r={self._nonce}", f"r={self._client_nonce}{self._nonce}"):
            raise ScramError("the nonce is not this exchange's")
        proof = _unb64(proof, "the proof")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        keys = self._keys
        signature = hmac.digest(keys.stored_key, auth_message, self._digest)
        if len(proof) != len(signature):
            return None
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._digest, client_key).digest(), keys.stored_key):
            return None
        return b"v=" + _b64(hmac.digest(keys.server_key, auth_message, self._digest)).encode("ascii")
