"""SASL PLAIN and SCRAM-SHA-256/512 on the Kafka port of a real hub with [auth] on
(hedwig/kafka/sasl.py), with confluent-kafka and kcat (SCRAM with kafka-python and
aiokafka too): [auth]'s users log in, wrong credentials get
SASL_AUTHENTICATION_FAILED and a closed connection, nothing is served before
authentication, hedwig's permissions hold per topic, and failed logins count against the
same throttle as the native port's."""

import asyncio
import json
import logging
import subprocess
import time

import aiokafka
import confluent_kafka
import kafka
import kafka.errors
import pytest

from hedwig.auth import hash_password
from hedwig.auth.scram import stored_keys
from hedwig.client import Client
from hedwig.client.errors import AuthenticationFailed
from hedwig.protocol.auth_request import Credentials
from hedwig.testing.hubprocess import HubProcess
from tests.kafka.wire import KafkaPeer

FAST = 10  # scrypt's log2 n for tests: the stored format is the hub's
USERS = {
    "alice": ("alice-pw", {"publish": ["t.*"], "subscribe": ["t.*"], "create": ["t.*"]}),
    "bob": ("bob-pw", {"subscribe": ["t.*"]}),
    "root": ("root-pw", {"admin": True}),
    "carol": ("carol-pw", {"subscribe": ["t.*"]}),
    "erin": ("erin-pw", {"subscribe": ["t.*"]}),
    # (each test that sends wrong passwords has users of its own: librdkafka retries them)
    "sam": ("sam-pw", {"publish": ["t.*"], "subscribe": ["t.*"], "create": ["t.*"]}),
    "tim": ("tim-pw", {"subscribe": ["t.*"]}),
    "tom": ("tom-pw", {"subscribe": ["t.*"]}),
    "kim": ("kim-pw", {"subscribe": ["t.*"]}),
    "una": ("una-pw", {"subscribe": ["t.*"]}),
    "wes": ("wes-pw", {"subscribe": ["t.*"]}),
    "walt": ("walt-pw", {"subscribe": ["t.*"]}),
    "vic": ("vic-pw", {"subscribe": ["t.*"]}),
    "val": ("val-pw", {"subscribe": ["t.*"]}),
    # A user whose password was set before SCRAM was served: a hash and no SCRAM keys.
    "dave": ("dave-pw", {"publish": ["t.*"], "subscribe": ["t.*"]}),
}
WITHOUT_SCRAM_KEYS = {"dave"}
SCRAM = ["SCRAM-SHA-256", "SCRAM-SHA-512"]
METADATA, OFFSET_COMMIT, SASL_HANDSHAKE, SASL_AUTHENTICATE = 3, 8, 17, 36
GROUP_AUTHORIZATION_FAILED = 30
SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM = 58, 33
TIMEOUT_S = 30


@pytest.fixture(scope="module")
def auth_hub(tmp_path_factory):
    directory = tmp_path_factory.mktemp("kafka-sasl")
    users = directory / "users.json"
    records = {name: {"password": hash_password(pw, log2_n=FAST), **r} for name, (pw, r) in USERS.items()}
    for name, record in records.items():
        if name not in WITHOUT_SCRAM_KEYS:
            record["scram"] = stored_keys(USERS[name][0])
    users.write_text(json.dumps({"users": records}))
    conf = directory / "hub.conf"
    conf.write_text(
        f"[auth]\nenabled = true\nusers_file = {users}\nfailure_delay_s = 0\nmax_failures_per_user = 3\n"
        "max_failures_per_source = 1000\nauth_timeout_s = 2\n"  # (every test guesses from 127.0.0.1)
    )
    with HubProcess(directory / "data", 0, "--conf", str(conf), kafka=True) as process:
        yield process


def _sasl(hub, user, password=None, mechanism="PLAIN"):
    return {
        "bootstrap.servers": f"127.0.0.1:{hub.kafka_port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": mechanism,
        "sasl.username": user,
        "sasl.password": USERS[user][0] if password is None else password,
    }


def _produce(hub, user, topic, values, password=None, mechanism="PLAIN"):
    """{value: error or None} as the delivery reports say."""
    producer = confluent_kafka.Producer(
        {**_sasl(hub, user, password, mechanism), "message.timeout.ms": 10000}
    )
    reports = {}
    for value in values:
        producer.produce(topic, value, on_delivery=lambda e, m: reports.__setitem__(m.value(), e))
    producer.flush(TIMEOUT_S)
    return reports


def _stored(hub, topic):
    with Client(hub.address, credentials=Credentials("root", "root-pw")) as client:
        return [m.payload for m in client.read(topic)]


def test_a_user_produces_and_consumes_in_a_group_over_sasl_plain(auth_hub):
    assert _produce(auth_hub, "alice", "t.sasl", [b"one", b"two"]) == {b"one": None, b"two": None}
    consumer = confluent_kafka.Consumer(
        {
            **_sasl(auth_hub, "bob"),
            "group.id": "bobs",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(["t.sasl"])
    got = []
    for _ in range(200):
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            got.append(message.value())
        if len(got) == 2:
            break
    assert got == [b"one", b"two"]
    consumer.commit(asynchronous=False)
    consumer.close()
    assert _stored(auth_hub, "t.sasl") == [b"one", b"two"]
    with Client(auth_hub.address, credentials=Credentials("root", "root-pw")) as client:
        rows = {row["subscriber_id"]: row for row in client.subscriptions("t.sasl")}
    assert rows["kafka.bobs"]["consumed_seq"] == 2 and rows["kafka.bobs"]["user"] == "bob"
    # The group's offsets are bob's subscription: alice may not move them.
    with KafkaPeer(auth_hub.kafka_port) as peer:
        peer.request(SASL_HANDSHAKE, 1, mechanism="PLAIN")
        peer.response(SASL_HANDSHAKE, 1)
        peer.request(SASL_AUTHENTICATE, 2, auth_bytes=b"\0alice\0alice-pw")
        assert peer.response(SASL_AUTHENTICATE, 2)[1].error_code == 0
        partition = {"partition_index": 0, "committed_offset": 0, "committed_metadata": None}
        topics = [{"name": "t.sasl", "partitions": [partition]}]
        peer.request(
            OFFSET_COMMIT, 8, group_id="bobs", generation_id_or_member_epoch=-1, member_id="", topics=topics
        )
        answer = peer.response(OFFSET_COMMIT, 8)[1]
        assert answer.topics[0].partitions[0].error_code == GROUP_AUTHORIZATION_FAILED


def test_a_user_without_publish_permission_gets_topic_authorization_failed_and_nothing_is_stored(auth_hub):
    _produce(auth_hub, "alice", "t.readonly", [b"kept"])
    reports = _produce(auth_hub, "bob", "t.readonly", [b"refused"])
    assert reports[b"refused"].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    # Nor may alice publish outside t.*, nor create a topic there.
    reports = _produce(auth_hub, "alice", "elsewhere", [b"refused"])
    assert reports[b"refused"].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _stored(auth_hub, "t.readonly") == [b"kept"]
    with Client(auth_hub.address, credentials=Credentials("root", "root-pw")) as client:
        assert "elsewhere" not in client.topics()


def test_wrong_credentials_are_refused_with_sasl_authentication_failed(auth_hub):
    with KafkaPeer(auth_hub.kafka_port) as peer:
        peer.request(SASL_HANDSHAKE, 1, mechanism="GSSAPI")
        _cid, answer = peer.response(SASL_HANDSHAKE, 1)
        assert (answer.error_code, answer.mechanisms) == (UNSUPPORTED_SASL_MECHANISM, ("PLAIN", *SCRAM))
        peer.request(SASL_HANDSHAKE, 1, mechanism="PLAIN")
        assert peer.response(SASL_HANDSHAKE, 1)[1].error_code == 0
        peer.request(SASL_AUTHENTICATE, 2, auth_bytes=b"\0dave\0not-his")
        _cid, answer = peer.response(SASL_AUTHENTICATE, 2)
        assert answer.error_code == SASL_AUTHENTICATION_FAILED
        assert peer.closed_by_hub()


def test_nothing_is_served_before_authentication(auth_hub):
    with KafkaPeer(auth_hub.kafka_port) as peer:
        peer.request(METADATA, 12, topics=None, allow_auto_topic_creation=False)
        assert peer.closed_by_hub()


def test_a_connection_that_does_not_authenticate_is_closed_after_auth_timeout_s(auth_hub):
    with KafkaPeer(auth_hub.kafka_port) as idle:
        assert idle.closed_by_hub()
    with Client(auth_hub.address, credentials=Credentials("root", "root-pw")) as client:
        assert client.stats()["logins"]["auth_timeouts"] >= 1


def test_failed_logins_are_throttled_as_on_the_native_port(auth_hub):
    """max_failures_per_user = 3: after three wrong passwords over Kafka, the right one is
    refused without a check, on the Kafka port and on the native port alike."""

    def log_in(password):
        with KafkaPeer(auth_hub.kafka_port) as peer:
            peer.request(SASL_HANDSHAKE, 1, mechanism="PLAIN")
            peer.response(SASL_HANDSHAKE, 1)
            peer.request(SASL_AUTHENTICATE, 2, auth_bytes=b"\0carol\0" + password)
            return peer.response(SASL_AUTHENTICATE, 2)[1]

    assert log_in(b"carol-pw").error_code == 0
    for _ in range(3):
        assert log_in(b"guess").error_code == SASL_AUTHENTICATION_FAILED
    answer = log_in(b"carol-pw")
    assert (
        answer.error_code == SASL_AUTHENTICATION_FAILED and "too many failed logins" in answer.error_message
    )
    with pytest.raises(AuthenticationFailed, match="too many failed logins"):
        Client(auth_hub.address, credentials=Credentials("carol", "carol-pw")).connect()


@pytest.mark.parametrize(
    "mechanism, user, topic, guessed",
    [("PLAIN", "alice", "t.kcat", "alice"), ("SCRAM-SHA-512", "sam", "t.kcat-scram", "kim")],
)
def test_kcat_produces_and_reads_over_sasl(auth_hub, mechanism, user, topic, guessed):
    bootstrap = f"127.0.0.1:{auth_hub.kafka_port}"
    sasl = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", f"sasl.mechanisms={mechanism}"]
    logged_in = [*sasl, "-X", f"sasl.username={user}", "-X", f"sasl.password={USERS[user][0]}"]
    subprocess.run(
        ["kcat", "-b", bootstrap, *logged_in, "-t", topic, "-P"],
        input=b"a\nb\n",
        check=True,
        timeout=TIMEOUT_S,
        capture_output=True,
    )
    done = subprocess.run(
        ["kcat", "-b", bootstrap, *logged_in, "-t", topic, "-C", "-o", "beginning", "-c", "2", "-e"],
        check=True,
        capture_output=True,
        timeout=TIMEOUT_S,
    )
    assert done.stdout.split() == [b"a", b"b"]
    wrong = [*sasl, "-X", f"sasl.username={guessed}", "-X", "sasl.password=wrong"]
    refused = subprocess.run(
        ["kcat", "-b", bootstrap, *wrong, "-L", "-m", "5"], capture_output=True, timeout=TIMEOUT_S
    )
    assert refused.returncode != 0 and b"Authentication failed" in refused.stderr


def _consume(hub, user, topic, count, group, mechanism):
    consumer = confluent_kafka.Consumer(
        {
            **_sasl(hub, user, mechanism=mechanism),
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < count:
        assert time.monotonic() < deadline, got
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            got.append(message.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    return got


def _login_error(hub, user, password, mechanism):
    """The error a confluent-kafka client reports when it logs in as `user` with
    `password` (it connects at once: no record need be sent), or None once it has logged
    in (its metadata request answered)."""
    errors = []
    client = confluent_kafka.Producer({**_sasl(hub, user, password, mechanism), "error_cb": errors.append})
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        assert time.monotonic() < deadline, errors
        try:
            client.list_topics("t.probe", timeout=1)
            return None
        except confluent_kafka.KafkaException:
            client.poll(0.1)  # (serves error_cb)
        refused = [e for e in errors if e.code() == confluent_kafka.KafkaError._AUTHENTICATION]
        if refused:
            return refused[0].str()


@pytest.mark.parametrize("mechanism", SCRAM)
def test_users_produce_and_consume_in_a_group_over_scram(auth_hub, mechanism):
    topic = f"t.{mechanism.lower()}"
    assert _produce(auth_hub, "sam", topic, [b"one", b"two"], mechanism=mechanism) == {
        b"one": None, b"two": None
    }  # fmt: skip
    assert _consume(auth_hub, "bob", topic, 2, f"scram-{mechanism}", mechanism) == [b"one", b"two"]
    assert _stored(auth_hub, topic) == [b"one", b"two"]
    with Client(auth_hub.address, credentials=Credentials("root", "root-pw")) as client:
        row = {r["subscriber_id"]: r for r in client.subscriptions(topic)}[f"kafka.scram-{mechanism}"]
    assert (row["consumed_seq"], row["user"]) == (2, "bob")
    assert auth_hub.wait_for_log(f"authenticated as bob by SASL {mechanism}")


@pytest.mark.parametrize("mechanism, user", [("SCRAM-SHA-256", "tim"), ("SCRAM-SHA-512", "tom")])
def test_a_right_scram_password_logs_in_and_a_wrong_one_or_unknown_user_does_not(auth_hub, mechanism, user):
    assert _login_error(auth_hub, user, f"{user}-pw", mechanism) is None
    assert "Authentication failed" in _login_error(auth_hub, user, "not-the-password", mechanism)
    assert "Authentication failed" in _login_error(auth_hub, "nobody", f"{user}-pw", mechanism)


def test_a_scram_user_without_publish_permission_gets_topic_authorization_failed(auth_hub):
    _produce(auth_hub, "sam", "t.scram-readonly", [b"kept"], mechanism="SCRAM-SHA-512")
    reports = _produce(auth_hub, "bob", "t.scram-readonly", [b"refused"], mechanism="SCRAM-SHA-512")
    assert reports[b"refused"].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    reports = _produce(auth_hub, "sam", "elsewhere-scram", [b"refused"], mechanism="SCRAM-SHA-256")
    assert reports[b"refused"].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _stored(auth_hub, "t.scram-readonly") == [b"kept"]


def test_a_user_without_scram_keys_fails_scram_as_a_wrong_password_and_the_reason_is_logged_once(auth_hub):
    """dave's password was set before SCRAM was served: PLAIN logs in, SCRAM fails as a
    wrong password would (counted), and the hub says why once."""
    assert _login_error(auth_hub, "dave", "dave-pw", "PLAIN") is None
    for _ in range(2):
        assert "Authentication failed" in _login_error(auth_hub, "dave", "dave-pw", "SCRAM-SHA-256")
    assert auth_hub.wait_for_log("and 2 for dave in the last")
    reason = "user dave has no SCRAM-SHA-256 keys"
    assert sum(reason in line for line in auth_hub.output().splitlines()) == 1


def test_failed_scram_logins_count_against_the_same_throttle_as_plain(auth_hub):
    """max_failures_per_user = 3: three wrong SCRAM proofs, and erin's right PLAIN password
    is refused without a check."""
    for _ in range(3):
        assert "Authentication failed" in _login_error(auth_hub, "erin", "guess", "SCRAM-SHA-512")
    refused = _login_error(auth_hub, "erin", "erin-pw", "PLAIN")
    assert "too many failed logins" in refused


def test_a_scram_exchange_left_after_server_first_does_not_hold_the_users_logins(auth_hub):
    """A login the throttle admitted and whose proof never came is ended when its
    connection closes: more such exchanges than max_failures_per_user (3) leave the
    user's right password working (from a source it logged in from: held to its own
    limit there, whatever other tests' guesses from 127.0.0.1 count)."""
    assert _login_error(auth_hub, "una", "una-pw", "SCRAM-SHA-256") is None
    for attempt in range(5):
        with KafkaPeer(auth_hub.kafka_port) as peer:
            peer.request(SASL_HANDSHAKE, 1, mechanism="SCRAM-SHA-256")
            assert peer.response(SASL_HANDSHAKE, 1)[1].error_code == 0
            peer.request(SASL_AUTHENTICATE, 2, auth_bytes=b"n,,n=una,r=nonce%d" % attempt)
            answer = peer.response(SASL_AUTHENTICATE, 2)[1]
            assert answer.error_code == 0 and answer.auth_bytes.startswith(b"r=nonce%d" % attempt)
    assert _login_error(auth_hub, "una", "una-pw", "SCRAM-SHA-256") is None


def _scram_options(hub, user, password, mechanism) -> dict:
    """kafka-python's and aiokafka's options (they name them alike) for a SCRAM login."""
    return {
        "bootstrap_servers": f"127.0.0.1:{hub.kafka_port}",
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": password,
    }


@pytest.mark.parametrize("mechanism", SCRAM)
def test_kafka_python_logs_in_over_scram_with_the_right_password_only(auth_hub, mechanism):
    topic = f"t.kafka-python-{mechanism.lower()}"
    producer = kafka.KafkaProducer(**_scram_options(auth_hub, "sam", "sam-pw", mechanism))
    for value in (b"one", b"two"):
        producer.send(topic, value).get(TIMEOUT_S)
    producer.close()
    consumer = kafka.KafkaConsumer(
        topic, auto_offset_reset="earliest", **_scram_options(auth_hub, "bob", "bob-pw", mechanism)
    )
    got = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < 2:
        assert time.monotonic() < deadline, got
        for records in consumer.poll(timeout_ms=200).values():
            got += [record.value for record in records]
    consumer.close()
    assert got == [b"one", b"two"] and _stored(auth_hub, topic) == [b"one", b"two"]
    assert auth_hub.wait_for_log(f"authenticated as bob by SASL {mechanism}")
    # A wrong password: refused (the hub counts it), and the client gives up bootstrapping
    # (a user of this test's own: the client's retries count against that user's throttle
    # alone). kafka-python does not always say why: the hub answers
    # SASL_AUTHENTICATION_FAILED and closes, and it may take the close first.
    guesser = {"SCRAM-SHA-256": "wes", "SCRAM-SHA-512": "walt"}[mechanism]
    refused_before = _failed_logins(auth_hub)
    wrong = _scram_options(auth_hub, guesser, "not-the-password", mechanism)
    with pytest.raises(kafka.errors.KafkaTimeoutError):
        kafka.KafkaProducer(bootstrap_timeout_ms=3000, **wrong)
    assert _failed_logins(auth_hub) > refused_before


def _failed_logins(hub) -> int:
    with Client(hub.address, credentials=Credentials("root", "root-pw")) as client:
        return client.stats()["logins"]["failed"]


@pytest.mark.parametrize("mechanism", SCRAM)
def test_aiokafka_logs_in_over_scram_with_the_right_password_only(auth_hub, mechanism, caplog):
    topic = f"t.aiokafka-{mechanism.lower()}"

    async def ship_and_read():
        producer = aiokafka.AIOKafkaProducer(**_scram_options(auth_hub, "sam", "sam-pw", mechanism))
        await producer.start()
        try:
            for value in (b"one", b"two"):
                await producer.send_and_wait(topic, value)
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(
            topic, auto_offset_reset="earliest", **_scram_options(auth_hub, "bob", "bob-pw", mechanism)
        )
        await consumer.start()
        try:
            return [(await asyncio.wait_for(consumer.getone(), TIMEOUT_S)).value for _ in range(2)]
        finally:
            await consumer.stop()

    async def wrong_password():
        guesser = {"SCRAM-SHA-256": "vic", "SCRAM-SHA-512": "val"}[mechanism]
        producer = aiokafka.AIOKafkaProducer(
            **_scram_options(auth_hub, guesser, "not-the-password", mechanism)
        )
        try:
            await producer.start()
        finally:
            await producer.stop()

    assert asyncio.run(ship_and_read()) == [b"one", b"two"]
    assert _stored(auth_hub, topic) == [b"one", b"two"]
    caplog.set_level(logging.ERROR, logger="aiokafka")
    with pytest.raises(aiokafka.errors.KafkaConnectionError):  # ("Unable to bootstrap", saying why:)
        asyncio.run(wrong_password())
    said = [record.getMessage() for record in caplog.records]
    guesser = {"SCRAM-SHA-256": "vic", "SCRAM-SHA-512": "val"}[mechanism]
    refusal = f"SaslAuthenticationFailed: Authentication failed: wrong user name or password (user {guesser})"
    assert any(refusal in line for line in said), said
