"""Kafka consumer groups against a real hub process, with clients nobody on this project
wrote: confluent-kafka (librdkafka), kafka-python, aiokafka and kcat -G.

A group's committed offset is the consumed seq-id of the durable subscription
`kafka.<group>` (docs/kafka.md): `hedwig subscriptions` shows it, and it outlives the
consumers and the hub."""

import asyncio
import json
import subprocess
import time
from pathlib import Path

import aiokafka
import confluent_kafka
import kafka
import pytest
from confluent_kafka.admin import AdminClient

from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess
from tests.kafka.wire import KafkaPeer

ROOT = Path(__file__).resolve().parents[2]
HEDWIG = str(ROOT / ".venv" / "bin" / "hedwig")
DEADLINE_S = 60.0
OFFSET_COMMIT, HEARTBEAT, SYNC_GROUP = 8, 12, 14
NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_GROUP_ID, UNKNOWN_MEMBER_ID = 0, 1, 3, 24, 25


@pytest.fixture(scope="module")
def kafka_hub(tmp_path_factory):
    with HubProcess(tmp_path_factory.mktemp("kafka-groups"), kafka=True) as process:
        yield process


def _bootstrap(hub) -> str:
    return f"127.0.0.1:{hub.kafka_port}"


def _publish(hub, topic, payloads):
    with Client(hub.address) as client:
        client.publish_many(topic, payloads)


def _subscriptions(hub, topic) -> dict:
    """subscriber id -> row, as `hedwig subscriptions TOPIC --json` prints them."""
    done = subprocess.run(
        [HEDWIG, "--hub", hub.address, "subscriptions", topic, "--json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return {row["subscriber_id"]: row for row in json.loads(done.stdout)}


def _confluent(hub, group, **extra):
    return confluent_kafka.Consumer(
        {
            "bootstrap.servers": _bootstrap(hub),
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            **extra,
        }
    )


def test_two_confluent_consumers_share_topics_and_one_takes_over_from_the_committed_offsets(kafka_hub):
    topics = ["share-a", "share-b"]
    with Client(kafka_hub.address) as client:
        for topic in topics:
            client.create_topic(topic)
    strategy = {"partition.assignment.strategy": "roundrobin"}
    first, second = _confluent(kafka_hub, "sharers", **strategy), _confluent(kafka_hub, "sharers", **strategy)
    first.subscribe(topics)
    second.subscribe(topics)
    consumed = {first: [], second: []}
    deadline = time.monotonic() + DEADLINE_S
    # The group settles with one (empty) topic each; then each reads 5 records of its own.
    while not all(len(c.assignment()) == 1 for c in consumed):
        assert time.monotonic() < deadline, {c.memberid(): c.assignment() for c in consumed}
        for consumer in consumed:
            assert consumer.poll(0.1) is None
    for topic in topics:
        _publish(kafka_hub, topic, [b"%s-%d" % (topic.encode(), i) for i in range(20)])
    while not all(len(got) == 5 for got in consumed.values()):
        assert time.monotonic() < deadline
        for consumer, got in consumed.items():
            message = consumer.poll(0.1)
            if message is not None and not message.error():
                got.append(message.value())
                if len(got) == 5:
                    consumer.pause(consumer.assignment())  # (stays in the group, reads no more)
    assert {tp.topic for c in consumed for tp in c.assignment()} == set(topics)
    for consumer in consumed:
        consumer.commit(asynchronous=False)
    # The offsets are the subscriptions `kafka.sharers`, as hedwig's own tools show them.
    for topic in topics:
        row = _subscriptions(kafka_hub, topic)["kafka.sharers"]
        assert (row["consumed_seq"], row["lag"]) == (5, 15)
    # The first leaves; the second (paused: it reads nothing it would read again) takes
    # its partition over, and the new assignment reads both from their committed offsets.
    left = first.assignment()[0].topic
    first.close()
    seen = list(consumed[first]) + list(consumed[second])
    resumed = False
    while len(seen) < 40:
        assert time.monotonic() < deadline, sorted(seen)
        if not resumed and len(second.assignment()) == 2:
            second.resume(second.assignment())  # (its own partition stays paused through the rebalance)
            resumed = True
        message = second.poll(0.2)
        if message is not None and not message.error():
            seen.append(message.value())
    assert {tp.topic for tp in second.assignment()} == set(topics)
    # Every record once: nothing lost, nothing read twice.
    assert sorted(seen) == sorted(b"%s-%d" % (t.encode(), i) for t in topics for i in range(20))
    second.commit(asynchronous=False)
    assert _subscriptions(kafka_hub, left)["kafka.sharers"]["lag"] == 0
    second.close()


def test_admin_lists_describes_and_deletes_groups(kafka_hub):
    topic = "admin-groups"
    _publish(kafka_hub, topic, [b"x", b"y", b"z"])
    consumer = _confluent(kafka_hub, "described")
    consumer.subscribe([topic])
    deadline = time.monotonic() + DEADLINE_S
    while (message := consumer.poll(0.2)) is None or message.error():
        assert time.monotonic() < deadline
    consumer.commit(message=message, asynchronous=False)
    admin = AdminClient({"bootstrap.servers": _bootstrap(kafka_hub)})
    listed = admin.list_consumer_groups().result(30)
    assert "described" in {g.group_id for g in listed.valid}
    described = admin.describe_consumer_groups(["described"])["described"].result(30)
    assert described.state.name == "STABLE" and len(described.members) == 1
    assert [tp.topic for tp in described.members[0].assignment.topic_partitions] == [topic]
    partition = confluent_kafka.TopicPartition(topic, 0)
    wanted = confluent_kafka.ConsumerGroupTopicPartitions("described", [partition])
    offsets = admin.list_consumer_group_offsets([wanted])["described"].result(30)
    assert [tp.offset for tp in offsets.topic_partitions] == [1]
    # Every topic the group committed (OffsetFetch with topics null).
    every = confluent_kafka.ConsumerGroupTopicPartitions("described")
    offsets = admin.list_consumer_group_offsets([every])["described"].result(30)
    assert [(tp.topic, tp.offset) for tp in offsets.topic_partitions] == [(topic, 1)]
    # A group with members is not deleted (Kafka's NON_EMPTY_GROUP); once empty it is, with its subscription.
    with pytest.raises(confluent_kafka.KafkaException, match="NON_EMPTY_GROUP"):
        admin.delete_consumer_groups(["described"])["described"].result(30)
    consumer.close()
    admin.delete_consumer_groups(["described"])["described"].result(30)
    assert "kafka.described" not in _subscriptions(kafka_hub, topic)


def test_kafka_python_group_resumes_after_its_commit_through_a_hub_restart(tmp_path):
    topic = "resume-kafka-python"
    with HubProcess(tmp_path, kafka=True) as hub:
        _publish(hub, topic, [b"r%d" % i for i in range(10)])

        def consumer():
            return kafka.KafkaConsumer(
                topic,
                bootstrap_servers=_bootstrap(hub),
                group_id="resumers",
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                consumer_timeout_ms=int(DEADLINE_S * 1000),
            )

        first = consumer()
        got = [next(first).value for _ in range(4)]
        first.commit()
        first.close()
        assert got == [b"r0", b"r1", b"r2", b"r3"]
        hub.stop()
        hub.restart()
        second = consumer()
        assert [next(second).value for _ in range(6)] == [b"r%d" % i for i in range(4, 10)]
        second.commit()
        second.close()
        assert _subscriptions(hub, topic)["kafka.resumers"]["lag"] == 0


def test_aiokafka_group_commits_and_a_second_member_resumes(kafka_hub):
    topic = "resume-aiokafka"
    _publish(kafka_hub, topic, [b"a%d" % i for i in range(8)])

    async def read(count):
        consumer = aiokafka.AIOKafkaConsumer(
            topic,
            bootstrap_servers=_bootstrap(kafka_hub),
            group_id="aio",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        try:
            got = []
            while len(got) < count:
                message = await asyncio.wait_for(consumer.getone(), DEADLINE_S)
                got.append(message.value)
            await consumer.commit()
            return got
        finally:
            await consumer.stop()

    assert asyncio.run(read(3)) == [b"a0", b"a1", b"a2"]
    assert asyncio.run(read(5)) == [b"a%d" % i for i in range(3, 8)]
    assert _subscriptions(kafka_hub, topic)["kafka.aio"]["consumed_seq"] == 8


def test_kcat_balanced_consumer_commits_and_the_next_run_reads_only_what_is_new(kafka_hub):
    topic = "kcat-group"
    _publish(kafka_hub, topic, [b"k%d" % i for i in range(5)])

    def kcat_group(count):
        done = subprocess.run(
            [
                "kcat",
                "-b",
                _bootstrap(kafka_hub),
                "-G",
                "kcatters",
                topic,
                "-c",
                str(count),
                "-f",
                "%s\\n",
                "-X",
                "auto.offset.reset=earliest",
            ],
            check=True,
            capture_output=True,
            timeout=DEADLINE_S,
        )
        return done.stdout.decode().split()

    assert kcat_group(5) == [f"k{i}" for i in range(5)]
    assert _subscriptions(kafka_hub, topic)["kafka.kcatters"]["consumed_seq"] == 5
    _publish(kafka_hub, topic, [b"k5", b"k6"])
    assert kcat_group(2) == ["k5", "k6"]
    # `hedwig reset` moves the group's subscription as any other: it reads everything again.
    subprocess.run(
        [HEDWIG, "--hub", kafka_hub.address, "reset", topic, "kafka.kcatters", "--to", "earliest"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    assert kcat_group(7) == [f"k{i}" for i in range(7)]


def test_group_requests_no_client_sends_get_kafka_errors_and_nothing_is_stored(kafka_hub):
    """Forged group requests on the wire: a group id no subscriber id can hold, a partition
    that does not exist, an offset past the end, a member or generation the group never
    had: each gets Kafka's error, no subscription is made, the connection goes on."""
    topic = "forged-commits"
    _publish(kafka_hub, topic, [b"one", b"two"])

    def commit(peer, group, partition, offset, generation=-1, member=""):
        peer.request(
            OFFSET_COMMIT,
            8,
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member,
            topics=[
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": partition, "committed_offset": offset, "committed_metadata": None}
                    ],
                }
            ],
        )
        _cid, response = peer.response(OFFSET_COMMIT, 8)
        return response.topics[0].partitions[0].error_code

    with KafkaPeer(kafka_hub.kafka_port) as peer:
        assert commit(peer, "not a group id!", 0, 1) == INVALID_GROUP_ID
        assert commit(peer, "", 0, 1) == INVALID_GROUP_ID
        assert commit(peer, "forger", 3, 1) == UNKNOWN_TOPIC_OR_PARTITION
        assert commit(peer, "forger", 0, 99) == OFFSET_OUT_OF_RANGE
        assert commit(peer, "forger", 0, 1, generation=4, member="nobody") == UNKNOWN_MEMBER_ID
        assert "kafka.forger" not in _subscriptions(kafka_hub, topic)
        peer.request(HEARTBEAT, 4, group_id="forger", generation_id=1, member_id="nobody")
        assert peer.response(HEARTBEAT, 4)[1].error_code == UNKNOWN_MEMBER_ID
        peer.request(SYNC_GROUP, 5, group_id="forger", generation_id=1, member_id="nobody", assignments=())
        assert peer.response(SYNC_GROUP, 5)[1].error_code == UNKNOWN_MEMBER_ID
        # The same connection commits a real offset: the group's subscription is made.
        assert commit(peer, "forger", 0, 2) == NONE
    assert _subscriptions(kafka_hub, topic)["kafka.forger"]["consumed_seq"] == 2


CRASHING_MEMBER = """
import sys, confluent_kafka
consumer = confluent_kafka.Consumer({
    "bootstrap.servers": sys.argv[1], "group.id": "crashers", "auto.offset.reset": "earliest",
    "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
    "partition.assignment.strategy": "roundrobin",
})
consumer.subscribe(sys.argv[2:])
while True:
    message = consumer.poll(0.2)
    if message is not None and not message.error():
        print(message.value().decode(), flush=True)  # (read, then committed: at least once)
        consumer.commit(message=message, asynchronous=False)
"""


def test_a_member_killed_mid_stream_has_its_partition_taken_over_after_its_session_times_out(kafka_hub):
    topics = ["crash-a", "crash-b"]
    with Client(kafka_hub.address) as client:
        for topic in topics:
            client.create_topic(topic)
    doomed = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "python"), "-c", CRASHING_MEMBER, _bootstrap(kafka_hub), *topics],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    survivor = _confluent(kafka_hub, "crashers", **{"partition.assignment.strategy": "roundrobin"})
    try:
        survivor.subscribe(topics)
        deadline = time.monotonic() + DEADLINE_S
        while len(survivor.assignment()) != 1:  # (the other partition is the doomed member's)
            assert time.monotonic() < deadline
            assert survivor.poll(0.1) is None
        mine = survivor.assignment()[0].topic
        theirs = next(t for t in topics if t != mine)
        for topic in topics:
            _publish(kafka_hub, topic, [b"%s-%d" % (topic.encode(), i) for i in range(20)])
        read_by_doomed = [doomed.stdout.readline().strip() for _ in range(5)]
        doomed.kill()
        doomed.wait()
        read_by_doomed += doomed.stdout.read().split()  # (what it printed before it died)
        for topic in topics:
            _publish(kafka_hub, topic, [b"%s-%d" % (topic.encode(), i) for i in range(20, 40)])
        read_by_survivor = []
        wanted = {f"{t}-{i}" for t in topics for i in range(40)}
        while not wanted <= set(read_by_doomed) | set(read_by_survivor):
            assert time.monotonic() < deadline, len(set(read_by_doomed) | set(read_by_survivor))
            message = survivor.poll(0.2)
            if message is not None and not message.error():
                read_by_survivor.append(message.value().decode())
                survivor.commit(message=message, asynchronous=False)
        assert {tp.topic for tp in survivor.assignment()} == set(topics)
    finally:
        doomed.kill()
        doomed.wait()
        survivor.close()
    # Nothing lost; read twice at most what the doomed member read and had not committed
    # when it died (it prints before committing: at least once), here at most one record.
    everything = read_by_doomed + read_by_survivor
    read_twice = [value for value in set(everything) if everything.count(value) > 1]
    assert set(everything) == wanted and len(read_twice) <= 1, read_twice
    assert all(value.startswith(theirs) for value in read_twice)
    assert _subscriptions(kafka_hub, theirs)["kafka.crashers"]["lag"] == 0


def test_a_static_member_restarted_gets_its_partition_back_without_a_rebalance(kafka_hub):
    topics = ["static-a", "static-b"]
    for topic in topics:
        _publish(kafka_hub, topic, [b"%s-%d" % (topic.encode(), i) for i in range(3)])
    strategy = {"partition.assignment.strategy": "roundrobin", "session.timeout.ms": 30000}
    other = _confluent(kafka_hub, "statics", **strategy, **{"group.instance.id": "other"})
    revoked = []  # (every rebalance takes the other member's partitions away first: eager)
    other.subscribe(topics, on_revoke=lambda _consumer, partitions: revoked.append(partitions))

    def static_member():
        consumer = _confluent(kafka_hub, "statics", **strategy, **{"group.instance.id": "restarting"})
        consumer.subscribe(topics)
        return consumer

    first = static_member()
    deadline = time.monotonic() + DEADLINE_S
    while not (len(first.assignment()) == 1 and len(other.assignment()) == 1):
        assert time.monotonic() < deadline
        first.poll(0.1)
        other.poll(0.1)
    held = first.assignment()[0].topic
    rebalances = len(revoked)
    first.close()  # (a static member sends no LeaveGroup: the group stays as it was)
    second = static_member()
    while len(second.assignment()) != 1:
        assert time.monotonic() < deadline
        second.poll(0.1)
        other.poll(0.1)
    assert second.assignment()[0].topic == held
    # No rebalance: the other member kept its partition throughout.
    assert len(other.assignment()) == 1 and other.assignment()[0].topic != held
    assert len(revoked) == rebalances
    second.close()
    other.close()


def test_a_group_commits_and_fetches_the_offsets_of_every_partition_of_a_partitioned_topic(kafka_hub):
    """A partition K >= 1 is the topic `T.p-K`: the group's offset of it is that topic's
    subscription `kafka.<group>`."""
    topic = "parted"
    with Client(kafka_hub.address) as client:
        client.create_topic(topic, partitions=3)
        for k in range(30):
            client.publish(topic, b"v%d" % k, key=b"k%d" % k)
    consumer = _confluent(kafka_hub, "parters")
    consumer.subscribe([topic])
    got = []
    deadline = time.monotonic() + DEADLINE_S
    while len(got) < 30 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message)
    assert len(got) == 30
    consumer.commit(asynchronous=False)
    counts = {}
    for message in got:
        counts[message.partition()] = counts.get(message.partition(), 0) + 1
    assert len(counts) > 1  # (thirty keys spread over the partitions)
    committed = consumer.committed([confluent_kafka.TopicPartition(topic, k) for k in range(3)], timeout=30)
    consumer.close()
    assert {tp.partition: tp.offset for tp in committed} == {k: counts.get(k, 0) for k in range(3)}
    for k in range(1, 3):
        if counts.get(k):
            row = _subscriptions(kafka_hub, f"{topic}.p-{k}")["kafka.parters"]
            assert row["consumed_seq"] == counts[k]


def _assignment(consumer) -> set:
    return {tp.partition for tp in consumer.assignment()}


def _poll_until(members, consumed, done, what):
    """Polls every member (each keeps its place in the group) until `done()`; every
    record read goes to `consumed` as (member index, partition, value)."""
    deadline = time.monotonic() + DEADLINE_S
    while not done():
        assert time.monotonic() < deadline, what
        for index, member in enumerate(members):
            message = member.poll(0.05)
            if message is not None and message.error() is None:
                consumed.append((index, message.partition(), message.value()))


def test_three_members_share_six_partitions_and_a_fourth_joining_takes_some_over(kafka_hub):
    """Keyed records from a confluent-kafka producer over 6 partitions: each is read by
    exactly one of three members, the one its partition is assigned to. A fourth member
    joins: partitions move to it, and every record is read; what was committed before is
    not read again, and what was read after only once more at most (at-least-once)."""
    topic, group = "six-way", "six-readers"
    with Client(kafka_hub.address) as client:
        client.create_topic(topic, partitions=6)
    members = [_confluent(kafka_hub, group) for _ in range(3)]
    for member in members:
        member.subscribe([topic])
    consumed = []

    def settled(count):
        assignments = [_assignment(m) for m in members[:count]]
        union = set().union(*assignments)
        return union == set(range(6)) and sum(map(len, assignments)) == 6 and all(assignments)

    _poll_until(members, consumed, lambda: settled(3), "three members share the 6 partitions")
    assert consumed == []
    before = [_assignment(m) for m in members]
    producer = confluent_kafka.Producer({"bootstrap.servers": _bootstrap(kafka_hub)})
    written = {}

    def produce(values):
        for value in values:
            producer.produce(
                topic,
                value,
                key=b"key-" + value,
                on_delivery=lambda e, m: written.__setitem__(m.value(), e or m.partition()),
            )
        assert producer.flush(30) == 0

    first = [b"a%d" % i for i in range(60)]
    produce(first)
    assert len({written[v] for v in first}) == 6  # (sixty keys land on every partition)
    _poll_until(members, consumed, lambda: len(consumed) >= 60, "the first sixty read")
    assert sorted(v for _, _, v in consumed) == sorted(first)  # each exactly once
    for index, partition, value in consumed:
        assert partition == written[value] and partition in before[index]
    for member in members:
        member.commit(asynchronous=False)
    # A fourth member joins while more records come: the partitions are spread over four.
    members.append(_confluent(kafka_hub, group))
    members[3].subscribe([topic])
    second = [b"b%d" % i for i in range(60)]
    produce(second)

    def all_read():
        return settled(4) and set(second) <= {v for _, _, v in consumed}

    _poll_until(members, consumed, all_read, "four members, and the rest read")
    after = [_assignment(m) for m in members]
    assert after[3] and any(after[i] != before[i] for i in range(3))
    counts = {}
    for _, _, value in consumed:
        counts[value] = counts.get(value, 0) + 1
    assert set(counts) == set(first) | set(second)
    assert all(counts[v] == 1 for v in first)  # committed before the rebalance: not read again
    redelivered = sum(counts[v] - 1 for v in second)
    assert all(counts[v] <= 2 for v in second) and redelivered <= len(second)
    for member in members:
        member.close()
