"""Kafka's admin APIs through the clients' admin APIs (confluent-kafka's AdminClient,
kafka-python's KafkaAdminClient) on a real hub: CreateTopics with cleanup.policy=compact
makes a compacted hedwig topic, DescribeConfigs tells cleanup.policy and retention,
DeleteTopics deletes; an idempotent producer's batches are stored once."""

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

from hedwig.client import Client
from hedwig.client.errors import NoSuchTopic
from hedwig.testing.hubprocess import HubProcess
from tests.kafka.clients import ConfluentKafka

TIMEOUT_S = 30


@pytest.fixture(scope="module")
def kafka_hub(tmp_path_factory):
    with HubProcess(tmp_path_factory.mktemp("kafka-admin"), kafka=True) as process:
        yield process


@pytest.fixture
def admin(kafka_hub):
    return AdminClient({"bootstrap.servers": f"127.0.0.1:{kafka_hub.kafka_port}"})


def test_create_topics_with_cleanup_policy_compact_makes_a_compacted_topic(kafka_hub, admin):
    futures = admin.create_topics(
        [
            NewTopic("kafka-compacted", 1, 1, config={"cleanup.policy": "compact"}),
            NewTopic("kafka-plain", 1, 1),
        ]
    )
    for future in futures.values():
        assert future.result(TIMEOUT_S) is None
    with Client(kafka_hub.address) as client:
        assert client.describe("kafka-compacted")["compaction"] is True
        assert client.describe("kafka-plain")["compaction"] is False
    # Again: TOPIC_ALREADY_EXISTS, as Kafka says it.
    again = admin.create_topics([NewTopic("kafka-plain", 1, 1)])["kafka-plain"]
    with pytest.raises(confluent_kafka.KafkaException) as refused:
        again.result(TIMEOUT_S)
    assert refused.value.args[0].code() == confluent_kafka.KafkaError.TOPIC_ALREADY_EXISTS
    # Partitions past hedwig's bound, or a replication hedwig does not do: refused, nothing made.
    for topic in (NewTopic("kafka-many", 5000, 1), NewTopic("kafka-many", 1, 3)):
        many = admin.create_topics([topic])["kafka-many"]
        with pytest.raises(confluent_kafka.KafkaException):
            many.result(TIMEOUT_S)
    with Client(kafka_hub.address) as client, pytest.raises(NoSuchTopic):
        client.describe("kafka-many")


def test_create_partitions_with_replica_assignments_is_refused(kafka_hub, admin):
    with Client(kafka_hub.address) as client:
        client.publish("kafka-one-partition", b"x")
    (future,) = admin.create_partitions(
        [NewPartitions("kafka-one-partition", 2, replica_assignment=[[0]])]
    ).values()
    with pytest.raises(confluent_kafka.KafkaException) as refused:
        future.result(TIMEOUT_S)
    assert refused.value.args[0].code() == confluent_kafka.KafkaError.INVALID_REPLICA_ASSIGNMENT


def test_describe_configs_tells_cleanup_policy_and_retention(kafka_hub, admin):
    for future in admin.create_topics(
        [NewTopic("kafka-described", 1, 1, config={"cleanup.policy": "compact"})]
    ).values():
        future.result(TIMEOUT_S)
    (future,) = admin.describe_configs(
        [ConfigResource(ConfigResource.Type.TOPIC, "kafka-described")]
    ).values()
    configs = {name: entry.value for name, entry in future.result(TIMEOUT_S).items()}
    assert configs == {"cleanup.policy": "compact", "retention.ms": "-1", "retention.bytes": "-1"}


def test_delete_topics_deletes_the_hedwig_topic(kafka_hub, admin):
    with Client(kafka_hub.address) as client:
        client.publish("kafka-deleted", b"x")
        (future,) = admin.delete_topics(["kafka-deleted"]).values()
        assert future.result(TIMEOUT_S) is None
        with pytest.raises(NoSuchTopic):
            client.describe("kafka-deleted")


def test_an_idempotent_producer_stores_each_record_once(kafka_hub):
    producer = ConfluentKafka(f"127.0.0.1:{kafka_hub.kafka_port}")
    records = [(b"k%d" % i, b"v%d" % i, []) for i in range(200)]
    offsets = producer.produce("kafka-idempotent", records, "lz4", idempotent=True)
    assert offsets == list(range(200))
    with Client(kafka_hub.address) as client:
        assert [m.payload for m in client.read("kafka-idempotent")] == [v for _k, v, _h in records]


def test_a_listing_of_every_topic_names_them(kafka_hub, admin):
    """librdkafka 2.16's Metadata v12 for every topic carries 3 bytes after its body, which
    a Kafka broker leaves unread: the hub answers it too (it closed the connection)."""
    with Client(kafka_hub.address) as client:
        client.create_topic("listed-a")
        client.create_topic("listed-b")
    listed = admin.list_topics(timeout=30).topics
    assert {"listed-a", "listed-b"} <= set(listed)
