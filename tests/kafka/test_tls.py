"""The Kafka port over TLS ([kafka] tls, with [tls]'s certificate) on a real hub process:
confluent-kafka with security.protocol=SSL and kcat with -X security.protocol=ssl produce
and consume, verifying the hub's certificate; a plain client gets nothing through; with
[tls] require_client_cert a client without a certificate is refused."""

import subprocess

import confluent_kafka
import pytest

from hedwig.client import Client
from hedwig.config.loading import load_config
from hedwig.config.settings import ConfigError
from hedwig.testing.certificates import Authority
from hedwig.testing.hubprocess import HubProcess

TIMEOUT_S = 30


def tls_hub(tmp_path, require_client_cert=False):
    ca = Authority(tmp_path / "ca")
    cert, key = ca.issue("hub.test", ips=("127.0.0.1",))
    conf = tmp_path / "hub.conf"
    conf.write_text(
        f"[tls]\nenabled = true\nport = 0\ncert_file = {cert}\nkey_file = {key}\nca_file = {ca.cert_file}\n"
        f"require_client_cert = {str(require_client_cert).lower()}\n[kafka]\ntls = true\n"
    )
    return ca, HubProcess(tmp_path / "data", 0, "--conf", str(conf), tls=True, kafka=True)


def ssl_config(hub, ca, **more) -> dict:
    return {
        "bootstrap.servers": f"127.0.0.1:{hub.kafka_port}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(ca.cert_file),
        **more,
    }


def kcat(hub, ca, *args, input=None):
    tls = ["-X", "security.protocol=ssl", "-X", f"ssl.ca.location={ca.cert_file}"]
    command = ["kcat", "-b", f"127.0.0.1:{hub.kafka_port}", *tls, *args]
    return subprocess.run(command, input=input, check=True, capture_output=True, timeout=TIMEOUT_S)


def test_confluent_kafka_and_kcat_over_ssl(tmp_path):
    ca, hub = tls_hub(tmp_path)
    with hub:
        assert f"Kafka on 127.0.0.1:{hub.kafka_port} over TLS" in hub.output()
        producer = confluent_kafka.Producer(ssl_config(hub, ca))
        producer.produce("over-tls", key=b"k", value=b"from confluent-kafka")
        assert producer.flush(TIMEOUT_S) == 0
        kcat(hub, ca, "-t", "over-tls", "-P", input=b"from kcat\n")
        consumed = kcat(hub, ca, "-t", "over-tls", "-C", "-o", "beginning", "-c", "2", "-e")
        assert consumed.stdout.decode().splitlines() == ["from confluent-kafka", "from kcat"]
        consumer = confluent_kafka.Consumer(ssl_config(hub, ca, **{"group.id": "unused"}))
        try:
            consumer.assign([confluent_kafka.TopicPartition("over-tls", 0, confluent_kafka.OFFSET_BEGINNING)])
            message = consumer.poll(TIMEOUT_S)
            assert message is not None and message.error() is None
            assert (message.key(), message.value()) == (b"k", b"from confluent-kafka")
        finally:
            consumer.close()
        # A plain Kafka client gets no answer it can read: nothing stored.
        plain = subprocess.run(
            [
                "kcat",
                "-b",
                f"127.0.0.1:{hub.kafka_port}",
                "-t",
                "over-tls",
                "-P",
                "-X",
                "message.timeout.ms=3000",
            ],
            input=b"in the clear\n",
            capture_output=True,
            timeout=TIMEOUT_S,
        )
        assert plain.returncode != 0
        with Client(hub.address) as client:
            assert [m.payload for m in client.read("over-tls")] == [b"from confluent-kafka", b"from kcat"]


def test_a_required_client_certificate_is_required_on_the_kafka_port_too(tmp_path):
    ca, hub = tls_hub(tmp_path, require_client_cert=True)
    client_cert, client_key = ca.issue("producer")
    with hub:
        producer = confluent_kafka.Producer(
            ssl_config(
                hub, ca, **{"ssl.certificate.location": str(client_cert), "ssl.key.location": str(client_key)}
            )
        )
        producer.produce("certified", value=b"with a certificate")
        assert producer.flush(TIMEOUT_S) == 0
        reports = []
        anonymous = confluent_kafka.Producer(ssl_config(hub, ca, **{"message.timeout.ms": 3000}))
        anonymous.produce("certified", value=b"without", on_delivery=lambda error, _m: reports.append(error))
        anonymous.flush(TIMEOUT_S)
        assert len(reports) == 1 and reports[0] is not None
        with Client(hub.address) as client:
            assert [m.payload for m in client.read("certified")] == [b"with a certificate"]


def test_kafka_tls_needs_tls_enabled(tmp_path):
    conf = tmp_path / "hub.conf"
    conf.write_text("[kafka]\nport = 9092\ntls = true\n")
    with pytest.raises(ConfigError, match=r"\[kafka\] tls = true takes \[tls\]'s certificate"):
        load_config(str(conf))
