"""Two ways in without AUTH, on a real hub process with [auth] on: a TLS client
certificate the users file maps to a user authenticates as that user; with
allow_anonymous, a connection that sends no AUTH acts as the user "anonymous" and may do
what the file grants that name, and nothing else."""

import json

import pytest

from hedwig.client import Client
from hedwig.client.errors import NotAuthorized
from hedwig.config.tls import ClientTls
from hedwig.testing.certificates import Authority
from hedwig.testing.hubprocess import HubProcess

USERS = {
    "carol": {"certificates": ["carol.client"], "publish": ["c.*", "pub.*"], "create": ["c.*", "pub.*"]},
    "anonymous": {"subscribe": ["pub.*"]},
}


@pytest.fixture(scope="module")
def open_hub(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cert-hub")
    ca = Authority(directory / "ca")
    cert, key = ca.issue("hub.test")
    users = directory / "users.json"
    users.write_text(json.dumps({"users": USERS}))
    conf = directory / "hub.conf"
    conf.write_text(
        f"[tls]\nenabled = true\nport = 0\ncert_file = {cert}\nkey_file = {key}\nca_file = {ca.cert_file}\n"
        f"[auth]\nenabled = true\nusers_file = {users}\nallow_anonymous = true\n"
    )
    with HubProcess(directory / "data", 0, "--conf", str(conf), tls=True) as process:
        process.ca = ca
        process.tls_address = f"127.0.0.1:{process.tls_port}"
        yield process


def test_a_mapped_client_certificate_authenticates_as_its_user(open_hub):
    cert, key = open_hub.ca.issue("carol.client")
    tls = ClientTls(ca_file=str(open_hub.ca.cert_file), cert_file=str(cert), key_file=str(key))
    with Client(open_hub.tls_address, tls=tls) as carol:
        assert carol.publish("c.cert", b"by certificate") == 1
        with pytest.raises(NotAuthorized):
            carol.publish("x.elsewhere", b"no")
    assert "authenticated as carol by its client certificate" in open_hub.output()


def test_an_anonymous_connection_has_the_anonymous_users_permissions_only(open_hub):
    cert, key = open_hub.ca.issue("carol.client")
    tls = ClientTls(ca_file=str(open_hub.ca.cert_file), cert_file=str(cert), key_file=str(key))
    with Client(open_hub.tls_address, tls=tls) as carol:
        carol.publish("pub.news", b"for everyone")
    with Client(open_hub.address) as anonymous:  # plain TCP, no certificate, no AUTH
        assert anonymous.describe("pub.news")["last_seq"] == 1
        with pytest.raises(NotAuthorized):
            anonymous.publish("pub.news", b"no")
        with pytest.raises(NotAuthorized):
            anonymous.describe("c.cert")
