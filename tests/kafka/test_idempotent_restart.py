"""Kafka idempotent producers through a SIGKILL and restart of a real hub process: a
producer's sequences are learnt again from the log (hedwig.kafka.sequences), so a batch
the hub stored before it died and the producer sends again is answered with its first
offset and stored once, and the producer's next batch follows.

A raw peer shows the rule exactly (the batch sent again after the restart, as librdkafka
does with a batch whose answer it lost); confluent-kafka with enable.idempotence=true
through kills mid-stream shows what a user sees: every record once, in order."""

import confluent_kafka

from hedwig.client import Client
from hedwig.kafka.apis import DUPLICATE_SEQUENCE_NUMBER, NONE, OUT_OF_ORDER_SEQUENCE_NUMBER
from hedwig.testing.hubprocess import HubProcess
from tests.kafka.wire import KafkaPeer, record_batch

PRODUCE = 0
INIT_PRODUCER_ID = 22
TIMEOUT_S = 60


def produce(port, topic, batch):
    """(error code, base offset) of one Produce (acks=all) of `batch` on a new connection."""
    with KafkaPeer(port) as peer:
        peer.request(
            PRODUCE,
            9,
            acks=-1,
            timeout=30000,
            topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        )
        _cid, response = peer.response(PRODUCE, 9)
    row = response.responses[0].partition_responses[0]
    return row.error_code, row.base_offset


def new_producer_id(port) -> int:
    with KafkaPeer(port) as peer:
        peer.request(INIT_PRODUCER_ID, 4, transactional_id=None, transaction_timeout_ms=-1)
        _cid, response = peer.response(INIT_PRODUCER_ID, 4)
    assert response.error_code == NONE
    return response.producer_id


def batch(producer_id, base_sequence, values):
    return record_batch([(b"k", v, []) for v in values], producer_id=producer_id, base_sequence=base_sequence)


def test_a_batch_sent_again_after_a_sigkill_and_restart_is_stored_once(tmp_path):
    hub = HubProcess(tmp_path, kafka=True)
    with hub:
        port = hub.kafka_port
        producer_id = new_producer_id(port)
        produce(port, "filler", batch(producer_id, 0, [b"elsewhere"]))  # (another topic's)
        assert produce(port, "kept", batch(producer_id, 0, [b"a", b"b", b"c"])) == (NONE, 0)
        assert produce(port, "kept", batch(producer_id, 3, [b"d", b"e"])) == (NONE, 3)
        with Client(hub.address) as client:
            client.publish("kept", b"native")  # (offset 5: not the producer's)
        hub.kill()
        hub.restart()
        # The last two batches sent again, as a producer that lost their answers does.
        assert produce(port, "kept", batch(producer_id, 3, [b"d", b"e"])) == (NONE, 3)
        assert produce(port, "kept", batch(producer_id, 0, [b"a", b"b", b"c"])) == (NONE, 0)
        # Past the next sequence: out of order; the next one: stored.
        assert produce(port, "kept", batch(producer_id, 9, [b"x"]))[0] == OUT_OF_ORDER_SEQUENCE_NUMBER
        assert produce(port, "kept", batch(producer_id, 5, [b"f"])) == (NONE, 6)
        with Client(hub.address) as client:
            assert [m.payload for m in client.read("kept")] == [b"a", b"b", b"c", b"d", b"e", b"native", b"f"]
        for sequence in range(6, 12):  # (five batches kept: the first two fall out)
            assert produce(port, "kept", batch(producer_id, sequence, [b"%d" % sequence]))[0] == NONE
        hub.kill()
        hub.restart()
        assert produce(port, "kept", batch(producer_id, 3, [b"d", b"e"]))[0] == DUPLICATE_SEQUENCE_NUMBER
        assert produce(port, "kept", batch(producer_id, 11, [b"11"])) == (NONE, 12)
        with Client(hub.address) as client:
            assert len(client.read("kept")) == 13


def test_confluent_kafka_idempotent_producer_through_sigkills_stores_every_record_once(tmp_path):
    hub = HubProcess(tmp_path, kafka=True)
    kills = 4
    per_round = 3000
    with hub:
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": f"127.0.0.1:{hub.kafka_port}",
                "enable.idempotence": True,
                "linger.ms": 2,
                "batch.num.messages": 50,
                "message.timeout.ms": 120000,
                "reconnect.backoff.ms": 50,
                "reconnect.backoff.max.ms": 500,
            }
        )
        errors = []
        delivered = []

        def report(error, message):
            if error is not None:
                errors.append(error)
            else:
                delivered.append(message.value())

        sent = []
        for round_number in range(kills + 1):
            for i in range(per_round):
                value = b"r%d-%d" % (round_number, i)
                sent.append(value)
                while True:
                    try:
                        producer.produce("through-kills", value=value, on_delivery=report)
                        break
                    except BufferError:
                        producer.poll(0.05)
                if i == per_round // 2 and round_number < kills:
                    # A quarter of the round answered, the rest of its half in flight or
                    # queued: kill.
                    while len(delivered) < len(sent) - per_round // 4:
                        producer.poll(0.001)
                    hub.kill()
                    hub.restart()
            producer.poll(0)
        assert producer.flush(TIMEOUT_S * 2) == 0
        assert errors == []
        assert sorted(delivered) == sorted(sent)
        with Client(hub.address) as client:
            stored = [m.payload for m in client.read("through-kills")]
    assert len(stored) == len(set(stored))  # nothing twice
    assert stored == sent  # nothing lost, in the order produced
