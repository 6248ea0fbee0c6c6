"""Clients over TLS, against real hub processes on 127.0.0.1 with a [tls] listener and real
certificates (tests/tls_certificates.py): the blocking client (its non-blocking TLS socket
read and written by several threads, idle past its read slice, finding the hub gone), the
Twisted client, and the `hedwig` command's --tls options; and each way a TLS connection
can be wrong, refused with a message that says which."""

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from twisted.internet import defer, reactor

from hedwig.client import Client, CouldNotConnect
from hedwig.client import twisted as twisted_client
from hedwig.client.connection import _READ_SLICE
from hedwig.config.tls import ClientTls
from hedwig.testing.certificates import Authority
from hedwig.testing.hubprocess import HubProcess, hub_environment
from tests import trial as unittest
from tests.receiving import receive_all

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


class TlsHub:
    """A hub process with a TLS listener on `tls_port` beside its plain port, its
    certificate issued by `ca` to hub.test and 127.0.0.1. With `ca_file` set the hub asks
    clients for a certificate signed by `ca`; `require_client_cert` refuses those without."""

    def __init__(self, directory: Path, ca: Authority, require_client_cert: bool = False):
        directory.mkdir(parents=True, exist_ok=True)
        self.ca = ca
        cert, key = ca.issue("hub.test")
        self.tls_port = 0  # a free one at the first start, kept for restarts
        self.conf = directory / "hub.conf"
        self._tls_lines = (
            "[tls]\n"
            "enabled = true\n"
            f"cert_file = {cert}\n"
            f"key_file = {key}\n"
            f"ca_file = {ca.cert_file}\n"
            f"require_client_cert = {'true' if require_client_cert else 'false'}\n"
        )
        self._write_conf()
        self.process = HubProcess(directory / "data", 0, "--conf", str(self.conf), tls=True)

    def _write_conf(self) -> None:
        self.conf.write_text(self._tls_lines + f"port = {self.tls_port}\n")

    @property
    def address(self) -> str:
        return self.process.address

    @property
    def tls_address(self) -> str:
        return f"127.0.0.1:{self.tls_port}"

    def trust(self, **options) -> ClientTls:
        """ClientTls trusting the hub's authority."""
        return ClientTls(ca_file=str(self.ca.cert_file), **options)

    def start(self) -> "TlsHub":
        self.process.start()
        if not self.tls_port:
            self.tls_port = self.process.tls_port
            self._write_conf()  # a restart listens on the same TLS port
        return self

    def stop(self) -> None:
        self.process.stop()


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Authority(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_hub(tmp_path_factory, pki):
    """One TLS hub shared by the module's tests (each uses topics of its own)."""
    hub = TlsHub(tmp_path_factory.mktemp("tls-hub"), pki).start()
    yield hub
    hub.stop()


@pytest.fixture
def own_tls_hub(tmp_path, pki):
    """A TLS hub of the test's own, started: to kill and restart."""
    hub = TlsHub(tmp_path / "hub", pki).start()
    yield hub
    hub.stop()


# -- the blocking client ----------------------------------------------------------------------


def test_publish_subscribe_and_ack_over_tls(tls_hub):
    payloads = [b"message %d " % i + bytes([i % 256]) * (i % 50) for i in range(300)]
    with Client(tls_hub.tls_address, tls=tls_hub.trust(), timeout=10) as client:
        sub = client.subscribe("tls-round-trip", "reader", start="earliest")
        assert [
            client.publish("tls-round-trip", p, {"n": b"%d" % i}) for i, p in enumerate(payloads)
        ] == list(range(1, 301))
        messages = receive_all(sub, 300)
    assert [m.seq for m in messages] == list(range(1, 301))
    assert [m.payload for m in messages] == payloads
    assert [m.properties for m in messages] == [{"n": b"%d" % i} for i in range(300)]
    # The acknowledgements reached the hub: the subscription resumes after all 300.
    with Client(tls_hub.tls_address, tls=tls_hub.trust(), timeout=10) as client:
        sub = client.subscribe("tls-round-trip", "reader")
        client.publish("tls-round-trip", b"after")
        [after] = receive_all(sub, 1)
    assert (after.seq, after.payload) == (301, b"after")


def test_a_subscriber_idle_past_its_read_slice_still_receives_on_the_same_connection(tls_hub):
    with Client(tls_hub.tls_address, tls=tls_hub.trust(), timeout=10) as client:
        sub = client.subscribe("tls-idle", "reader")
        connection = sub._connection
        started = time.monotonic()
        assert sub.receive(timeout=_READ_SLICE + 1.0) is None  # the read waited past one slice
        assert time.monotonic() - started >= _READ_SLICE + 1.0
        with Client(tls_hub.tls_address, tls=tls_hub.trust(), timeout=10) as publisher:
            publisher.publish("tls-idle", b"woken")
        [message] = receive_all(sub, 1)
        assert message.payload == b"woken"
        assert client.publish("tls-idle", b"own") == 2  # and the idle connection still sends
        assert receive_all(sub, 1)[0].payload == b"own"
        assert sub._connection is connection and connection.lost is None


def test_one_client_read_and_written_by_two_threads_at_once(tls_hub):
    """A thread receives while another publishes on the same TLS connection: every OpenSSL
    call is serialised, neither waits for the other's I/O."""
    count = 3000
    with Client(tls_hub.tls_address, tls=tls_hub.trust(), timeout=20) as client:
        sub = client.subscribe("tls-threads", "reader", window=100)
        received = []
        failed = []

        def read():
            try:
                received.extend(receive_all(sub, count, timeout=20))
            except BaseException as e:  # reported by the test's thread
                failed.append(e)

        reader = threading.Thread(target=read)
        reader.start()
        seqs = [client.publish("tls-threads", b"%d" % i) for i in range(count)]
        reader.join(60)
        assert not reader.is_alive() and not failed, failed
    assert seqs == list(range(1, count + 1))
    assert [m.payload for m in received] == [b"%d" % i for i in range(count)]


def test_publish_many_sends_a_large_batch_in_several_parts(tls_hub):
    # A 12 MB message set, more than the socket takes at once: the frame's parts are joined
    # (SSLSocket has no sendmsg) and OpenSSL takes it in pieces, the rest waiting for room.
    payloads = [bytes([i % 251]) * 6000 + b"%d" % i for i in range(2000)]
    properties = [{"i": b"%d" % i} if i % 3 == 0 else None for i in range(2000)]
    with Client(tls_hub.tls_address, tls=tls_hub.trust(), timeout=20) as client:
        assert client.publish_many("tls-batch", payloads, properties) == list(range(1, 2001))
        assert client.publish_many("tls-batch", [b"small", b"batch"]) == [2001, 2002]
        messages = client.read("tls-batch")
    assert [m.payload for m in messages] == [*payloads, b"small", b"batch"]
    assert [m.properties for m in messages[:4]] == [{"i": b"0"}, {}, {}, {"i": b"3"}]


def test_a_client_finds_its_idle_connection_closed_by_a_restarted_hub_and_connects_again(own_tls_hub):
    with Client(own_tls_hub.tls_address, tls=own_tls_hub.trust(), timeout=10) as client:
        assert client.publish_many("tls-restart", [b"1", b"2"]) == [1, 2]
        connection = client._connections.known(client._routes.default)
        own_tls_hub.process.kill()
        own_tls_hub.process.restart()
        # Closed while idle: the next publish goes on a new connection, without an error.
        assert client.publish("tls-restart", b"3") == 3
        assert connection.lost is not None
        assert [m.payload for m in client.read("tls-restart")] == [b"1", b"2", b"3"]


def test_a_hub_certificate_from_an_authority_not_trusted_is_refused(tls_hub, tmp_path):
    stranger = Authority(tmp_path / "stranger", "another CA")
    with pytest.raises(CouldNotConnect) as refused:
        Client(tls_hub.tls_address, tls=ClientTls(ca_file=str(stranger.cert_file))).connect()
    assert refused.value.message == (
        f"no hub reachable: {tls_hub.tls_address}: TLS handshake failed: certificate verify failed: "
        "self-signed certificate in certificate chain"
    )


def test_a_hub_certificate_for_another_name_is_refused_and_the_right_name_accepted(tls_hub):
    with pytest.raises(CouldNotConnect) as refused:
        Client(tls_hub.tls_address, tls=tls_hub.trust(server_name="hub.elsewhere.test")).connect()
    assert refused.value.message == (
        f"no hub reachable: {tls_hub.tls_address}: TLS: the certificate is not issued to "
        "hub.elsewhere.test, the name it was reached by"
    )
    with Client(tls_hub.tls_address, tls=tls_hub.trust(server_name="hub.test")) as client:
        assert client.publish("tls-named", b"x") == 1


def test_tls_to_the_plain_port_fails_at_once_saying_which_port_to_use(tls_hub):
    started = time.monotonic()
    with pytest.raises(CouldNotConnect) as refused:
        Client(tls_hub.address, tls=tls_hub.trust(), connect_timeout=5).connect()
    assert time.monotonic() - started < 5
    assert refused.value.message == (
        f"no hub reachable: {tls_hub.address}: TLS handshake failed: wrong version number "
        f"(is {tls_hub.address} the hub's TLS port?)"
    )


def test_a_port_that_never_answers_the_handshake_fails_within_the_connect_timeout(tls_hub):
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts (the kernel does), says nothing
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(CouldNotConnect) as refused:
            Client(address, tls=tls_hub.trust(), connect_timeout=1.0).connect()
        assert 1.0 <= time.monotonic() - started < 5
    assert refused.value.message == (
        f"no hub reachable: {address}: TLS handshake failed: no answer (is {address} the hub's TLS port?)"
    )


def test_a_hub_requiring_client_certificates_refuses_a_client_without_one(tmp_path, pki):
    hub = TlsHub(tmp_path / "strict", pki, require_client_cert=True).start()
    try:
        with pytest.raises(CouldNotConnect) as refused:
            Client(hub.tls_address, tls=hub.trust()).connect()
        assert refused.value.message.startswith(
            f"no hub reachable: {hub.tls_address}: TLS: the hub requires a client certificate"
        )
        cert, key = pki.issue("a client", ips=())
        with Client(hub.tls_address, tls=hub.trust(cert_file=str(cert), key_file=str(key))) as client:
            assert client.publish("tls-strict", b"with a certificate") == 1
            assert client.read("tls-strict")[0].payload == b"with a certificate"
        stranger_cert, stranger_key = Authority(tmp_path / "stranger", "another CA").issue("intruder", ips=())
        with pytest.raises(CouldNotConnect, match=f"{hub.tls_address}: TLS"):
            Client(
                hub.tls_address, tls=hub.trust(cert_file=str(stranger_cert), key_file=str(stranger_key))
            ).connect()
    finally:
        hub.stop()


# -- the Twisted client -----------------------------------------------------------------------


class TwistedOverTls(unittest.TestCase):
    timeout = 60

    def setUp(self):
        self.ca = Authority(Path(self.mktemp()))
        self.hub = TlsHub(Path(self.mktemp()), self.ca).start()
        self.addCleanup(self.hub.stop)

    @defer.inlineCallbacks
    def test_publish_subscribe_and_ack_over_tls(self):
        client = twisted_client.Client(reactor, self.hub.tls_address, tls=self.hub.trust())
        yield client.connect()
        self.addCleanup(client.close)
        subscription = yield client.subscribe("tls-twisted", "reader", start="earliest")
        seqs = yield defer.gatherResults([client.publish("tls-twisted", b"%d" % i) for i in range(500)])
        self.assertEqual(seqs, list(range(1, 501)))
        got = []
        for _ in range(500):
            message = yield subscription.queue.get()
            got.append(message)
            subscription.ack(message)
        self.assertEqual([(m.seq, m.payload) for m in got], [(i + 1, b"%d" % i) for i in range(500)])
        seqs = yield client.publish_many("tls-twisted", [b"x" * 100_000] * 20)
        self.assertEqual(seqs, list(range(501, 521)))

    @defer.inlineCallbacks
    def test_an_untrusted_hub_certificate_fails_the_connection_saying_why(self):
        stranger = Authority(Path(self.mktemp()), "another CA")
        client = twisted_client.Client(
            reactor, self.hub.tls_address, tls=ClientTls(ca_file=str(stranger.cert_file))
        )
        with self.assertRaises(CouldNotConnect) as refused:
            yield client.connect()
        self.assertEqual(
            refused.exception.message,
            f"no hub reachable: {self.hub.tls_address}: TLS handshake failed: certificate verify failed",
        )

    @defer.inlineCallbacks
    def test_tls_to_the_plain_port_says_which_port_to_use(self):
        client = twisted_client.Client(reactor, self.hub.address, tls=self.hub.trust())
        with self.assertRaises(CouldNotConnect) as refused:
            yield client.connect()
        self.assertIn(f"(is {self.hub.address} the hub's TLS port?)", refused.exception.message)


# -- the command ------------------------------------------------------------------------------


def hedwig(*args, **environment):
    """Run `python -m hedwig ARGS...` with these environment variables besides the test's."""
    return subprocess.run(
        [sys.executable, "-m", "hedwig", *args],
        capture_output=True,
        timeout=60,
        env={**hub_environment(), **environment},
        cwd=ROOT,
    )


def test_the_command_publishes_and_describes_over_tls(tls_hub):
    ca = str(tls_hub.ca.cert_file)
    published = hedwig("--tls-ca", ca, "--hub", tls_hub.tls_address, "publish", "tls-cli", "hello")
    assert published.returncode == 0, published.stderr.decode()
    assert published.stdout.decode().splitlines() == ["published 1 message to tls-cli: seq-id 1"]
    # The options are taken after the subcommand's name too.
    described = hedwig("describe", "tls-cli", "--hub", tls_hub.tls_address, "--tls-ca", ca)
    assert described.returncode == 0, described.stderr.decode()
    assert "seq-ids:  1..1" in described.stdout.decode().splitlines()


def test_the_command_says_in_one_line_what_is_wrong_with_a_tls_file(tls_hub, tmp_path):
    missing = tmp_path / "missing.pem"
    result = hedwig("--tls-ca", str(missing), "--hub", tls_hub.tls_address, "topics")
    assert result.returncode == 2
    assert result.stderr.decode().splitlines() == [
        f"hedwig topics: CA file {missing}: No such file or directory"
    ]


def test_the_command_without_the_hubs_authority_is_refused(tls_hub):
    # --tls trusts the system's store, which does not hold the test authority.
    result = hedwig("--tls", "--hub", tls_hub.tls_address, "topics")
    assert result.returncode == 1
    assert result.stderr.decode().splitlines() == [
        f"hedwig topics: COULD_NOT_CONNECT: no hub reachable: {tls_hub.tls_address}: TLS handshake failed: "
        "certificate verify failed: self-signed certificate in certificate chain"
    ]


def test_the_command_takes_the_tls_files_from_the_environment(tls_hub, tmp_path):
    cert, key = tls_hub.ca.issue("a client", ips=())
    published = hedwig(
        "--hub",
        tls_hub.tls_address,
        "publish",
        "tls-cli-environment",
        "hi",
        HEDWIG_TLS_CA=str(tls_hub.ca.cert_file),
        HEDWIG_TLS_CERT=str(cert),
        HEDWIG_TLS_KEY=str(key),
        HEDWIG_TLS_NAME="hub.test",
    )
    assert published.returncode == 0, published.stderr.decode()
    assert published.stdout.decode().splitlines() == ["published 1 message to tls-cli-environment: seq-id 1"]
    wrong_name = hedwig(
        "--hub",
        tls_hub.tls_address,
        "topics",
        HEDWIG_TLS_CA=str(tls_hub.ca.cert_file),
        HEDWIG_TLS_NAME="x.test",
    )
    assert wrong_name.returncode == 1
    assert "TLS: the certificate is not issued to x.test" in wrong_name.stderr.decode()


def test_drain_takes_the_tls_options_and_refuses_a_file_it_cannot_use(tmp_path):
    """The drain reaches hubs over TLS as the other commands do (tests/spark/test_access.py
    drains over TLS); a TLS file that cannot be used is a usage error before Spark starts."""
    missing = tmp_path / "missing-ca.pem"
    result = hedwig(
        "--tls-ca",
        str(missing),
        "drain",
        "--topics",
        "t",
        "--out",
        str(tmp_path / "out"),
        "--checkpoint",
        str(tmp_path / "cp"),
    )
    assert result.returncode == 2
    (line,) = result.stderr.decode().splitlines()
    assert line.startswith("hedwig drain: ") and str(missing) in line
