"""Redirects in a region whose hubs listen for TLS too: the owner is named with its TLS
port ("host:port:tls_port", Hedwig's form), and a client over TLS follows it there."""

from hedwig.client import Client
from hedwig.config.tls import ClientTls
from hedwig.testing.certificates import Authority


def test_a_tls_client_of_one_hub_is_redirected_to_the_owners_tls_port(region, tmp_path):
    ca = Authority(tmp_path / "pki")
    cert, key = ca.issue("hub.test")
    tls = f"[tls]\nenabled = true\nport = 0\ncert_file = {cert}\nkey_file = {key}\nca_file = {ca.cert_file}\n"
    hubs = region(2, conf=tls, tls=True)
    first, second = hubs.hubs
    trust = ClientTls(ca_file=str(ca.cert_file))
    with Client(f"127.0.0.1:{first.tls_port}", tls=trust, max_redirects=1) as client:
        for i in range(4):
            assert client.publish_many(f"tls-{i}", [b"m"]) == [1]
        owners = {client.describe(f"tls-{i}")["owner"] for i in range(4)}
    assert owners == {first.address, second.address}  # so two of them were redirected, over TLS
    with Client(second.address) as plain:  # plain clients are sent to plain ports
        assert {plain.describe(f"tls-{i}")["owner"] for i in range(4)} == owners
