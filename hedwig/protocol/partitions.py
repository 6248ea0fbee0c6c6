"""A partitioned topic's partitions, and which one a key goes to.

A topic of N partitions is N hedwig topics: partition 0 is the topic itself, partition K
(1 <= K < N) the topic named `<topic>.p-K`; the count is kept in partition 0's record
(its "partitions" option), so a topic of one partition is a plain hedwig topic and
growing a topic (Kafka's CreatePartitions) adds topics without moving a message.

A keyed message goes to partition `toPositive(murmur2(key)) % N`: Kafka's Java client's
default partitioner (and kafka-python's, and librdkafka's `murmur2_random`), so that
native and Kafka producers put a key in the same partition.
"""

import re

MAX_PARTITIONS = 1024  # partitions of one topic at most (each is a topic of the hub's)
PARTITION_INFIX = ".p-"
_PARTITION_NAME = re.compile(r"^(.+)\.p-([1-9][0-9]{0,3})$")
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def partition_topic(topic: str, partition: int) -> str:
    """The hedwig topic holding partition `partition` of `topic`."""
    return topic if partition == 0 else f"{topic}{PARTITION_INFIX}{partition}"


def partition_topics(topic: str, partitions: int) -> list[str]:
    """The hedwig topics of every partition of `topic`, partition 0 first."""
    return [partition_topic(topic, k) for k in range(max(partitions, 1))]


def parent_of(name: str) -> tuple[str, int]:
    """(topic, partition) a hedwig topic's name stands for: (name, 0) when it names no
    partition of another."""
    match = _PARTITION_NAME.match(name)
    if match is None:
        return name, 0
    return match.group(1), int(match.group(2))


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2, seed 0x9747b28c), as
    a signed 32-bit int."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    whole = length - (length & 3)
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition of a keyed message, as Kafka's default partitioner picks it."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions
