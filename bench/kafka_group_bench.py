"""Kafka consumer groups on one hub process: a group of 3 confluent-kafka consumers
against a group of one, in the same run, over the same 3 topics (a hedwig topic is one
Kafka partition: 3 topics are 3 partitions the group shares); messages per second from
the subscribe to the last record received and its offsets committed, rebalances included,
and the group of 3 as a ratio to the group of one.

    .venv/bin/python bench/kafka_group_bench.py [--quick] [--messages N] [--rounds R] [--no-save]

Each consumer runs in a thread of its own (librdkafka releases the GIL while it waits),
consume() of 10,000 at a time; each round uses new groups, so both read from the
earliest offset. Figures are medians of --rounds.

Prints JSON and writes bench/results/kafka_group_bench.json.
"""

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.figures import RESULTS_DIR, emit, load
from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess

RESULTS = RESULTS_DIR / "kafka_group_bench.json"
PAYLOAD = b"x" * 100
TOPICS = ("group-bench-a", "group-bench-b", "group-bench-c")


def fill(address, count) -> None:
    with Client(address) as client:
        for topic in TOPICS:
            for start in range(0, count, 1000):
                client.publish_many(topic, [PAYLOAD] * min(1000, count - start))


def group_consume(bootstrap, group, members, total) -> float:
    """Messages per second for `members` consumers of `group` reading `total` records."""
    import confluent_kafka

    consumers = [
        confluent_kafka.Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "partition.assignment.strategy": "roundrobin",
            }
        )
        for _ in range(members)
    ]
    received = [0] * members
    lock = threading.Lock()
    done = threading.Event()

    def run(index, consumer):
        consumer.subscribe(list(TOPICS))
        while not done.is_set():
            messages = consumer.consume(10_000, 0.2)
            if messages:
                consumer.commit(asynchronous=False)
                with lock:
                    received[index] += len(messages)
                    if sum(received) >= total:
                        done.set()

    started = time.perf_counter()
    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(consumers)]
    for thread in threads:
        thread.start()
    if not done.wait(300):
        raise RuntimeError(f"{group}: {sum(received)} of {total} records in 300 s")
    elapsed = time.perf_counter() - started
    for thread in threads:
        thread.join()
    for consumer in consumers:
        consumer.close()
    return sum(received) / elapsed


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer messages and rounds")
    parser.add_argument("--messages", type=int, default=None, help="records per topic")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    count = args.messages or (30_000 if args.quick else 100_000)
    rounds = args.rounds or (1 if args.quick else 3)
    report = {
        "benchmark": "kafka_group_bench",
        "messages_per_topic": count,
        "topics": len(TOPICS),
        "rounds": rounds,
    }
    report["load_before"] = load()
    figures = {"group_of_1": [], "group_of_3": []}
    with tempfile.TemporaryDirectory() as data, HubProcess(data, 0, kafka=True) as hub:
        bootstrap = f"127.0.0.1:{hub.kafka_port}"
        fill(hub.address, count)
        total = count * len(TOPICS)
        for n in range(rounds):
            figures["group_of_1"].append(group_consume(bootstrap, f"one-{n}", 1, total))
            figures["group_of_3"].append(group_consume(bootstrap, f"three-{n}", 3, total))
    medians = {name: round(statistics.median(values)) for name, values in figures.items()}
    report["msg_per_s"] = medians
    report["rounds_msg_per_s"] = {name: [round(v) for v in values] for name, values in figures.items()}
    report["group_of_3_ratio"] = round(medians["group_of_3"] / medians["group_of_1"], 3)
    report["load_after"] = load()
    emit(report, RESULTS, save=not args.no_save)
    return report


if __name__ == "__main__":
    main()
