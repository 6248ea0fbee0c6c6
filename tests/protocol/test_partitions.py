"""Partition names and Kafka's murmur2 partitioner (hedwig.protocol.partitions)."""

import pytest

from hedwig.protocol.partitions import (
    murmur2,
    parent_of,
    partition_for_key,
    partition_topic,
    partition_topics,
)


# Kafka's own vectors (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java).
@pytest.mark.parametrize(
    "data, expected",
    [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_is_kafkas(data, expected):
    assert murmur2(data) == expected


def test_a_key_goes_where_the_java_client_puts_it():
    # toPositive(murmur2) % n: a negative hash masked, not negated.
    assert partition_for_key(b"foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7
    assert all(0 <= partition_for_key(bytes([i]), 5) < 5 for i in range(256))


def test_partition_names():
    assert partition_topic("orders", 0) == "orders"
    assert partition_topic("orders", 3) == "orders.p-3"
    assert partition_topics("orders", 3) == ["orders", "orders.p-1", "orders.p-2"]
    assert partition_topics("orders", 1) == ["orders"]
    assert parent_of("orders.p-3") == ("orders", 3)
    assert parent_of("orders") == ("orders", 0)
    assert parent_of("orders.p-0") == ("orders.p-0", 0)  # (partition 0 is the topic itself)
    assert parent_of("orders.p-x") == ("orders.p-x", 0)
