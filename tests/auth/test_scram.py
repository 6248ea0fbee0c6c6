"""The server side of a SCRAM exchange (hedwig.auth.scram), without a hub: RFC 7677's
SCRAM-SHA-256 example, and what a proof that is wrong or a message that is not SCRAM's
gets."""

import base64
import hashlib
import hmac

import pytest

from hedwig.auth.scram import ScramError, ScramServer, derive_keys, mock_keys

# RFC 7677, section 3: user "user", password "pencil".
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _rfc_server():
    server = ScramServer("SCRAM-SHA-256", nonce=SERVER_NONCE)
    assert server.client_first(CLIENT_FIRST) == "user"
    assert server.server_first(derive_keys(b"pencil", "SCRAM-SHA-256", salt=SALT)) == SERVER_FIRST
    return server


def test_rfc_7677_exchange():
    assert _rfc_server().client_final(CLIENT_FINAL) == SERVER_FINAL


def test_a_proof_of_another_password_is_wrong():
    server = ScramServer("SCRAM-SHA-256", nonce=SERVER_NONCE)
    server.client_first(CLIENT_FIRST)
    server.server_first(derive_keys(b"pencil2", "SCRAM-SHA-256", salt=SALT))
    assert server.client_final(CLIENT_FINAL) is None


def _client_final(mechanism, password, client_first_bare, server_first, nonce=None):
    """A SCRAM client's last message (and the server-final it expects), as RFC 5802
    section 3 computes them; `nonce`: sent instead of the server-first's."""
    digest = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    fields = dict(part.split("=", 1) for part in server_first.decode().split(","))
    salted = hashlib.pbkdf2_hmac(digest, password, base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.digest(salted, b"Client Key", digest)
    without_proof = f"c=biws,r={fields['r'] if nonce is None else nonce}"
    auth_message = f"{client_first_bare},{server_first.decode()},{without_proof}".encode()
    signature = hmac.digest(hashlib.new(digest, client_key).digest(), auth_message, digest)
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    expected = hmac.digest(hmac.digest(salted, b"Server Key", digest), auth_message, digest)
    final = f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
    return final, b"v=" + base64.b64encode(expected)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_an_exchange_with_a_user_name_holding_escapes(mechanism):
    server = ScramServer(mechanism)
    bare = "n=a=2Cb=3Dc,r=client-nonce"
    assert server.client_first(b"n,," + bare.encode()) == "a,b=c"
    first = server.server_first(derive_keys(b"secret", mechanism))
    final, server_final = _client_final(mechanism, b"secret", bare, first)
    assert server.client_final(final) == server_final


@pytest.mark.parametrize(
    "message, why",
    [
        (b"p=tls-unique,,n=user,r=x", "channel binding"),
        (b"n,a=other,n=user,r=x", "another user"),
        (b"n,,n=us=er,r=x", "=2C nor =3D"),
        (b"n,,r=x,n=user", "n=user,r=nonce"),
        (b"n,,n=user,r=x,tokenauth=true", "delegation tokens"),
        (b"n,,n=user", "gs2-header"),
        (b"\xff,,n=user,r=x", "UTF-8"),
    ],
)
def test_a_client_first_message_that_is_not_scram_is_refused(message, why):
    with pytest.raises(ScramError, match=why):
        ScramServer("SCRAM-SHA-256").client_first(message)


@pytest.mark.parametrize(
    "final, why",
    [
        (CLIENT_FINAL.replace(b"c=biws", b"c=eSws"), "channel binding"),
        (CLIENT_FINAL.replace(b"k0,p=", b"k1,p="), "nonce"),
        (b"c=biws,r=x", "c=binding,r=nonce,p=proof"),
        (CLIENT_FINAL[:-3] + b"!!!", "base64"),
    ],
)
def test_a_client_final_message_that_does_not_follow_is_refused(final, why):
    with pytest.raises(ScramError, match=why):
        _rfc_server().client_final(final)


def test_a_name_without_keys_gets_the_same_salt_each_time_and_no_proof_passes():
    first, again = mock_keys("SCRAM-SHA-256", "nobody"), mock_keys("SCRAM-SHA-256", "nobody")
    assert first.salt == again.salt and first.iterations == 4096
    assert mock_keys("SCRAM-SHA-256", "somebody").salt != first.salt
    server = ScramServer("SCRAM-SHA-256", nonce=SERVER_NONCE)
    server.client_first(CLIENT_FIRST)
    server.server_first(first)
    assert server.client_final(CLIENT_FINAL) is None


def test_the_nonce_librdkafka_2_0_sends_is_taken_as_kafkas_brokers_take_it():
    """librdkafka 2.0 (Debian's kcat) sends r=<client nonce><whole nonce> in client-final;
    Kafka's brokers accept it (the nonce ends with the exchange's), and so does the hub,
    the proof signing the message as sent."""
    server = ScramServer("SCRAM-SHA-256")
    bare = "n=user,r=abc"
    server.client_first(b"n,," + bare.encode())
    first = server.server_first(derive_keys(b"pencil", "SCRAM-SHA-256"))
    nonce = first.decode().split(",")[0][2:]
    final, server_final = _client_final("SCRAM-SHA-256", b"pencil", bare, first, "abc" + nonce)
    assert server.client_final(final) == server_final
    final, _ = _client_final("SCRAM-SHA-256", b"pencil", bare, first, "xyz" + nonce)
    with pytest.raises(ScramError, match="nonce"):
        server.client_final(final)
