"""Partitioned topics (hedwig.protocol.partitions) on a real hub, through its native port and
its Kafka port: `hedwig create --partitions`, `create_topic(partitions=N)`, Kafka's Metadata,
CreateTopics and CreatePartitions; a key lands in the same partition whether confluent-kafka
(murmur2_random, Kafka's Java partitioner) or kafka-python produced it or a native client
published it; `hedwig read` and the client's read cover every partition."""

import asyncio
import json
import subprocess

import confluent_kafka
import kafka
import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from hedwig.client import Client
from hedwig.client.aio import Client as AioClient
from hedwig.client.errors import NoSuchTopic, TopicExists
from hedwig.protocol.partitions import partition_for_key
from hedwig.testing.hubprocess import HubProcess
from tests.cli.test_cli import hedwig, lines
from tests.client.every_client import CLIENTS

TIMEOUT_S = 30
KEYS = [f"user-{i}".encode() for i in range(40)]


@pytest.fixture(scope="module")
def kafka_hub(tmp_path_factory):
    with HubProcess(tmp_path_factory.mktemp("kafka-partitions"), kafka=True) as process:
        yield process


@pytest.fixture
def admin(kafka_hub):
    return AdminClient({"bootstrap.servers": f"127.0.0.1:{kafka_hub.kafka_port}"})


def bootstrap(hub) -> str:
    return f"127.0.0.1:{hub.kafka_port}"


def partition_of(client, topic, partitions) -> dict:
    """payload -> the partition it was stored in: the client's read of a partitioned topic
    gives every partition's messages, each naming its partition's topic."""
    names = [topic] + [f"{topic}.p-{k}" for k in range(1, partitions)]
    return {message.payload: names.index(message.topic) for message in client.read(topic)}


def metadata_partitions(admin, topic) -> list[int]:
    return sorted(admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions)


def test_hedwig_create_partitions_and_read_covers_every_partition(kafka_hub):
    assert lines(hedwig("create", "cli-parts", "--partitions", "3", hub=kafka_hub)) == [
        "created topic cli-parts (3 partitions)"
    ]
    assert lines(hedwig("create", "cli-parts", hub=kafka_hub)) == [
        "topic cli-parts exists already (3 partitions)"
    ]
    asked = hedwig("create", "cli-parts", "--partitions", "4", hub=kafka_hub)
    assert asked.returncode != 0 and b"exists already with 3 partitions" in asked.stderr
    payloads = [f"m{i}" for i in range(12)]
    with Client(kafka_hub.address) as client:
        for i, payload in enumerate(payloads):
            client.publish("cli-parts", payload, key=KEYS[i])
        where = partition_of(client, "cli-parts", 3)
    assert len(set(where.values())) == 3  # (12 keys spread over all three)
    shown = lines(hedwig("read", "cli-parts", "--key", hub=kafka_hub))
    assert sorted(shown) == sorted(f"{KEYS[i].decode()}\t{p}" for i, p in enumerate(payloads))
    described = json.loads(hedwig("describe", "cli-parts", "--json", hub=kafka_hub).stdout)
    assert described["partitions"] == 3
    assert "partitions: 3 (cli-parts is partition 0, cli-parts.p-1 .. cli-parts.p-2 the others;" in (
        hedwig("describe", "cli-parts", hub=kafka_hub).stdout.decode()
    )
    one = [i for i in range(12) if where[payloads[i].encode()] == 1]
    assert lines(hedwig("read", "cli-parts.p-1", "--from", "2", hub=kafka_hub)) == [
        payloads[i] for i in one[1:]
    ]
    refused = hedwig("read", "cli-parts", "--from", "2", hub=kafka_hub)
    assert refused.returncode != 0 and b"cli-parts has 3 partitions" in refused.stderr


def test_client_create_topic_and_read_of_a_partitioned_topic(kafka_hub):
    with Client(kafka_hub.address) as client:
        reply = client.create_topic("native-parts", partitions=4)
        assert reply == {
            "topic": "native-parts",
            "created": True,
            "compaction": False,
            "partitions": 4,
            "ttl_ms": 0,
        }
        assert client.create_topic("native-parts")["partitions"] == 4
        with pytest.raises(TopicExists):
            client.create_topic("native-parts", partitions=2)
        seqs = client.publish_many("native-parts", [b"a", b"b", b"c", b"d"], keys=KEYS[:4])
        got = client.read("native-parts")
        assert sorted(m.payload for m in got) == [b"a", b"b", b"c", b"d"]
        for message in got:  # (each seq-id its partition's, in the order given)
            assert seqs[[b"a", b"b", b"c", b"d"].index(message.payload)] == message.seq
        assert {m.topic for m in got} <= {"native-parts", *(f"native-parts.p-{k}" for k in (1, 2, 3))}
        assert client.describe("native-parts.p-3")["partitions"] == 1


def test_native_and_kafka_producers_put_a_key_in_the_same_partition(kafka_hub, admin):
    topic = "agree-parts"
    with Client(kafka_hub.address) as client:
        client.create_topic(topic, partitions=5)
        for key in KEYS:
            client.publish(topic, b"native-" + key, key=key)
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap(kafka_hub), "partitioner": "murmur2_random", "linger.ms": 5}
    )
    for key in KEYS:
        producer.produce(topic, value=b"confluent-" + key, key=key)
    assert producer.flush(TIMEOUT_S) == 0
    java_like = kafka.KafkaProducer(bootstrap_servers=bootstrap(kafka_hub))  # (murmur2 by default)
    for key in KEYS:
        java_like.send(topic, value=b"kafka-python-" + key, key=key)
    java_like.flush(TIMEOUT_S)
    java_like.close()
    with Client(kafka_hub.address) as client:
        where = partition_of(client, topic, 5)
    for key in KEYS:
        assert where[b"native-" + key] == where[b"confluent-" + key] == where[b"kafka-python-" + key], key
    assert len({where[b"native-" + key] for key in KEYS}) == 5
    # A Kafka consumer of one partition reads what native publishes put there.
    (key,) = [k for k in KEYS if where[b"native-" + k] == 3][:1]
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap(kafka_hub), "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 3, confluent_kafka.OFFSET_BEGINNING)])
        seen = []
        while len(seen) < 3 * sum(1 for k in KEYS if where[b"native-" + k] == 3):
            message = consumer.poll(TIMEOUT_S)
            assert message is not None and message.error() is None
            assert message.partition() == 3
            seen.append(message.value())
        assert b"native-" + key in seen and b"confluent-" + key in seen
    finally:
        consumer.close()
    assert metadata_partitions(admin, topic) == [0, 1, 2, 3, 4]


def test_create_topics_and_create_partitions_through_kafka(kafka_hub, admin):
    (made,) = admin.create_topics([NewTopic("kafka-made-parts", 3, 1)]).values()
    assert made.result(TIMEOUT_S) is None
    with Client(kafka_hub.address) as client:
        assert client.describe("kafka-made-parts")["partitions"] == 3
        assert client.describe("kafka-made-parts.p-2")["partitions"] == 1
        client.publish("grown", b"before")  # (a plain topic: one partition)
    assert metadata_partitions(admin, "grown") == [0]
    (grown,) = admin.create_partitions([NewPartitions("grown", 3)]).values()
    assert grown.result(TIMEOUT_S) is None
    assert metadata_partitions(admin, "grown") == [0, 1, 2]
    with Client(kafka_hub.address) as client:
        assert [m.payload for m in client.read("grown")] == [b"before"]  # (partition 0 kept)
        assert client.describe("grown.p-2")["last_seq"] == 0
    for count in (3, 2):  # (never fewer, nor as many)
        (shrunk,) = admin.create_partitions([NewPartitions("grown", count)]).values()
        with pytest.raises(confluent_kafka.KafkaException) as refused:
            shrunk.result(TIMEOUT_S)
        assert refused.value.args[0].code() == confluent_kafka.KafkaError.INVALID_PARTITIONS
    (missing,) = admin.create_partitions([NewPartitions("never-made", 2)]).values()
    with pytest.raises(confluent_kafka.KafkaException) as refused:
        missing.result(TIMEOUT_S)
    assert refused.value.args[0].code() == confluent_kafka.KafkaError.UNKNOWN_TOPIC_OR_PART


def test_produce_past_the_partitions_creates_nothing(kafka_hub):
    with Client(kafka_hub.address) as client:
        client.create_topic("two-parts", partitions=2)
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap(kafka_hub), "message.timeout.ms": 3000, "linger.ms": 0}
    )
    reports = []
    producer.produce("two-parts", value=b"x", partition=1, on_delivery=lambda e, m: reports.append(e))
    producer.produce("two-parts", value=b"y", partition=5, on_delivery=lambda e, m: reports.append(e))
    producer.flush(TIMEOUT_S)
    assert reports[0] is None or reports[1] is None
    assert sorted(e is None for e in reports) == [False, True]
    with Client(kafka_hub.address) as client:
        assert [m.payload for m in client.read("two-parts.p-1")] == [b"x"]
        with pytest.raises(NoSuchTopic):
            client.describe("two-parts.p-5")


def test_kcat_lists_the_partitions(kafka_hub):
    with Client(kafka_hub.address) as client:
        client.create_topic("kcat-parts", partitions=3)
    listed = subprocess.run(
        ["kcat", "-b", bootstrap(kafka_hub), "-L", "-t", "kcat-parts", "-J"],
        check=True,
        capture_output=True,
        timeout=TIMEOUT_S,
    )
    (topic,) = json.loads(listed.stdout)["topics"]
    assert [p["partition"] for p in topic["partitions"]] == [0, 1, 2]


def test_the_partition_count_outlives_a_restart_and_a_compacted_topic_has_compacted_partitions(tmp_path):
    process = HubProcess(tmp_path, kafka=True)
    with process, Client(process.address) as client:
        client.create_topic("kept-parts", compaction=True, partitions=3)
    with process, Client(process.address) as client:
        assert client.describe("kept-parts")["partitions"] == 3
        assert client.describe("kept-parts.p-2")["compaction"] is True
        assert client.create_topic("kept-parts", compaction=True)["partitions"] == 3


def test_deleting_a_partitioned_topic_deletes_every_partition(kafka_hub, admin):
    with Client(kafka_hub.address) as client:
        client.create_topic("gone-parts", partitions=3)
        client.publish_many("gone-parts", [b"a", b"b", b"c", b"d"], keys=KEYS[:4])
        client.subscribe("gone-parts.p-2", "holder", deliver=False).close()
    busy = hedwig("delete", "gone-parts", hub=kafka_hub)
    assert busy.returncode != 0 and b"its partition gone-parts.p-2 has 1 subscription(s)" in busy.stderr
    with Client(kafka_hub.address) as client:  # (refused before anything went)
        assert client.describe("gone-parts.p-1")["last_seq"] + client.describe("gone-parts")["last_seq"] > 0
    assert hedwig("delete", "gone-parts", "--force", hub=kafka_hub).returncode == 0
    with Client(kafka_hub.address) as client:
        for name in ("gone-parts", "gone-parts.p-1", "gone-parts.p-2"):
            with pytest.raises(NoSuchTopic):
                client.describe(name)
        # Made again with fewer: nothing of the old partitions is back.
        assert client.create_topic("gone-parts", partitions=2)["created"] is True
        assert client.read("gone-parts") == []
        client.create_topic("kafka-gone", partitions=2)
        client.publish("kafka-gone", b"x", key=b"some key")
    (deleted,) = admin.delete_topics(["kafka-gone"]).values()
    assert deleted.result(TIMEOUT_S) is None
    with Client(kafka_hub.address) as client, pytest.raises(NoSuchTopic):
        client.describe("kafka-gone.p-1")


@pytest.mark.parametrize("kind", CLIENTS, ids=lambda kind: kind.name)
def test_every_client_puts_a_key_in_its_partition(kafka_hub, kind):
    topic = f"every-{kind.name}"
    with Client(kafka_hub.address) as client:
        client.create_topic(topic, partitions=4)
    each = kind(kafka_hub.address)
    try:
        for key in KEYS[:12]:
            each.call("publish", topic, b"one-" + key, key=key)
        each.call("publish_many", topic, [b"many-" + k for k in KEYS[:12]], keys=KEYS[:12])
    finally:
        each.close()
    with Client(kafka_hub.address) as client:
        where = partition_of(client, topic, 4)
    for key in KEYS[:12]:
        assert where[b"one-" + key] == where[b"many-" + key] == partition_for_key(key, 4)


def test_an_event_loop_client_keeps_the_order_of_publishes_made_while_it_asks_the_count(kafka_hub):
    """The asyncio client's first keyed publish of a topic asks its partition count; the
    publishes made meanwhile, keyed or not, queue behind it: each partition gets its
    messages in the order they were published."""
    topic = "ordered-parts"
    with Client(kafka_hub.address) as client:
        client.create_topic(topic, partitions=2)
    keys = [KEYS[i % 6] if i % 3 else None for i in range(60)]

    async def publish_all():
        client = AioClient(kafka_hub.address)
        await client.connect()
        try:
            await asyncio.gather(*(client.publish(topic, b"%d" % i, key=keys[i]) for i in range(60)))
        finally:
            await client.close()

    asyncio.run(publish_all())
    with Client(kafka_hub.address) as client:
        got = client.read(topic)
    for name in (topic, f"{topic}.p-1"):
        order = [int(m.payload) for m in got if m.topic == name]
        assert order == sorted(order)
    names = [topic, f"{topic}.p-1"]
    for m in got:
        key = keys[int(m.payload)]
        assert m.topic == (topic if key is None else names[partition_for_key(key, 2)])
