"""A native subscription of a partitioned topic covers every partition (hedwig.client.partitioned),
on each client and `hedwig subscribe`, against real hubs: a producer publishes keyed messages
across the partitions (natively, or through Kafka with confluent-kafka), one subscription
receives every one, in order within each partition, acknowledges them on their partitions'
subscriptions, and resumes after a restart from what it acknowledged."""

import confluent_kafka
import pytest

from hedwig.client import Client
from hedwig.client.errors import NoSuchTopic, SubscriptionClosed, TopicBusy
from hedwig.protocol.partitions import partition_for_key, partition_topic, partition_topics
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.polling import wait_until
from tests.cli.test_cli import hedwig, lines
from tests.client.every_client import CLIENTS

PARTITIONS = 4
KEYS = [f"user-{i}".encode() for i in range(40)]
TIMEOUT_S = 30


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    with HubProcess(tmp_path_factory.mktemp("partitioned-subscriptions"), kafka=True) as process:
        yield process


def key_of(number: int) -> bytes:
    return KEYS[number % len(KEYS)]


def partition_of(topic: str, number: int) -> str:
    """The partition topic message `number` (keyed key_of(number)) goes to."""
    return partition_topic(topic, partition_for_key(key_of(number), PARTITIONS))


def publish(address, topic, numbers) -> None:
    with Client(address) as client:
        client.publish_many(topic, [b"%d" % n for n in numbers], keys=[key_of(n) for n in numbers])


def assert_in_order_per_partition(topic, messages) -> None:
    """Each message from its key's partition, and each partition's in publish order."""
    last = {}
    for message in messages:
        number = int(message.payload)
        assert message.topic == partition_of(topic, number)
        assert last.get(message.topic, -1) < number, (message.topic, number)
        last[message.topic] = number


def consumed(address, topic, subscriber_id) -> dict:
    """Each partition topic's consumed seq-id of the subscription (None: it has none)."""
    found = {}
    with Client(address) as client:
        for name in partition_topics(topic, PARTITIONS):
            rows = [row for row in client.subscriptions(name) if row["subscriber_id"] == subscriber_id]
            found[name] = rows[0]["consumed_seq"] if rows else None
    return found


@pytest.mark.parametrize("kind", CLIENTS, ids=lambda kind: kind.name)
def test_a_subscription_covers_every_partition_and_resumes_where_each_was_acknowledged(hub, kind):
    topic = f"parts-{kind.name}"
    with Client(hub.address) as client:
        client.create_topic(topic, partitions=PARTITIONS)
    publish(hub.address, topic, range(120))
    each = kind(hub.address)
    try:
        subscription = each.subscribe(topic, "reader", start="earliest")
        got = [subscription.receive() for _ in range(120)]
        assert None not in got
        assert sorted(int(m.payload) for m in got) == list(range(120))
        assert {m.topic for m in got} == set(partition_topics(topic, PARTITIONS))
        assert_in_order_per_partition(topic, got)
        for message in got[:50]:  # (each partition's acknowledged up to its last of these)
            subscription.ack(message)
        subscription.close()
        names = partition_topics(topic, PARTITIONS)
        acked = {name: max((m.seq for m in got[:50] if m.topic == name), default=0) for name in names}
        assert consumed(hub.address, topic, "reader") == acked
        publish(hub.address, topic, range(120, 160))
        again = each.subscribe(topic, "reader")  # (resumes each partition after its ack)
        rest = [again.receive() for _ in range(70 + 40)]
        assert None not in rest
        assert sorted(int(m.payload) for m in rest) == sorted(
            [int(m.payload) for m in got[50:]] + list(range(120, 160))
        )
        assert_in_order_per_partition(topic, rest)
        for message in rest:
            again.ack(message)
        publish(hub.address, topic, [160])  # (nothing else was due: the next is this one)
        assert int(again.receive().payload) == 160
        again.close()
        each.call("unsubscribe", topic, "reader")
    finally:
        each.close()
    assert consumed(hub.address, topic, "reader") == dict.fromkeys(partition_topics(topic, PARTITIONS))


@pytest.mark.parametrize("kind", CLIENTS, ids=lambda kind: kind.name)
def test_a_shared_subscription_acknowledges_and_gives_back_on_each_partition(hub, kind):
    topic = f"shared-parts-{kind.name}"
    with Client(hub.address) as client:
        client.create_topic(topic, partitions=PARTITIONS)
    publish(hub.address, topic, range(40))
    each = kind(hub.address)
    try:
        subscription = each.subscribe(topic, "workers", start="earliest", kind="shared")
        got = [subscription.receive() for _ in range(40)]
        assert sorted(int(m.payload) for m in got) == list(range(40))
        given_back = next(m for m in got if m.topic == partition_topic(topic, 2))
        subscription.nack(given_back)
        again = subscription.receive()
        assert (again.topic, again.seq, again.payload) == (
            given_back.topic,
            given_back.seq,
            given_back.payload,
        )
        assert again.delivery_count == 2
        for message in [*got, again]:
            subscription.ack(message)
        subscription.close()
        publish(hub.address, topic, [40])
        resumed = each.subscribe(topic, "workers", kind="shared")
        assert int(resumed.receive().payload) == 40  # (everything before it acknowledged)
        resumed.close()
    finally:
        each.close()


def test_what_a_partitioned_subscription_refuses(hub):
    topic = "refusing-parts"
    with Client(hub.address) as client:
        client.create_topic(topic, partitions=PARTITIONS)
        with pytest.raises(ValueError, match="a pull subscription fetches from one"):
            client.subscribe(topic, "puller", deliver="pull")
        with pytest.raises(ValueError, match="partition is None"):
            client.subscribe(topic, "one", partition=PARTITIONS * 1000)
        publish(hub.address, topic, range(8))
        subscription = client.subscribe(topic, "numbers", start="earliest")
        first = subscription.receive(TIMEOUT_S)
        with pytest.raises(ValueError, match="acknowledge the Message"):
            subscription.ack(first.seq)
        subscription.close()
        # partition=K: that partition's topic alone.
        only = client.subscribe(topic, "one", start="earliest", partition=1)
        assert only.topic == partition_topic(topic, 1)
        numbers = [n for n in range(8) if partition_of(topic, n) == partition_topic(topic, 1)]
        assert [int(only.receive(TIMEOUT_S).payload) for _ in numbers] == numbers
        only.close()


def test_hedwig_subscribe_covers_every_partition_and_resumes_after_a_hub_restart(tmp_path):
    topic = "cli-subs"
    process = HubProcess(tmp_path, kafka=True)
    with process:
        assert hedwig("create", topic, "--partitions", str(PARTITIONS), hub=process).returncode == 0
        publish(process.address, topic, range(100))
        first = lines(
            hedwig("subscribe", topic, "cli", "--from", "earliest", "--count", "60", "--key", hub=process)
        )
    with process:  # (the hub restarted: each partition's consumed seq-id kept)
        rest = lines(hedwig("subscribe", topic, "cli", "--count", "40", "--key", hub=process))
        publish(process.address, topic, [100])
        assert lines(hedwig("subscribe", topic, "cli", "--count", "1", hub=process)) == ["100"]
    shown = [line.split("\t") for line in first + rest]
    numbers = [int(payload) for _, payload in shown]
    assert sorted(numbers) == list(range(100))
    for key, payload in shown:
        assert key.encode() == key_of(int(payload))
    for part in partition_topics(topic, PARTITIONS):  # (in order within each partition)
        mine = [n for n in numbers if partition_of(topic, n) == part]
        assert mine == sorted(mine) and mine


def test_a_native_subscriber_reads_what_a_kafka_producer_wrote_to_every_partition(hub):
    topic = "kafka-written-parts"
    with Client(hub.address) as client:
        client.create_topic(topic, partitions=PARTITIONS)
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": f"127.0.0.1:{hub.kafka_port}", "partitioner": "murmur2_random", "linger.ms": 5}
    )
    where = {}
    for number in range(200):
        producer.produce(
            topic,
            value=b"%d" % number,
            key=key_of(number),
            on_delivery=lambda error, record: where.setdefault(
                int(record.value()), (error, record.partition())
            ),
        )
    assert producer.flush(TIMEOUT_S) == 0
    assert all(error is None for error, _ in where.values())
    with Client(hub.address) as client:
        subscription = client.subscribe(topic, "native", start="earliest")
        got = [subscription.receive(TIMEOUT_S) for _ in range(200)]
        assert None not in got
        assert_in_order_per_partition(topic, got)
        for message in got:
            assert message.topic == partition_topic(topic, where[int(message.payload)][1])
            subscription.ack(message)
        subscription.close()
    assert {p for _, p in where.values()} == set(range(PARTITIONS))
    assert consumed(hub.address, topic, "native") == {
        name: sum(1 for m in got if m.topic == name) for name in partition_topics(topic, PARTITIONS)
    }


def test_partitions_owned_by_two_hubs_of_a_region_are_created_read_as_one_and_deleted(region):
    """Topics of 8 partitions created in a region (all claimed by the hub asked), then
    spread by rebalancing when a second hub joins; of one whose partitions both hubs own,
    one subscription reads every partition from both hubs at once; deleting it reaches
    every partition's owner."""
    hubs = region(1)
    (first,) = hubs.hubs
    topics = [f"region-parts-{i}" for i in range(4)]
    with Client(first.address) as client:
        for topic in topics:
            assert client.create_topic(topic, partitions=8)["partitions"] == 8
    second = hubs.add()
    owners = {}

    def spread_topics():
        with Client(first.address) as client:
            owners.update(
                (topic, {name: client.describe(name)["owner"] for name in partition_topics(topic, 8)})
                for topic in topics
            )
        return [t for t, found in owners.items() if set(found.values()) == {first.address, second.address}]

    spread = wait_until(spread_topics, "rebalancing spreading a topic's partitions over both hubs", 90, 0.5)
    topic = spread[0]
    names = partition_topics(topic, 8)
    numbers = range(200)
    with Client(first.address) as client:
        client.publish_many(topic, [b"%d" % n for n in numbers], keys=[key_of(n) for n in numbers])
    with Client(second.address) as client:
        subscription = client.subscribe(topic, "everywhere", start="earliest")
        got = [subscription.receive(TIMEOUT_S) for _ in range(200)]
        assert None not in got
        assert sorted(int(m.payload) for m in got) == list(numbers)
        for message in got:
            subscription.ack(message)
        subscription.close()
        counts = {}
        for message in got:
            counts[message.topic] = counts.get(message.topic, 0) + 1
        for name in names:
            (row,) = [r for r in client.subscriptions(name) if r["subscriber_id"] == "everywhere"]
            assert row["consumed_seq"] == counts.get(name, 0)
    # A subscription on a partition another hub owns holds the delete back, unless forced.
    held = next(name for name in names if owners[topic][name] != owners[topic][topic])
    with Client(first.address) as client:
        client.unsubscribe(topic, "everywhere")
        client.subscribe(held, "holder", deliver=False).close()
        with pytest.raises(TopicBusy, match=f"its partition {held} has 1 subscription"):
            client.delete_topic(topic)
        assert sorted(client.delete_topic(topic, force=True)["partitions"]) == sorted(names[1:])
        for name in names:
            with pytest.raises(NoSuchTopic):
                client.describe(name)


@pytest.mark.parametrize("kind", CLIENTS, ids=lambda kind: kind.name)
def test_a_partition_attached_elsewhere_ends_the_whole_subscription_after_what_came(hub, kind):
    topic = f"forced-parts-{kind.name}"
    with Client(hub.address) as client:
        client.create_topic(topic, partitions=PARTITIONS)
    publish(hub.address, topic, range(20))
    each = kind(hub.address)
    try:
        subscription = each.subscribe(topic, "taken", start="earliest")
        got = [subscription.receive() for _ in range(20)]
        assert sorted(int(m.payload) for m in got) == list(range(20))
        with Client(hub.address) as other:  # (another connection takes partition 1 over)
            other.subscribe(topic, "taken", partition=1, force_attach=True).close()
        with pytest.raises(SubscriptionClosed, match="forced closed"):
            subscription.receive()
    finally:
        each.close()
