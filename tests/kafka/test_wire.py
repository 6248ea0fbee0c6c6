"""The Kafka port against requests no client library sends (tests/kafka/wire.py), on a
real hub process: bad input gets a Kafka error or a closed connection, one log line
without a traceback, nothing stored, and the hub goes on serving; unknown APIs and
versions are answered UNSUPPORTED_VERSION with the connection kept; acks=0 gets no
answer; a Fetch waiting at the end is answered by the publish that follows."""

import struct

import pytest

from hedwig.client import Client
from hedwig.client.errors import NoSuchTopic
from hedwig.testing.hubprocess import HubProcess
from tests.kafka.wire import KafkaPeer, record_batch

PRODUCE, FETCH, API_VERSIONS, OFFSET_DELETE = 0, 1, 18, 47
NONE, CORRUPT_MESSAGE, UNSUPPORTED_VERSION, INVALID_RECORD = 0, 2, 35, 87


@pytest.fixture(scope="module")
def kafka_hub(tmp_path_factory):
    data = tmp_path_factory.mktemp("kafka-wire")
    with HubProcess(data, 0, "--conf", _conf(tmp_path_factory), kafka=True) as process:
        yield process


def _conf(tmp_path_factory):
    path = tmp_path_factory.mktemp("conf") / "hub.conf"
    path.write_text("[kafka]\nmax_request_bytes = 1048576\n")
    return str(path)


def _produce(peer, topic, records, acks=-1, version=9):
    return peer.request(
        PRODUCE,
        version,
        acks=acks,
        timeout=30000,
        topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    )


def _stored(hub, topic):
    """The messages a native client reads from `topic` ([] when it does not exist)."""
    with Client(hub.address) as client:
        try:
            return client.read(topic)
        except NoSuchTopic:
            return []


def _serves(hub, port):
    """The hub still serves Kafka clients: a produce on a new connection is stored."""
    with KafkaPeer(port) as peer:
        _produce(peer, "still-serving", record_batch([(b"k", b"v", [])]))
        _cid, response = peer.response(PRODUCE, 9)
    return response.responses[0].partition_responses[0].error_code == NONE


def test_a_batch_with_a_wrong_crc_is_refused_and_nothing_is_stored(kafka_hub):
    batch = bytearray(record_batch([(b"k", b"v", [("h", b"x")])]))
    batch[-1] ^= 0xFF  # (a byte the CRC covers)
    with KafkaPeer(kafka_hub.kafka_port, source="127.0.0.11") as peer:
        _produce(peer, "bad-crc", bytes(batch))
        _cid, response = peer.response(PRODUCE, 9)
        row = response.responses[0].partition_responses[0]
        assert (row.error_code, row.base_offset) == (CORRUPT_MESSAGE, -1)
        assert "CRC" in row.error_message
        # The connection goes on: a good batch on it is stored.
        _produce(peer, "bad-crc", record_batch([(b"k", b"good", [])]))
        _cid, response = peer.response(PRODUCE, 9)
        assert response.responses[0].partition_responses[0].error_code == NONE
    assert [m.payload for m in _stored(kafka_hub, "bad-crc")] == [b"good"]
    assert kafka_hub.wait_for_log("produce to bad-crc refused")


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b[:-3], id="records-cut-short"),
        pytest.param(lambda b: b[:20], id="header-cut-short"),
        pytest.param(lambda b: b[:16] + b"\x01" + b[17:], id="magic-1"),
        pytest.param(lambda b: b + b"\x00" * 5, id="trailing-bytes"),
    ],
)
def test_damaged_batches_are_refused_and_nothing_is_stored(kafka_hub, damage, request):
    topic = f"damaged-{request.node.callspec.id}"
    batch = damage(record_batch([(b"k", b"v" * 100, [])]))
    with KafkaPeer(kafka_hub.kafka_port) as peer:
        _produce(peer, topic, batch)
        _cid, response = peer.response(PRODUCE, 9)
    assert response.responses[0].partition_responses[0].error_code != NONE
    assert _stored(kafka_hub, topic) == []
    assert _serves(kafka_hub, kafka_hub.kafka_port)


def test_a_request_that_does_not_decode_closes_the_connection_with_one_line(kafka_hub):
    with KafkaPeer(kafka_hub.kafka_port, source="127.0.0.12") as peer:
        # A Produce v9 whose body is garbage (its topic array claims more than follows).
        peer.sock.sendall(peer.frame(PRODUCE, 9, b"\x00\xff\xff\xff\xff\x7f\xff\xff\xff\xff", flexible=True))
        assert peer.closed_by_hub()
    assert kafka_hub.wait_for_log("Kafka request refused, connection closed: Produce v9")
    assert "Traceback" not in kafka_hub.output()
    assert _serves(kafka_hub, kafka_hub.kafka_port)


def test_a_request_over_max_request_bytes_closes_the_connection_before_its_body(kafka_hub):
    with KafkaPeer(kafka_hub.kafka_port, source="127.0.0.13") as peer:
        peer.sock.sendall(struct.pack("!i", 1048577) + b"\x00" * 64)  # the rest never comes
        assert peer.closed_by_hub()
    assert kafka_hub.wait_for_log("a request of 1048577 bytes")
    with KafkaPeer(kafka_hub.kafka_port) as peer:
        peer.sock.sendall(struct.pack("!i", -5))
        assert peer.closed_by_hub()
    assert "Traceback" not in kafka_hub.output()
    assert _serves(kafka_hub, kafka_hub.kafka_port)


def test_unknown_apis_and_versions_get_unsupported_version_and_the_connection_is_kept(kafka_hub):
    with KafkaPeer(kafka_hub.kafka_port) as peer:
        # An API key no schema names: the error alone (as an ApiVersions v0 answer).
        peer.sock.sendall(peer.frame(999, 0, b"", correlation_id=41))
        frame = peer.read_frame()
        assert struct.unpack_from("!ih", frame) == (41, UNSUPPORTED_VERSION)
        # An API the hub does not serve (OffsetDelete): its own answer, the error in it.
        cid = peer.request(OFFSET_DELETE, 0, group_id="group", topics=())
        answered, response = peer.response(OFFSET_DELETE, 0)
        assert (answered, response.error_code) == (cid, UNSUPPORTED_VERSION)
        # ApiVersions of a version from the future: a v0 answer naming what is served.
        peer.sock.sendall(peer.frame(API_VERSIONS, 99, b"", correlation_id=43))
        answered, response = peer.response(API_VERSIONS, 0)
        assert (answered, response.error_code) == (43, UNSUPPORTED_VERSION)
        served = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert served[PRODUCE] == (3, 9) and served[FETCH] == (4, 12)
        # A served API at a version not served (Produce v2 predates record batches).
        peer.sock.sendall(peer.frame(PRODUCE, 2, b"", correlation_id=44))
        frame = peer.read_frame()
        assert struct.unpack_from("!i", frame) == (44,)
        # Still the same connection: a produce on it is stored.
        _produce(peer, "after-unknown", record_batch([(None, b"v", [])]))
        _cid, response = peer.response(PRODUCE, 9)
        assert response.responses[0].partition_responses[0].error_code == NONE


def test_acks_0_gets_no_answer_and_is_stored(kafka_hub):
    with KafkaPeer(kafka_hub.kafka_port) as peer:
        _produce(peer, "acks-zero", record_batch([(b"k", b"fire-and-forget", [])]), acks=0)
        cid = peer.request(API_VERSIONS, 3, client_software_name="t", client_software_version="1")
        # The next answer on the connection is the ApiVersions one: nothing for the produce.
        answered, response = peer.response(API_VERSIONS, 3, header_v0=True)
        assert (answered, response.error_code) == (cid, NONE)
    assert [m.payload for m in _stored(kafka_hub, "acks-zero")] == [b"fire-and-forget"]


def test_a_fetch_waiting_at_the_end_is_answered_by_the_next_publish(kafka_hub):
    topic = "long-poll"
    with Client(kafka_hub.address) as client:
        client.publish(topic, b"first")
        with KafkaPeer(kafka_hub.kafka_port, timeout=60) as peer:
            # max_wait far beyond the socket's timeout: only the publish can answer it in time.
            cid = peer.request(
                FETCH,
                12,
                max_wait=600_000,
                min_bytes=1,
                topics=[
                    {
                        "topic": topic,
                        "partitions": [{"partition": 0, "fetch_offset": 1, "partition_max_bytes": 1 << 20}],
                    }
                ],
            )
            client.publish(topic, b"second")
            answered, response = peer.response(FETCH, 12)
    assert answered == cid
    partition = response.responses[0].partitions[0]
    assert partition.error_code == NONE and partition.high_watermark == 2
    # Record batch v2: base offset 1 (seq-id 2), one record whose value is "second".
    records = bytes(partition.records)
    assert struct.unpack_from("!q", records)[0] == 1
    assert records.endswith(b"\x0csecond\x00")


def test_a_tombstone_and_an_unkeyed_record_in_a_compacted_topic(kafka_hub):
    with KafkaPeer(kafka_hub.kafka_port) as peer:
        peer.request(
            19,
            7,
            topics=[
                {
                    "name": "compacted-wire",
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [{"name": "cleanup.policy", "value": "compact"}],
                }
            ],
            timeout=30000,
            validate_only=False,
        )
        _answered, response = peer.response(19, 7)
        assert response.topics[0].error_code == NONE
        _produce(peer, "compacted-wire", record_batch([(None, b"no key", [])]))
        _cid, response = peer.response(PRODUCE, 9)
        assert response.responses[0].partition_responses[0].error_code == INVALID_RECORD
        _produce(peer, "compacted-wire", record_batch([(b"k", b"v", []), (b"k", None, [])]))
        _cid, response = peer.response(PRODUCE, 9)
        assert response.responses[0].partition_responses[0].error_code == NONE
    messages = _stored(kafka_hub, "compacted-wire")
    assert [(m.key, m.payload) for m in messages] == [(b"k", b"v"), (b"k", b"")]
    with Client(kafka_hub.address) as client:
        assert client.describe("compacted-wire")["compaction"] is True


def test_mutated_requests_get_an_answer_or_a_closed_connection_and_the_hub_serves_on(kafka_hub):
    """Fuzz: 300 mutations (bytes flipped, cut, repeated) of valid Produce, Fetch and
    Metadata frames, each on a connection of its own; each is answered or closes the
    connection, nothing stored is lost, and the hub serves afterwards."""
    import random

    rng = random.Random(35)
    with Client(kafka_hub.address) as client:
        client.publish_many("fuzz-kept", [b"a", b"b", b"c"])
    peer = KafkaPeer(kafka_hub.kafka_port)
    peer.close()
    frames = []
    for request in (
        lambda: _produce(peer, "fuzzed", record_batch([(b"k", b"v" * 50, [("h", b"x")])], codec=1)),
        lambda: peer.request(
            FETCH,
            12,
            max_wait=0,
            min_bytes=0,
            topics=[
                {
                    "topic": "fuzz-kept",
                    "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 4096}],
                }
            ],
        ),
        lambda: peer.request(3, 12, topics=[{"name": "fuzz-kept"}], allow_auto_topic_creation=False),
    ):
        peer.sock = _Captured()  # (the frame kept, not sent)
        request()
        frames.append(peer.sock.sent)
    for _ in range(300):
        frame = bytearray(rng.choice(frames))
        for _ in range(rng.randint(1, 4)):
            if len(frame) <= 5:
                break
            at = rng.randrange(4, len(frame))
            kind = rng.random()
            if kind < 0.6:
                frame[at] = rng.randrange(256)
            elif kind < 0.8:
                del frame[at:]
                frame[0:4] = struct.pack("!i", len(frame) - 4)
            else:
                frame[at:at] = frame[at : at + rng.randint(1, 8)]
                frame[0:4] = struct.pack("!i", len(frame) - 4)
        with KafkaPeer(kafka_hub.kafka_port, timeout=5, source="127.0.0.20") as fuzzed:
            fuzzed.sock.sendall(bytes(frame))
            fuzzed.sock.shutdown(1)  # (a frame cut short is all it will get)
            try:
                fuzzed.read_frame()  # an answer, or the hub's close
            except TimeoutError:
                raise AssertionError(f"neither answered nor closed: {bytes(frame)!r}") from None
    assert [m.payload for m in _stored(kafka_hub, "fuzz-kept")] == [b"a", b"b", b"c"]
    assert "Traceback" not in kafka_hub.output(), kafka_hub.output()[
        kafka_hub.output().index("Traceback") - 600 :
    ][:3000]
    assert _serves(kafka_hub, kafka_hub.kafka_port)


class _Captured:
    sent = None

    def sendall(self, data):
        self.sent = data


def test_a_fetch_of_what_a_producer_sent_answers_with_its_records_as_they_came(kafka_hub):
    """A Fetch of a batch a producer has just sent gets that batch's records byte for byte
    (its own timestamp deltas: an entry read from the ledger is framed anew, with deltas
    0), under the entry's offsets and publish time; from the middle of the entry it is
    the ledger's framing: both read as the same records."""
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    for n in range(3):
        builder.append(
            n, timestamp=1_700_000_000_000 + 7 * n, key=b"k%d" % n, value=b"v%d" % n, headers=[("h", b"x")]
        )
    sent = bytes(builder.build())
    with KafkaPeer(kafka_hub.kafka_port) as peer:
        _produce(peer, "as-produced", sent)
        _cid, response = peer.response(PRODUCE, 9)
        assert response.responses[0].partition_responses[0].error_code == NONE

        def fetch(offset):
            peer.request(
                FETCH,
                12,
                max_wait=0,
                min_bytes=0,
                topics=[
                    {
                        "topic": "as-produced",
                        "partitions": [
                            {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                        ],
                    }
                ],
            )
            _cid, response = peer.response(FETCH, 12)
            return bytes(response.responses[0].partitions[0].records)

        whole, middle = fetch(0), fetch(1)
    assert whole[61:] == sent[61:]
    message = _stored(kafka_hub, "as-produced")[0]

    def read(batch):
        records = DefaultRecordBatch(batch)
        assert records.validate_crc()
        return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records]

    expected = [(n, message.publish_time_us // 1000, b"k%d" % n, b"v%d" % n, [("h", b"x")]) for n in range(3)]
    assert read(whole) == expected
    assert read(middle) == expected[1:]
