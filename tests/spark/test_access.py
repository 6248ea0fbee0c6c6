"""The Spark source and `hedwig drain` reach hubs as the CLI does: over TLS, and as a
user of a hub with [auth] on (hedwig/spark/access.py); a real hub process, local Spark."""

import json
import os
import subprocess
import sys

import pytest

from hedwig.client import Client
from hedwig.protocol.auth_request import Credentials
from hedwig.spark.options import OptionError, parse_options
from hedwig.testing.certificates import Authority
from hedwig.testing.hubprocess import HubProcess
from tests.auth.peers import write_users


@pytest.fixture(scope="module")
def secure_hub(tmp_path_factory):
    """A hub with [auth] on, reached over its TLS listener; `ca` trusts its certificate."""
    directory = tmp_path_factory.mktemp("secure-hub")
    ca = Authority(directory / "ca")
    cert, key = ca.issue("hub.test")
    users = write_users(directory / "users.json")
    conf = directory / "hub.conf"
    conf.write_text(
        f"[tls]\nenabled = true\nport = 0\ncert_file = {cert}\nkey_file = {key}\nca_file = {ca.cert_file}\n"
        f"[auth]\nenabled = true\nusers_file = {users}\nfailure_delay_s = 0.1\n"
    )
    with HubProcess(directory / "data", 0, "--conf", str(conf), tls=True) as process:
        process.ca_file = str(ca.cert_file)
        process.tls_address = f"127.0.0.1:{process.tls_port}"
        from hedwig.config.tls import ClientTls

        tls = ClientTls(ca_file=process.ca_file)
        with Client(process.tls_address, tls=tls, credentials=Credentials("alice", "alice-pw")) as client:
            for payload in (b"one", b"two", b"three"):
                client.publish("t.spark", payload)
        yield process


def test_options_take_tls_and_credentials_the_password_from_the_environment(tmp_path, monkeypatch):
    ca = tmp_path / "ca.pem"
    ca.write_text("-")
    monkeypatch.setenv("HEDWIG_PASSWORD", "from-env")
    options = parse_options({"hub": "h:1", "topics": "t", "tlsCa": str(ca), "USER": "alice"}, streaming=False)
    access = options.access
    assert (access.tls, access.tls_ca, access.user, access.password) == (True, str(ca), "alice", "from-env")
    assert "from-env" not in repr(options)
    for bad, said in (
        ({"tls": "maybe"}, "'tls'"),
        ({"tlsCa": str(tmp_path / "missing.pem")}, "no such file"),
        ({"password": "x"}, "needs option 'user'"),
    ):
        with pytest.raises(OptionError, match=said):
            parse_options({"hub": "h:1", "topics": "t", **bad}, streaming=False)
    monkeypatch.delenv("HEDWIG_PASSWORD")
    with pytest.raises(OptionError, match="HEDWIG_PASSWORD"):
        parse_options({"hub": "h:1", "topics": "t", "user": "alice"}, streaming=False)


def test_the_source_reads_over_tls_as_a_user(spark, secure_hub):
    def read(**access):
        reader = spark.read.format("hedwig").option("hub", secure_hub.tls_address).option("topics", "t.spark")
        return reader.options(tlsCa=secure_hub.ca_file, **access).load().collect()

    rows = read(user="alice", password="alice-pw")
    assert sorted(bytes(row.payload) for row in rows) == [b"one", b"three", b"two"]
    with pytest.raises(Exception, match="AUTHENTICATION_FAILED"):
        read(user="alice", password="wrong")


def test_the_drain_reaches_a_secure_hub_with_the_clis_options(tmp_path, secure_hub):
    env = {**os.environ, "HEDWIG_PASSWORD": "alice-pw"}
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    done = subprocess.run(
        [sys.executable, "-m", "hedwig", "--hub", secure_hub.tls_address, "--tls-ca", secure_hub.ca_file,
         "--user", "alice", "--json", "drain", "--topics", "t.spark", "--out", str(out),
         "--checkpoint", str(checkpoint), "--once", "--subscriber", "drain-alice"],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["drained"] == 3
