"""The Kafka port against the native protocol, in one run on one hub process: 100-byte
records produced by confluent-kafka (librdkafka) against the blocking client's
publish_many, and consumed by confluent-kafka from the earliest offset against a
native subscriber catching up from the earliest seq-id; messages per second, and each
Kafka figure as a ratio to its native peer.

    .venv/bin/python bench/kafka_bench.py [--quick] [--messages N] [--rounds R] [--no-save]

Native publish: publish_many of --set-size payloads at a time, each set acknowledged
before the next (the client's own batching). Kafka produce: librdkafka's producer with
linger.ms=5 and acks=all, every record's delivery report received (flush). Catch-up: a
new subscription from the earliest, every message received, acknowledged per batch;
Kafka: a consumer that knows the topic's metadata (list_topics) assigned partition 0 from
the beginning, consume() of 10,000 at a time until every record is in. Each side runs
--rounds times on topics of its own, in turn, and the figures are medians (2 shared
cores: the load weighs on both alike).

The Kafka consumer reads the native publisher's topic too (`kafka_consume_ledger`,
`consume_ledger_ratio`): its records were never a Kafka producer's, so every batch is
built from the ledger's entries (the [kafka] produced_cache_bytes records do not apply).

The producer's own ceiling, in the same run: confluent-kafka producing the same way into
a hub whose Kafka Produce stores nothing (bench/kafka_null_sink.py: each request decoded
and answered, its records neither read nor kept); `produce_ceiling_ratio` is that rate
over native publish, the most kafka_produce's ratio could be whatever the hub did.

Prints JSON and writes bench/results/kafka_bench.json.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.figures import RESULTS_DIR, emit, load
from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess

RESULTS = RESULTS_DIR / "kafka_bench.json"
NULL_SINK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kafka_null_sink.py")
PAYLOAD = b"x" * 100


def native_publish(address, topic, count, set_size) -> float:
    with Client(address) as client:
        started = time.perf_counter()
        for start in range(0, count, set_size):
            client.publish_many(topic, [PAYLOAD] * min(set_size, count - start))
        return count / (time.perf_counter() - started)


def kafka_produce(bootstrap, topic, count) -> float:
    import confluent_kafka

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    failed = []

    def report(error, _message):
        if error is not None:
            failed.append(error)

    producer.produce(topic, PAYLOAD, on_delivery=report)  # (the topic's metadata, once)
    producer.flush(30)
    started = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, PAYLOAD, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    elapsed = time.perf_counter() - started
    assert not failed, failed[:3]
    return count / elapsed


def native_catch_up(address, topic, count) -> float:
    with Client(address) as client:
        started = time.perf_counter()
        subscription = client.subscribe(topic, f"bench-{time.monotonic_ns()}", start="earliest")
        got = 0
        while got < count:
            batch = subscription.receive_batch(timeout=30)
            if not batch:
                raise RuntimeError(f"native catch-up stopped at {got} of {count}")
            got += len(batch)
            subscription.ack(batch[-1])
        return got / (time.perf_counter() - started)


def kafka_consume(bootstrap, topic, count) -> float:
    import confluent_kafka

    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False}
    )
    try:
        # The partition's leader known first, as a running consumer knows it: assigned to
        # a partition it has no metadata for, librdkafka queries the offset only on a
        # retry timer of 500 ms ("no current leader for partition"), a wait of the
        # client's own that no broker shortens (a quarter of a round of 100,000 records).
        consumer.list_topics(topic, 10)
        started = time.perf_counter()
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        got = 0
        while got < count:
            for message in consumer.consume(min(10_000, count - got), 5):
                assert message.error() is None, message.error()
                got += 1
        return got / (time.perf_counter() - started)
    finally:
        consumer.close()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer messages and rounds")
    parser.add_argument("--messages", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--set-size", type=int, default=1000)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    count = args.messages or (50_000 if args.quick else 200_000)
    rounds = args.rounds or (1 if args.quick else 3)
    report = {"benchmark": "kafka_bench", "messages": count, "payload_bytes": len(PAYLOAD), "rounds": rounds}
    report["load_before"] = load()
    figures = {
        "native_publish": [],
        "kafka_produce": [],
        "native_catch_up": [],
        "kafka_consume": [],
        "kafka_consume_ledger": [],
        "kafka_produce_null_sink": [],
    }
    with (
        tempfile.TemporaryDirectory() as data,
        HubProcess(data, 0, kafka=True) as hub,
        tempfile.TemporaryDirectory() as sink_data,
        HubProcess(sink_data, 0, launcher=[sys.executable, NULL_SINK], kafka=True) as sink,
    ):
        bootstrap = f"127.0.0.1:{hub.kafka_port}"
        for n in range(rounds):
            figures["native_publish"].append(native_publish(hub.address, f"native-{n}", count, args.set_size))
            figures["kafka_produce"].append(kafka_produce(bootstrap, f"kafka-{n}", count))
            figures["native_catch_up"].append(native_catch_up(hub.address, f"native-{n}", count))
            figures["kafka_consume"].append(kafka_consume(bootstrap, f"kafka-{n}", count))
            # (what the native publisher wrote: no producer's records kept, each batch
            # built from the ledger's entries)
            figures["kafka_consume_ledger"].append(kafka_consume(bootstrap, f"native-{n}", count))
            figures["kafka_produce_null_sink"].append(
                kafka_produce(f"127.0.0.1:{sink.kafka_port}", f"null-{n}", count)
            )
    medians = {name: round(statistics.median(values)) for name, values in figures.items()}
    report["msg_per_s"] = medians
    report["rounds_msg_per_s"] = {name: [round(v) for v in values] for name, values in figures.items()}
    report["produce_ratio"] = round(medians["kafka_produce"] / medians["native_publish"], 3)
    report["consume_ratio"] = round(medians["kafka_consume"] / medians["native_catch_up"], 3)
    report["consume_ledger_ratio"] = round(medians["kafka_consume_ledger"] / medians["native_catch_up"], 3)
    report["produce_ceiling_ratio"] = round(medians["kafka_produce_null_sink"] / medians["native_publish"], 3)
    report["target"] = "each ratio at least 0.7 (issue 35)"
    # (what bench/before_after.py reads: the medians and the ratios)
    ratios = ("produce_ratio", "consume_ratio", "consume_ledger_ratio", "produce_ceiling_ratio")
    report["figures"] = {**medians, **{name: report[name] for name in ratios}}
    report["load_after"] = load()
    emit(report, RESULTS, save=not args.no_save)
    return report


if __name__ == "__main__":
    main()
