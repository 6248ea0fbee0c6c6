"""Which broker is which in a region (hedwig.kafka.brokers): node ids derived from hub
names, and a group's partition of __consumer_offsets as Kafka computes it."""

from hedwig.kafka.brokers import GROUP_PARTITIONS, group_partition, node_id_of


def test_a_groups_partition_is_kafkas_abs_of_javas_string_hash_code():
    # Math.abs(id.hashCode()) % 8 as jshell computes it: past int32 (the hash wraps), and
    # outside Latin-1 (UTF-16 code units, a surrogate pair) too.
    assert GROUP_PARTITIONS == 8
    groups = ("a", "test-group", "billing", "region-group", "a-rather-long-consumer-group-name", "gröup-😀")
    assert [group_partition(g) for g in groups] == [1, 4, 5, 6, 0, 2]


def test_node_ids_are_stable_non_negative_int32s_of_hub_names():
    names = [f"10.0.0.{i}:4080" for i in range(1, 50)]
    ids = [node_id_of(name) for name in names]
    assert ids == [node_id_of(name) for name in names]  # (every hub computes every other's alike)
    assert all(0 <= node < 2**31 for node in ids) and len(set(ids)) == len(ids)
