"""TLS settings and handshakes: what hedwig.config.tls builds from PEM files, checked against real
certificates (tests/tls_certificates.py) in real TLS handshakes run in memory
(twisted.test.iosim pumps the bytes between a server and a client TLS protocol)."""

import sys

import pytest
from twisted.internet.protocol import Factory, Protocol
from twisted.protocols.tls import TLSMemoryBIOFactory
from twisted.test.iosim import connectedServerAndClient

from hedwig.config.loading import ConfigError, TlsSettings, load_config
from hedwig.config.tls import (
    ClientTls,
    TlsError,
    certificate_names,
    handshake_failure,
    load_identity,
    peer_certificate,
    server_options,
)
from hedwig.region.children import unauthenticated
from hedwig.testing.certificates import Authority


@pytest.fixture
def ca(tmp_path):
    return Authority(tmp_path / "ca")


class Recorder(Protocol):
    lost = None

    def connectionLost(self, reason=None):
        self.lost = reason


class Handshake:
    """A server TLS protocol (the hub's listener options) and a client one, connected."""

    def __init__(self, server_settings: TlsSettings, client: ClientTls, host: str):
        self.server = Recorder()
        self.client = Recorder()
        server_factory = TLSMemoryBIOFactory(
            server_options(server_settings), False, Factory.forProtocol(lambda: self.server)
        )
        client_factory = TLSMemoryBIOFactory(
            client.creator(host), True, Factory.forProtocol(lambda: self.client)
        )
        client_side, server_side, pump = connectedServerAndClient(
            lambda: server_factory.buildProtocol(None), lambda: client_factory.buildProtocol(None)
        )
        pump.flush()
        self.server_transport = server_side
        self.client_transport = client_side

    def client_failure(self):
        return handshake_failure(self.client.lost) if self.client.lost is not None else None


def listener(cert, key, ca=None, require=False) -> TlsSettings:
    return TlsSettings(
        enabled=True,
        cert_file=str(cert),
        key_file=str(key),
        ca_file=str(ca.cert_file) if ca else "",
        require_client_cert=require,
    )


# -- handshakes -----------------------------------------------------------------------------


def test_a_client_trusting_the_ca_verifies_the_hub_by_ip_address_and_presents_its_certificate(ca):
    hub_cert, hub_key = ca.issue("hub.test", ips=("127.0.0.1",))
    paris_cert, paris_key = ca.issue("paris", ips=())
    client = ClientTls(ca_file=str(ca.cert_file), cert_file=str(paris_cert), key_file=str(paris_key))
    shake = Handshake(listener(hub_cert, hub_key, ca), client, "127.0.0.1")
    assert shake.client.lost is None and shake.server.lost is None
    assert certificate_names(peer_certificate(shake.server_transport)) == {"paris"}
    assert certificate_names(peer_certificate(shake.client_transport)) == {"hub.test"}


def test_server_name_overrides_the_host_the_hub_is_reached_by(ca):
    hub_cert, hub_key = ca.issue("hub.test", ips=())
    by_address = Handshake(listener(hub_cert, hub_key), ClientTls(ca_file=str(ca.cert_file)), "127.0.0.1")
    assert by_address.client_failure() == (
        "TLS: the certificate is not issued to 127.0.0.1, the name it was reached by"
    )
    named = ClientTls(ca_file=str(ca.cert_file), server_name="hub.test")
    assert Handshake(listener(hub_cert, hub_key), named, "127.0.0.1").client.lost is None


def test_a_hub_certificate_from_another_authority_fails_the_handshake_on_both_sides(ca, tmp_path):
    other = Authority(tmp_path / "other", "another CA")
    hub_cert, hub_key = other.issue("hub.test")
    shake = Handshake(listener(hub_cert, hub_key), ClientTls(ca_file=str(ca.cert_file)), "127.0.0.1")
    assert shake.client_failure() == "TLS handshake failed: certificate verify failed"
    assert "unknown ca" in handshake_failure(shake.server.lost)


def test_an_expired_hub_certificate_fails_the_handshake(ca):
    hub_cert, hub_key = ca.issue("hub.test", expired=True)
    shake = Handshake(listener(hub_cert, hub_key), ClientTls(ca_file=str(ca.cert_file)), "127.0.0.1")
    assert shake.client_failure() == "TLS handshake failed: certificate verify failed"


def test_require_client_cert_refuses_a_client_without_one_and_without_it_none_is_needed(ca):
    hub_cert, hub_key = ca.issue("hub.test")
    client = ClientTls(ca_file=str(ca.cert_file))
    refused = Handshake(listener(hub_cert, hub_key, ca, require=True), client, "127.0.0.1")
    assert refused.server.lost is not None
    assert "certificate" in handshake_failure(refused.server.lost)
    asked = Handshake(listener(hub_cert, hub_key, ca, require=False), client, "127.0.0.1")
    assert asked.server.lost is None and asked.client.lost is None
    assert peer_certificate(asked.server_transport) is None


def test_a_client_certificate_from_another_authority_is_refused(ca, tmp_path):
    hub_cert, hub_key = ca.issue("hub.test")
    stranger_cert, stranger_key = Authority(tmp_path / "other", "another CA").issue("paris")
    client = ClientTls(ca_file=str(ca.cert_file), cert_file=str(stranger_cert), key_file=str(stranger_key))
    shake = Handshake(listener(hub_cert, hub_key, ca), client, "127.0.0.1")
    assert shake.server.lost is not None
    assert handshake_failure(shake.server.lost) == "TLS handshake failed: certificate verify failed"


# -- child region authentication ------------------------------------------------------------


class Connection:
    def __init__(self, transport):
        self.transport = transport


def test_a_child_region_is_authenticated_by_the_name_its_certificate_carries(ca):
    hub_cert, hub_key = ca.issue("hub.test")
    paris_cert, paris_key = ca.issue("paris", dns=("hub.paris.example",), ips=())
    client = ClientTls(ca_file=str(ca.cert_file), cert_file=str(paris_cert), key_file=str(paris_key))
    shake = Handshake(listener(hub_cert, hub_key, ca), client, "127.0.0.1")
    connection = Connection(shake.server_transport)
    assert unauthenticated(connection, "paris") is None
    assert unauthenticated(connection, "PARIS") is None  # names compare as DNS names do
    assert unauthenticated(connection, "berlin") == (
        "the client certificate is issued to hub.paris.example, paris, not region berlin"
    )


def test_a_child_region_without_a_certificate_or_without_tls_is_told_what_it_lacks(ca):
    from twisted.internet.testing import StringTransport

    hub_cert, hub_key = ca.issue("hub.test")
    shake = Handshake(listener(hub_cert, hub_key, ca), ClientTls(ca_file=str(ca.cert_file)), "127.0.0.1")
    assert "presented no client certificate" in unauthenticated(Connection(shake.server_transport), "paris")
    assert "over plain TCP" in unauthenticated(Connection(StringTransport()), "paris")


def test_certificate_names_fall_back_to_the_common_name(ca):
    cert, _key = ca.issue("", dns=(), ips=("127.0.0.1",))  # an IP address only: no DNS name
    identity, _chain = load_identity(str(cert), str(_key))
    assert certificate_names(identity.original) == {"no name"}


# -- files ------------------------------------------------------------------------------------


def test_files_that_cannot_be_used_are_named_with_why(ca, tmp_path):
    cert, key = ca.issue("hub.test")
    _other_cert, other_key = ca.issue("other.test")
    with pytest.raises(TlsError, match=r"certificate file .*missing\.pem: No such file"):
        load_identity(str(tmp_path / "missing.pem"), str(key))
    with pytest.raises(TlsError, match=r"holds no PEM certificate"):
        load_identity(str(key), str(key))
    with pytest.raises(TlsError, match=r"holds no PEM private key"):
        load_identity(str(cert), str(cert))
    with pytest.raises(TlsError, match=r"does not hold the key of the certificate"):
        load_identity(str(cert), str(other_key))
    with pytest.raises(TlsError, match=r"key file .* is set without its certificate file"):
        ClientTls(key_file=str(key)).check()


def test_a_certificate_and_key_in_one_file_with_its_chain(ca):
    both, _same = ca.issue("hub.test", key_in_cert_file=True)
    chained = both.with_name("chained.pem")
    chained.write_bytes(both.read_bytes() + ca.cert_file.read_bytes())
    identity, chain = load_identity(str(chained))
    assert certificate_names(identity.original) == {"hub.test"}
    assert len(chain) == 1


# -- configuration ----------------------------------------------------------------------------


def write_conf(tmp_path, text: str):
    path = tmp_path / "hub.conf"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("sections", "said"),
    [
        ("[tls]\nenabled = true\n", "[tls] enabled = true needs cert_file"),
        ("[tls]\nrequire_client_cert = true\n", "require_client_cert = true needs ca_file"),
        ("[tls]\nkey_file = /k.pem\n", "key_file = '/k.pem' is set without cert_file"),
        ("[tls]\nenabled = true\ncert_file = {cert}\nkey_file = {key}\nport = 4080\n", "[hub] port too"),
        ("[tls]\nenabled = true\ncert_file = {cert}\nkey_file = {cert}\n", "holds no PEM private key"),
        ("[tls]\nenabled = true\ncert_file = {cert}\nkey_file = {key}\nca_file = {key}\n", "no PEM cert"),
        ("[region]\nparent_tls = true\n", "parent_tls = true, but this region has no parent"),
        ("[region]\nparent_tls_name = hub.test\n", "parent_tls_name = 'hub.test' is set but parent_tls"),
        (
            "[region]\nname = paris\nparent = europe\nparent_address = 127.0.0.1:9999\nparent_tls = true\n"
            "[tls]\nca_file = /nowhere/ca.pem\n",
            "[region] parent_tls: [tls] CA file /nowhere/ca.pem: No such file",
        ),
        ("[region]\nrequire_child_certificate = true\n", "needs [tls] enabled = true and a ca_file"),
    ],
)
def test_tls_settings_that_cannot_work_are_refused_naming_the_setting(tmp_path, ca, sections, said):
    cert, key = ca.issue("hub.test")
    path = write_conf(tmp_path, sections.format(cert=cert, key=key))
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert said in str(raised.value)


def test_a_complete_tls_configuration_loads(tmp_path, ca):
    cert, key = ca.issue("hub.test")
    path = write_conf(
        tmp_path,
        f"[tls]\nenabled = true\nport = 0\ncert_file = {cert}\nkey_file = {key}\nca_file = {ca.cert_file}\n"
        "require_client_cert = true\n"
        "[region]\nname = paris\nparent = europe\nparent_address = 127.0.0.1:9999\nparent_tls = true\n"
        "parent_tls_name = hub.test\nrequire_child_certificate = true\n",
    )
    config = load_config(path)
    assert config.tls.enabled and config.tls.require_client_cert
    assert config.region.parent_tls_name == "hub.test"


def test_tls_without_pyopenssl_says_what_to_install(tmp_path, ca, monkeypatch):
    cert, key = ca.issue("hub.test")
    path = write_conf(tmp_path, f"[tls]\nenabled = true\ncert_file = {cert}\nkey_file = {key}\n")
    monkeypatch.setitem(sys.modules, "OpenSSL", None)  # `import OpenSSL` now raises ImportError
    with pytest.raises(ConfigError, match="TLS needs pyOpenSSL and service_identity: make extras EXTRAS=tls"):
        load_config(path)
