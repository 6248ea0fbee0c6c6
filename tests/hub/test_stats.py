"""HubStats: a PUBLISH's counters taken in one call (publish_stored) are the ones the
general recording gives (OpStats.record and entry_published), totals included."""

from hedwig.hub.stats import HubStats
from hedwig.topiclog.entry import LogEntry


def test_publish_stored_counts_what_record_and_entry_published_count():
    one_call, general = HubStats(["publish"], max_topic_labels=2), HubStats(["publish"], max_topic_labels=2)
    published = [
        ("a", LogEntry(1, 1, b"x" * 120, 0), 0.000_03),
        ("b", LogEntry(1, 4, b"y" * 400, 0), 0.002),
        ("a", LogEntry(2, 3, b"z" * 200, 0), 0.000_7),
        ("c", LogEntry(1, 1, b"w" * 90, 0), 3.0),  # past the labelled topics: under OTHER
        ("c", LogEntry(2, 2, b"v" * 10, 0), 0.0),
    ]
    for topic, entry, latency in published:
        one_call.publish_stored(topic, entry, latency)
        general.record("publish", True, latency)
        general.entry_published(topic, entry)
    assert one_call.snapshot() == general.snapshot()
    assert (
        list(one_call.topics.rows())
        == list(general.topics.rows())
        == [
            ("a", 3, 2, 320),
            ("b", 4, 1, 400),
            ("_other", 2, 2, 100),
        ]
    )
    assert (one_call.messages_published, one_call.bytes_published) == (9, 820)
    assert one_call.snapshot()["published"] == {"messages": 9, "bytes": 820}
    assert one_call.ops["publish"].snapshot()["latency_us"]["max"] == 3_000_000
