"""Kafka clients on a region of several hubs (hedwig.kafka.brokers): every hub serving
Kafka is a broker, a partition's leader is its topic's owner, a request for a partition
to a hub that does not own it is NOT_LEADER_OR_FOLLOWER, and librdkafka follows a
takeover by itself: a producer (acks=all, idempotence on) through a SIGKILL of a
partition's owner loses nothing it was told was stored, and a consumer reads on."""

import confluent_kafka
from confluent_kafka.admin import AdminClient

from hedwig.client import Client
from hedwig.kafka.apis import NONE, NOT_LEADER_OR_FOLLOWER
from hedwig.kafka.brokers import node_id_of
from hedwig.testing.polling import wait_until
from tests.kafka.wire import KafkaPeer, record_batch

PRODUCE, FETCH, LIST_OFFSETS, CREATE_TOPICS = 0, 1, 2, 19
TIMEOUT_S = 60


def create_at(hub, topic, partitions=1):
    """CreateTopics asked of `hub`: a topic a Kafka client creates is claimed by the hub asked."""
    with KafkaPeer(hub.kafka_port) as peer:
        peer.request(
            CREATE_TOPICS,
            7,
            topics=[
                {
                    "name": topic,
                    "num_partitions": partitions,
                    "replication_factor": -1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            timeout=30000,
            validate_only=False,
        )
        _cid, response = peer.response(CREATE_TOPICS, 7)
    assert response.topics[0].error_code == NONE, response.topics[0].error_message


def metadata(hub, topics):
    """(brokers {node id: "host:port"}, {topic: {partition: leader}}) as librdkafka reads
    them from `hub` alone."""
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{hub.kafka_port}"})
    found = {}
    for topic in topics:
        listed = admin.list_topics(topic, timeout=TIMEOUT_S)
        brokers = {b.id: f"{b.host}:{b.port}" for b in listed.brokers.values()}
        described = listed.topics[topic]
        assert described.error is None, described.error
        found[topic] = {k: p.leader for k, p in described.partitions.items()}
    return brokers, found


def partition_errors(port, topic, partition=0):
    """The error codes of Produce, Fetch and ListOffsets of one partition asked of the hub
    listening for Kafka on `port`."""
    with KafkaPeer(port) as peer:
        peer.request(
            PRODUCE,
            9,
            transactional_id=None,
            acks=-1,
            timeout=30000,
            topic_data=[
                {
                    "name": topic,
                    "partition_data": [{"index": partition, "records": record_batch([(None, b"v", [])])}],
                }
            ],
        )
        produced = peer.response(PRODUCE, 9)[1].responses[0].partition_responses[0].error_code
        peer.fetch(topic, partition, 0, max_bytes=4096)
        fetched = peer.response(FETCH, 12)[1].responses[0].partitions[0].error_code
        peer.request(
            LIST_OFFSETS,
            7,
            replica_id=-1,
            isolation_level=0,
            topics=[{"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}],
        )
        listed = peer.response(LIST_OFFSETS, 7)[1].topics[0].partitions[0].error_code
    return produced, fetched, listed


def test_metadata_names_every_hub_and_each_partition_owner_and_the_others_refuse_it(region):
    hubs = region(2, kafka=True)
    first, second = hubs.hubs
    create_at(first, "on-first", partitions=2)
    create_at(second, "on-second")
    with Client(hubs.addresses) as client:
        owners = {t: client.describe(t)["owner"] for t in ("on-first", "on-first.p-1", "on-second")}
    assert owners == {"on-first": first.address, "on-first.p-1": first.address, "on-second": second.address}
    expected_brokers = {
        node_id_of(first.address): f"127.0.0.1:{first.kafka_port}",
        node_id_of(second.address): f"127.0.0.1:{second.kafka_port}",
    }
    expected_leaders = {
        "on-first": {0: node_id_of(first.address), 1: node_id_of(first.address)},
        "on-second": {0: node_id_of(second.address)},
    }
    for hub in (first, second):
        assert metadata(hub, ["on-first", "on-second"]) == (expected_brokers, expected_leaders)
    # Each partition's requests to the hub that does not own it: NOT_LEADER_OR_FOLLOWER.
    refused = (NOT_LEADER_OR_FOLLOWER,) * 3
    assert partition_errors(second.kafka_port, "on-first", 0) == refused
    assert partition_errors(second.kafka_port, "on-first", 1) == refused
    assert partition_errors(first.kafka_port, "on-second", 0) == refused
    assert partition_errors(first.kafka_port, "on-second", 0) == refused
    assert partition_errors(first.kafka_port, "on-first", 1) == (NONE, NONE, NONE)
    with Client(hubs.addresses) as client:  # (nothing stored by the refused produces)
        assert len(client.read("on-second")) == 0 and len(client.read("on-first.p-1")) == 1


def test_an_idempotent_producer_and_a_consumer_follow_a_sigkill_of_the_partitions_owner(region):
    hubs = region(2, kafka=True, session_timeout_ms=2000)
    owner_hub, other = hubs.hubs
    topic = "moving"
    create_at(owner_hub, topic, partitions=2)
    bootstrap = ",".join(f"127.0.0.1:{hub.kafka_port}" for hub in hubs.hubs)
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 2,
            "message.timeout.ms": 120000,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "region-reader",
            "enable.auto.commit": False,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    consumer.assign(
        [confluent_kafka.TopicPartition(topic, k, confluent_kafka.OFFSET_BEGINNING) for k in (0, 1)]
    )
    acknowledged, errors, consumed = [], [], []

    def report(error, message):
        if error is not None:
            errors.append(error)
        else:
            acknowledged.append(message.value())

    def consume_some():
        message = consumer.poll(0.01)
        if message is not None and message.error() is None:
            consumed.append(message.value())

    def produce(count, start):
        for i in range(start, start + count):
            value = b"%d" % i
            while True:
                try:
                    producer.produce(topic, key=b"k%d" % (i % 16), value=value, on_delivery=report)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
            consume_some()

    try:
        produce(2000, 0)
        while len(acknowledged) < 1000:  # (half answered, the rest in flight or queued: kill)
            producer.poll(0.001)
        owner_hub.kill()
        produce(2000, 2000)
        assert producer.flush(TIMEOUT_S * 2) == 0
        assert errors == []

        def consumed_all():
            consume_some()
            return len(set(consumed)) == 4000

        wait_until(consumed_all, "the consumer reading every record, through the takeover", TIMEOUT_S)
    finally:
        consumer.close()
    sent = [b"%d" % i for i in range(4000)]
    assert sorted(acknowledged) == sorted(sent)  # (every record answered, none refused)
    with Client(other.address) as client:
        assert client.describe(topic)["owner"] == other.address  # (taken over)
        stored = [m.payload for m in client.read(topic)]
    assert sorted(stored) == sorted(sent)  # nothing acknowledged lost, nothing stored twice
    assert set(consumed) == set(sent)  # the consumer followed the takeover


FIND_COORDINATOR, HEARTBEAT = 10, 12
NOT_COORDINATOR = 16


def find_coordinator(hub, group):
    """(error code, node id, "host:port") of FindCoordinator asked of `hub`."""
    with KafkaPeer(hub.kafka_port) as peer:
        peer.request(FIND_COORDINATOR, 4, key_type=0, coordinator_keys=[group])
        (row,) = peer.response(FIND_COORDINATOR, 4)[1].coordinators
    return row.error_code, row.node_id, f"{row.host}:{row.port}"


def heartbeat_error(hub, group):
    with KafkaPeer(hub.kafka_port) as peer:
        peer.request(HEARTBEAT, 4, group_id=group, generation_id=1, member_id="m", group_instance_id=None)
        return peer.response(HEARTBEAT, 4)[1].error_code


def test_a_group_across_two_hubs_follows_a_sigkill_of_its_coordinator(region):
    hubs = region(2, kafka=True, session_timeout_ms=2000)
    owner, coordinator = hubs.hubs
    topic, group, count = "grouped", "region-group", 400
    create_at(owner, topic, partitions=4)  # (every partition on `owner`)
    # Ballast on `owner`, so that the region is balanced (8 topics each, with the 8
    # partitions of __consumer_offsets on `coordinator`) and rebalancing does not move
    # the group's coordinator onto `owner` before the kill.
    create_at(owner, "ballast", partitions=4)
    # The group's coordinator: the owner of its partition of __consumer_offsets, which
    # the first FindCoordinator (asked of `coordinator`) made there. Every hub names it;
    # the others answer the group's requests NOT_COORDINATOR.
    named = (NONE, node_id_of(coordinator.address), f"127.0.0.1:{coordinator.kafka_port}")
    assert find_coordinator(coordinator, group) == named
    assert find_coordinator(owner, group) == named
    assert heartbeat_error(owner, group) == NOT_COORDINATOR
    sent = {b"%d" % i for i in range(count)}
    with Client(hubs.addresses) as client:
        for k in range(4):
            partition = topic if k == 0 else f"{topic}.p-{k}"
            client.publish_many(partition, [b"%d" % i for i in range(k, count, 4)])

    assigned = {}  # consumer -> assignments it was given

    def consumer(hub):
        made = confluent_kafka.Consumer(
            {
                "bootstrap.servers": f"127.0.0.1:{hub.kafka_port}",  # (one hub each)
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 300,
                "reconnect.backoff.ms": 50,
                "reconnect.backoff.max.ms": 500,
            }
        )
        assigned[made] = 0
        made.subscribe([topic], on_assign=took, on_revoke=gave_back, on_lost=gave_back)
        return made

    def took(c, _partitions):
        assigned[c] += 1

    def gave_back(c, _partitions):
        """Partitions leave a member: what it read since its last commit is read again."""
        uncommitted.append(since_commit[c])
        since_commit[c] = 0

    uncommitted = []

    since_commit = {}
    consumers = [consumer(owner), consumer(coordinator)]
    consumed = {c: [] for c in consumers}
    since_commit.update((c, 0) for c in consumers)
    every = 10  # each member commits after every 10 records it reads

    def consume_round():
        for c in consumers:
            message = c.poll(0.05)
            if message is None or message.error() is not None:
                continue
            consumed[c].append(message.value())
            since_commit[c] += 1
            if since_commit[c] >= every:
                c.commit(asynchronous=False)
                since_commit[c] = 0

    def read(enough):
        def done():
            consume_round()
            return enough()

        return done

    try:
        wait_until(
            read(lambda: all(len(values) >= 2 * every for values in consumed.values())),
            "both members reading",
            TIMEOUT_S,
        )
        # The members share the partitions; stopped (paused), everything they read committed.
        assert sorted(len(c.assignment()) for c in consumers) == [2, 2]
        for c in consumers:
            c.pause(c.assignment())
            if since_commit[c]:
                c.commit(asynchronous=False)
                since_commit[c] = 0
        # Committed through the coordinator, the offsets are subscriptions on the owner.
        committed = {
            (tp.topic, tp.partition): tp.offset for c in consumers for tp in c.committed(c.assignment(), 30)
        }
        with Client(owner.address) as client:
            for k in range(4):
                partition = topic if k == 0 else f"{topic}.p-{k}"
                rows = client.subscriptions(partition)
                found = [r["consumed_seq"] for r in rows if r["subscriber_id"] == f"kafka.{group}"]
                assert found == ([committed[(topic, k)]] if committed[(topic, k)] >= 0 else [])
        assert sum(offset > 0 for offset in committed.values()) >= 2
        before = dict(assigned)
        read_before = sum(len(values) for values in consumed.values())
        coordinator.kill()
        # The members find the new coordinator, join there, get their partitions again
        # and read on from the committed offsets.
        wait_until(
            read(lambda: all(assigned[c] > before[c] for c in consumers)),
            "the members joining the group's new coordinator",
            TIMEOUT_S,
        )
        assert find_coordinator(owner, group) == (
            NONE,
            node_id_of(owner.address),
            f"127.0.0.1:{owner.kafka_port}",
        )
        for c in consumers:
            c.resume(c.assignment())
        wait_until(
            read(lambda: len(set().union(*consumed.values())) == count),
            "the group reading every record after its coordinator died",
            TIMEOUT_S,
        )
    finally:
        for c in consumers:
            c.close()
    everything = [value for values in consumed.values() for value in values]
    assert set(everything) == sent and 0 < read_before < count
    # Read again: at most what a member had read since its last commit when its partitions
    # left it in a rebalance (the group's first joins, and after the kill, its commits
    # failing until the group had its new coordinator), under `every` each time: Kafka's
    # at-least-once. Everything read before the kill was committed.
    again = len(everything) - count
    assert again <= sum(uncommitted) and all(n < every for n in uncommitted), (again, uncommitted)


METADATA = 3
LEADER_NOT_AVAILABLE = 5


def leaders(hub, topics):
    """{(topic, partition): (error code, leader)} of a raw Metadata v12 asked of `hub`
    (`topics` None: every topic)."""
    with KafkaPeer(hub.kafka_port) as peer:
        named = None if topics is None else [{"name": t, "topic_id": None} for t in topics]
        peer.request(
            METADATA,
            12,
            topics=named,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        response = peer.response(METADATA, 12)[1]
    return {
        (t.name, p.partition_index): (p.error_code, p.leader_id)
        for t in response.topics
        for p in t.partitions
    }


def test_a_partition_nobody_owns_is_placed_by_metadata_naming_it_not_by_a_listing(region):
    hubs = region(2, kafka=True, session_timeout_ms=2000)
    owner, survivor = hubs.hubs
    create_at(owner, "orphaned", partitions=2)
    owned = {("orphaned", k): (NONE, node_id_of(owner.address)) for k in (0, 1)}
    assert leaders(survivor, None) == owned
    owner.kill()
    # Once the dead owner's session expired, a listing of every topic claims nothing:
    # nobody leads the partitions (LEADER_NOT_AVAILABLE), and nobody owns them after.
    orphaned = {("orphaned", k): (LEADER_NOT_AVAILABLE, -1) for k in (0, 1)}
    wait_until(lambda: leaders(survivor, None) == orphaned, "the partitions without a leader", TIMEOUT_S)
    assert leaders(survivor, None) == orphaned
    # Metadata naming the topic places them: the survivor (alone now) claims them.
    led = {("orphaned", k): (NONE, node_id_of(survivor.address)) for k in (0, 1)}
    assert leaders(survivor, ["orphaned"]) == led
    assert leaders(survivor, None) == led
