"""Kafka clients nobody on this project wrote, each behind the same few calls, so that one
set of tests runs through every one of them against a real hub's Kafka port: Debian's
`kcat` (librdkafka, as a subprocess), confluent-kafka (librdkafka), kafka-python and
aiokafka.

A record is (offset, key, value, headers as a list of (name, bytes), timestamp in ms).
`consume(topic, start, count)`: `start` "earliest", an offset, or ("time", ms); the
first `count` records from there. `consume_latest(topic, publish)`: a consumer placed
at the end, calling `publish()` between polls until a record arrives; that record.
"""

import asyncio
import subprocess

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
TIMEOUT_S = 30.0


class Kcat:
    name = "kcat"

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def produce(self, topic, records, codec="none"):
        """records: (key, value, headers); kcat sends one message per line, keys after a
        tab, headers given on the command line (the same for every record)."""
        headers = records[0][2]
        command = [
            "kcat",
            "-b",
            self.bootstrap,
            "-t",
            topic,
            "-P",
            "-K",
            "\t",
            "-z",
            codec,
            "-X",
            "linger.ms=5",
        ]
        for name, value in headers:
            command += ["-H", f"{name}={value.decode()}"]
        lines = "".join(f"{key.decode()}\t{value.decode()}\n" for key, value, _h in records)
        subprocess.run(command, input=lines.encode(), check=True, timeout=TIMEOUT_S, capture_output=True)

    def consume(self, topic, start, count):
        if start == "earliest":
            offset = "beginning"
        elif isinstance(start, tuple):
            offset = f"s@{start[1]}"
        else:
            offset = str(start)
        done = subprocess.run(
            ["kcat", "-b", self.bootstrap, "-t", topic, "-C", "-o", offset, "-c", str(count), "-e", "-J"],
            check=True,
            timeout=TIMEOUT_S,
            capture_output=True,
        )
        return [_kcat_record(line) for line in done.stdout.decode().splitlines() if line.strip()]

    def consume_latest(self, topic, publish):
        consumer = subprocess.Popen(
            ["kcat", "-b", self.bootstrap, "-t", topic, "-C", "-o", "end", "-c", "1", "-J"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            while consumer.poll() is None:
                publish()
                try:
                    consumer.wait(0.2)
                except subprocess.TimeoutExpired:
                    pass
            return _kcat_record(consumer.stdout.read().decode().strip())
        finally:
            consumer.kill()
            consumer.wait()


def _kcat_record(line):
    import json

    row = json.loads(line)
    headers = row.get("headers") or []
    pairs = [(headers[i], headers[i + 1].encode()) for i in range(0, len(headers), 2)]
    key = row["key"].encode() if row["key"] is not None else None
    value = row["payload"].encode() if row["payload"] is not None else None
    return (row["offset"], key, value, pairs, row["ts"])


class ConfluentKafka:
    name = "confluent-kafka"

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def produce(self, topic, records, codec="none", idempotent=False):
        import confluent_kafka

        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "compression.type": codec,
                "linger.ms": 5,
                "enable.idempotence": idempotent,
            }
        )
        delivered = []

        def report(error, message):
            delivered.append((error, message.offset() if error is None else None))

        for key, value, headers in records:
            producer.produce(topic, value=value, key=key, headers=headers, on_delivery=report)
        assert producer.flush(TIMEOUT_S) == 0
        assert [error for error, _ in delivered] == [None] * len(records)
        return [offset for _, offset in delivered]

    def _consumer(self):
        import confluent_kafka

        return confluent_kafka.Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": "tests", "enable.auto.commit": False}
        )

    def consume(self, topic, start, count):
        import confluent_kafka

        consumer = self._consumer()
        try:
            partition = confluent_kafka.TopicPartition(topic, 0)
            if start == "earliest":
                partition.offset = confluent_kafka.OFFSET_BEGINNING
            elif isinstance(start, tuple):
                partition.offset = start[1]
                (partition,) = consumer.offsets_for_times([partition], TIMEOUT_S)
            else:
                partition.offset = start
            consumer.assign([partition])
            return self._poll(consumer, count)
        finally:
            consumer.close()

    def _poll(self, consumer, count, between=None):
        got = []
        for _ in range(int(TIMEOUT_S * 10)):
            if len(got) >= count:
                break
            if between is not None:
                between()
            message = consumer.poll(0.1)
            if message is None:
                continue
            assert message.error() is None, message.error()
            got.append(
                (
                    message.offset(),
                    message.key(),
                    message.value(),
                    message.headers() or [],
                    message.timestamp()[1],
                )
            )
        return got

    def consume_latest(self, topic, publish):
        import confluent_kafka

        consumer = self._consumer()
        try:
            consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_END)])
            return self._poll(consumer, 1, between=publish)[0]
        finally:
            consumer.close()


class KafkaPython:
    name = "kafka-python"

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def produce(self, topic, records, codec="none"):
        import kafka

        producer = kafka.KafkaProducer(
            bootstrap_servers=self.bootstrap, compression_type=None if codec == "none" else codec, linger_ms=5
        )
        try:
            sent = [
                producer.send(topic, value=value, key=key, headers=headers) for key, value, headers in records
            ]
            return [future.get(TIMEOUT_S).offset for future in sent]
        finally:
            producer.close()

    def consume(self, topic, start, count):
        import kafka

        consumer = kafka.KafkaConsumer(
            bootstrap_servers=self.bootstrap, consumer_timeout_ms=int(TIMEOUT_S * 1000)
        )
        try:
            partition = kafka.TopicPartition(topic, 0)
            consumer.assign([partition])
            if start == "earliest":
                consumer.seek_to_beginning(partition)
            elif isinstance(start, tuple):
                found = consumer.offsets_for_times({partition: start[1]})[partition]
                consumer.seek(partition, found.offset)
            else:
                consumer.seek(partition, start)
            got = []
            for message in consumer:
                got.append(
                    (message.offset, message.key, message.value, list(message.headers), message.timestamp)
                )
                if len(got) >= count:
                    break
            return got
        finally:
            consumer.close()

    def consume_latest(self, topic, publish):
        import kafka

        consumer = kafka.KafkaConsumer(bootstrap_servers=self.bootstrap)
        try:
            partition = kafka.TopicPartition(topic, 0)
            consumer.assign([partition])
            consumer.seek_to_end(partition)
            consumer.position(partition)  # (the end resolved now, before anything is published)
            for _ in range(int(TIMEOUT_S * 10)):
                publish()
                for messages in consumer.poll(timeout_ms=100).values():
                    m = messages[0]
                    return (m.offset, m.key, m.value, list(m.headers), m.timestamp)
            raise AssertionError("nothing consumed")
        finally:
            consumer.close()


class AioKafka:
    name = "aiokafka"

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def produce(self, topic, records, codec="none"):
        return asyncio.run(self._produce(topic, records, codec))

    async def _produce(self, topic, records, codec):
        import aiokafka

        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=self.bootstrap, compression_type=None if codec == "none" else codec, linger_ms=5
        )
        await producer.start()
        try:
            sent = [
                await producer.send(topic, value, key=key, headers=headers) for key, value, headers in records
            ]
            return [(await future).offset for future in sent]
        finally:
            await producer.stop()

    def consume(self, topic, start, count):
        return asyncio.run(self._consume(topic, start, count))

    async def _consume(self, topic, start, count, publish=None):
        import aiokafka

        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=self.bootstrap)
        await consumer.start()
        try:
            partition = aiokafka.TopicPartition(topic, 0)
            consumer.assign([partition])
            if start == "earliest":
                await consumer.seek_to_beginning(partition)
            elif start == "latest":
                await consumer.seek_to_end(partition)
                await consumer.position(partition)
            elif isinstance(start, tuple):
                found = (await consumer.offsets_for_times({partition: start[1]}))[partition]
                consumer.seek(partition, found.offset)
            else:
                consumer.seek(partition, start)
            got = []
            for _ in range(int(TIMEOUT_S * 10)):
                if publish is not None:
                    publish()
                batches = await consumer.getmany(partition, timeout_ms=100, max_records=count - len(got))
                for m in batches.get(partition, []):
                    got.append((m.offset, m.key, m.value, list(m.headers), m.timestamp))
                if len(got) >= count:
                    return got
            return got
        finally:
            await consumer.stop()

    def consume_latest(self, topic, publish):
        return asyncio.run(self._consume(topic, "latest", 1, publish))[0]


CLIENTS = (Kcat, ConfluentKafka, KafkaPython, AioKafka)
