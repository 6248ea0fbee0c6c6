"""Kafka consumer groups in a secured region of two hubs (hedwig/kafka/offsets.py): the
group's coordinator commits the offsets of partitions another hub owns on that hub with
GROUP_OFFSET, as [auth] hub_user on behalf of the consumer's user, and the owner applies
that user's permissions and ownership. Before, such commits were refused
NOT_LEADER_OR_FOLLOWER with [auth] on, and a group could not commit at all."""

import json
import subprocess
import sys
import time

import confluent_kafka
from confluent_kafka.admin import AdminClient, NewTopic

from hedwig.auth import hash_password
from hedwig.auth.scram import stored_keys
from hedwig.client import Client
from hedwig.kafka.brokers import GROUPS_TOPIC, group_partition
from hedwig.protocol.auth_request import Credentials
from hedwig.protocol.partitions import partition_topic

TIMEOUT_S = 60
TOPIC = "t.orders"
USERS = {
    "alice": ("alice-pw", {"publish": ["t.*"], "subscribe": ["t.*"], "create": ["t.*"]}),
    "bob": ("bob-pw", {"subscribe": ["t.*"]}),
    "carol": ("carol-pw", {"subscribe": ["t.*"]}),
    "writer": ("writer-pw", {"publish": ["t.*"]}),  # may not subscribe
    "root": ("root-pw", {"admin": True}),
    "hubs": ("hubs-pw", {}),  # [auth] hub_user: trusted to name the user it acts for
}


def auth_conf(directory) -> str:
    records = {
        name: {"password": hash_password(pw, log2_n=10), "scram": stored_keys(pw), **record}
        for name, (pw, record) in USERS.items()
    }
    (directory / "users.json").write_text(json.dumps({"users": records}))
    (directory / "hubs-password").write_text("hubs-pw\n")
    return (
        f"[auth]\nenabled = true\nusers_file = {directory / 'users.json'}\nfailure_delay_s = 0.2\n"
        f"hub_user = hubs\nhub_password_file = {directory / 'hubs-password'}\n"
    )


def credentials(user):
    return Credentials(user, USERS[user][0])


def sasl(hub, user, group):
    return {
        "bootstrap.servers": f"127.0.0.1:{hub.kafka_port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": user,
        "sasl.password": USERS[user][0],
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }


def consume(hub, user, group, count):
    """The first `count` records a member of `group` reads (as `user`, through `hub`),
    committed once read; (values, the committed offsets {partition: offset})."""
    consumer = confluent_kafka.Consumer(sasl(hub, user, group))
    consumer.subscribe([TOPIC])
    got = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(got) < count:
            assert time.monotonic() < deadline, got
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                got.append(message.value())
        committed = consumer.commit(asynchronous=False)
        assert all(tp.error is None for tp in committed), committed
        return got, {tp.partition: tp.offset for tp in committed}
    finally:
        consumer.close()


def commit_errors(hub, user, group, offsets):
    """The Kafka errors of committing `offsets` {partition: offset} for `group` as `user`."""
    consumer = confluent_kafka.Consumer(sasl(hub, user, group))
    partitions = [confluent_kafka.TopicPartition(TOPIC, k, offset) for k, offset in offsets.items()]
    try:
        answered = consumer.commit(offsets=partitions, asynchronous=False)
        return {tp.partition: tp.error and tp.error.code() for tp in answered}
    except confluent_kafka.KafkaException as e:
        return {k: e.args[0].code() for k in offsets}
    finally:
        consumer.close()


def admin_settings(hub, user):
    return {k: v for k, v in sasl(hub, user, "").items() if k.startswith(("bootstrap", "sasl", "security"))}


def delete_group_error(hub, user, group):
    """The Kafka error code of DeleteGroups of `group` asked by `user` (None: deleted)."""
    admin = AdminClient(admin_settings(hub, user))  # (kept while the future waits: it ends with its client)
    future = admin.delete_consumer_groups([group], request_timeout=TIMEOUT_S)[group]
    try:
        future.result(TIMEOUT_S)
        return None
    except confluent_kafka.KafkaException as e:
        return e.args[0].code()


def group_rows(root, group):
    """{partition topic: (consumed seq-id, user)} of the group's subscriptions, read by
    `hedwig subscriptions` as an admin."""
    found = {}
    for name in (TOPIC, f"{TOPIC}.p-1"):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "hedwig",
                "--hub",
                root,
                "--user",
                "root",
                "--json",
                "subscriptions",
                name,
            ],
            capture_output=True,
            text=True,
            env={"HEDWIG_PASSWORD": "root-pw", "PATH": ""},
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        for row in json.loads(done.stdout):
            if row["subscriber_id"] == f"kafka.{group}":
                found[name] = (row["consumed_seq"], row["user"])
    return found


def test_a_sasl_groups_commits_on_the_partitions_owner_are_its_users_and_refused_to_others(region, tmp_path):
    hubs = region(2, kafka=True, conf=auth_conf(tmp_path))
    owner, coordinator = hubs.hubs
    with Client(owner.address, max_redirects=0, credentials=credentials("alice")) as client:
        client.create_topic(TOPIC, partitions=2)  # (both partitions on `owner`)
    # As many topics on `owner` as the 8 partitions of __consumer_offsets the first
    # FindCoordinator makes on `coordinator`: the region is balanced, and no rebalancing
    # moves the group's coordinator onto `owner` meanwhile (a topic a Kafka client
    # creates is claimed by the hub asked).
    admin = AdminClient(admin_settings(owner, "alice"))
    admin.create_topics([NewTopic("t.ballast", num_partitions=6)])["t.ballast"].result(TIMEOUT_S)
    with Client(hubs.addresses, credentials=credentials("alice")) as client:
        for k, name in enumerate((TOPIC, f"{TOPIC}.p-1")):
            client.publish_many(name, [b"%d-%d" % (k, i) for i in range(5)])
        ballast = ["t.ballast", *(f"t.ballast.p-{k}" for k in range(1, 6))]
        assert {client.describe(name)["owner"] for name in ballast} == {owner.address}
    first = {b"%d-%d" % (k, i) for k in (0, 1) for i in range(5)}

    # bob's member, through the other hub (which the first FindCoordinator made the
    # group's coordinator), reads and commits both partitions.
    got, committed = consume(coordinator, "bob", "bobs", 10)
    assert set(got) == first and committed == {0: 5, 1: 5}
    with Client(hubs.addresses, credentials=credentials("root")) as client:
        owners = {name: client.describe(name)["owner"] for name in (TOPIC, f"{TOPIC}.p-1")}
        groups_partition = partition_topic(GROUPS_TOPIC, group_partition("bobs"))
        assert client.describe(groups_partition)["owner"] == coordinator.address
    assert set(owners.values()) == {owner.address}
    # The commits are bob's subscriptions on the owner, as `hedwig subscriptions` shows.
    bobs = {TOPIC: (5, "bob"), f"{TOPIC}.p-1": (5, "bob")}
    assert group_rows(hubs.addresses, "bobs") == bobs

    # A restarted member resumes after the committed offsets: the new records first.
    with Client(hubs.addresses, credentials=credentials("alice")) as client:
        for k, name in enumerate((TOPIC, f"{TOPIC}.p-1")):
            client.publish_many(name, [b"%d-%d" % (k, i) for i in range(5, 7)])
    got, committed = consume(coordinator, "bob", "bobs", 4)
    assert sorted(got) == [b"0-5", b"0-6", b"1-5", b"1-6"] and committed == {0: 7, 1: 7}
    assert group_rows(hubs.addresses, "bobs") == {TOPIC: (7, "bob"), f"{TOPIC}.p-1": (7, "bob")}

    # carol may read the topic, but the group's subscriptions on the owner are bob's: her
    # commits in his group are refused there; a user who may not subscribe is refused.
    assert commit_errors(coordinator, "carol", "bobs", {0: 1, 1: 1}) == {
        0: confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED,
        1: confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED,
    }
    errors = commit_errors(coordinator, "writer", "writers", {0: 1, 1: 1})
    assert set(errors.values()) <= {
        confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED,
        confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED,
    }, errors
    assert group_rows(hubs.addresses, "bobs") == {TOPIC: (7, "bob"), f"{TOPIC}.p-1": (7, "bob")}
    assert group_rows(hubs.addresses, "writers") == {}

    # DeleteGroups through the coordinator: carol's is refused on the owner, bob's deletes.
    assert (
        delete_group_error(coordinator, "carol", "bobs")
        == confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED
    )
    assert group_rows(hubs.addresses, "bobs") == {TOPIC: (7, "bob"), f"{TOPIC}.p-1": (7, "bob")}
    assert delete_group_error(coordinator, "bob", "bobs") is None
    assert group_rows(hubs.addresses, "bobs") == {}
    with Client(hubs.addresses, credentials=credentials("root")) as client:  # (still: no shortcut)
        assert client.describe(groups_partition)["owner"] == coordinator.address
