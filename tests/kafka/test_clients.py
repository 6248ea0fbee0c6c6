"""Kafka clients against a real hub's Kafka port (tests/kafka/clients.py): each produces
with every codec, keys and headers, and consumes from the earliest offset, the latest
and a timestamp; what a Kafka producer writes a native client reads, and the reverse.

The mapping asserted (docs/kafka.md): offset = seq-id - 1, key = message key, headers
= properties, timestamp = publish time (ms)."""

import subprocess
from pathlib import Path

import pytest

from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess, hub_environment
from tests.kafka.clients import CLIENTS, CODECS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


@pytest.fixture(scope="module")
def kafka_hub(tmp_path_factory):
    with HubProcess(tmp_path_factory.mktemp("kafka-hub"), kafka=True) as process:
        yield process


@pytest.fixture(params=CLIENTS, ids=lambda c: c.name)
def kafka_client(request, kafka_hub):
    return request.param(f"127.0.0.1:{kafka_hub.kafka_port}")


def _records(tag, count):
    return [
        (b"key-%s-%d" % (tag, i), b"value-%s-%d" % (tag, i), [("origin", b"kafka-" + tag)])
        for i in range(count)
    ]


def test_each_codec_with_keys_and_headers_is_stored_and_read_back(kafka_hub, kafka_client):
    topic = f"codecs-{kafka_client.name}"
    sent = []
    for codec in CODECS:
        records = _records(codec.encode(), 3)
        kafka_client.produce(topic, records, codec)
        sent += records
    got = kafka_client.consume(topic, "earliest", len(sent))
    assert [(offset, key, value, headers) for offset, key, value, headers, _ts in got] == [
        (i, key, value, headers) for i, (key, value, headers) in enumerate(sent)
    ]
    # One log, two protocols: the native client reads the same messages at seq-id = offset + 1.
    with Client(kafka_hub.address) as client:
        messages = client.read(topic)
    assert [(m.seq, m.key, m.payload, m.properties) for m in messages] == [
        (i + 1, key, value, dict(headers)) for i, (key, value, headers) in enumerate(sent)
    ]
    assert [ts for *_rest, ts in got] == [m.publish_time_us // 1000 for m in messages]


def test_consumes_from_an_offset_and_a_timestamp(kafka_hub, kafka_client):
    topic = f"positions-{kafka_client.name}"
    with Client(kafka_hub.address) as client:
        client.publish_many(topic, [b"a0", b"a1"])
        client.publish_many(topic, [b"b0", b"b1"])
        client.publish_many(topic, [b"c0"])
        messages = client.read(topic)
    assert [r[2] for r in kafka_client.consume(topic, 2, 3)] == [b"b0", b"b1", b"c0"]
    # By timestamp: the first message published at or after it (the hub's time index).
    ts = messages[2].publish_time_us // 1000
    expected = [m.payload for m in messages if m.publish_time_us >= ts * 1000]
    got = kafka_client.consume(topic, ("time", ts), len(expected))
    assert [r[2] for r in got] == expected
    assert got[0][0] == messages.index(next(m for m in messages if m.payload == expected[0]))


def test_consumes_from_the_latest_offset(kafka_hub, kafka_client):
    topic = f"latest-{kafka_client.name}"
    with Client(kafka_hub.address) as client:
        client.publish_many(topic, [b"before-0", b"before-1"])
        published = []

        def publish():
            published.append(client.publish(topic, b"after-%d" % len(published)))

        offset, key, value, _headers, _ts = kafka_client.consume_latest(topic, publish)
    # Nothing published before the consumer was placed at the end; the first after it.
    assert value.startswith(b"after-") and key is None
    assert offset == published[int(value.split(b"-")[1])] - 1


def test_a_native_publisher_and_a_kafka_consumer_share_a_topic(kafka_hub, kafka_client):
    topic = f"native-to-kafka-{kafka_client.name}"
    with Client(kafka_hub.address) as client:
        client.publish_many(topic, [b"p0", b"p1"], [{"h": b"x"}, None], [b"k0", None])
        client.publish(topic, b"p2", {"n": 7, "s": "text"}, key="k2")
    got = kafka_client.consume(topic, "earliest", 3)
    assert [(o, k, v, sorted(h)) for o, k, v, h, _ts in got] == [
        (0, b"k0", b"p0", [("h", b"x")]),
        (1, None, b"p1", []),
        (2, b"k2", b"p2", [("n", b"7"), ("s", b"text")]),
    ]


def test_a_kafka_producer_and_a_native_subscriber_share_a_topic(kafka_hub, kafka_client):
    topic = f"kafka-to-native-{kafka_client.name}"
    with Client(kafka_hub.address) as client:
        subscription = client.subscribe(topic, "native", start="earliest")
        records = _records(b"sub", 4)
        kafka_client.produce(topic, records, "gzip")
        got = [subscription.receive(timeout=30) for _ in records]
    assert [(m.seq, m.key, m.payload, m.properties) for m in got] == [
        (i + 1, key, value, dict(headers)) for i, (key, value, headers) in enumerate(records)
    ]


def test_the_readmes_kafka_commands_run_as_written(kafka_hub, tmp_path):
    """README's "Kafka clients" commands, in its order, through a shell, with the hub's
    Kafka port for 9092 and its native address for the CLI's default."""
    section = README[README.index("## Kafka clients") : README.index("## Analytics with Spark")]
    commands = [line.strip() for line in section.splitlines() if line.startswith("    ")]
    assert len(commands) == 3, commands
    env = hub_environment()
    env["HEDWIG_HUB"] = kafka_hub.address
    outputs = []
    for command in commands:
        command = command.replace("127.0.0.1:9092", f"127.0.0.1:{kafka_hub.kafka_port}")
        done = subprocess.run(
            ["bash", "-c", command], capture_output=True, text=True, timeout=60, env=env, cwd=ROOT
        )
        assert done.returncode == 0, f"{command}: {done.stderr}"
        outputs.append(done.stdout)
    assert outputs[1].strip() == "k1 hello"
    assert "hello" in outputs[2]
