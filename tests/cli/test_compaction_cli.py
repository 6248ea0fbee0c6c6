"""`hedwig create --compact`, `hedwig compact` and `hedwig describe` of a compacted topic,
run as their own processes against a real hub process."""

import json

from hedwig.client import Client
from hedwig.testing.polling import wait_until
from tests.cli.test_cli import hedwig, lines
from tests.hub.test_compaction import hub_process, publish_keyed, publish_rounds, table


def test_create_compact_and_describe_a_compacted_topic(tmp_path):
    process = hub_process(tmp_path)
    with process:
        assert lines(hedwig("create", "prices", "--compact", hub=process)) == [
            "created compacted topic prices"
        ]
        assert lines(hedwig("create", "prices", "--compact", hub=process)) == [
            "compacted topic prices exists already"
        ]
        assert "compacted: the latest message of each key is kept" in lines(
            hedwig("describe", "prices", hub=process)
        )
        refused = hedwig("publish", "prices", "no key", hub=process)
        assert refused.returncode != 0 and b"a compacted topic takes keyed messages only" in refused.stderr
        assert lines(hedwig("compact", "prices", hub=process)) == [
            "topic prices: nothing to compact: nothing is published"
        ]
        with Client(process.address) as client:
            latest = publish_rounds(client, "prices", rounds=8, keys=3)
        report = json.loads(hedwig("compact", "prices", "--json", hub=process).stdout)
        assert report["span"] == [1, 24] and report["messages"] == 24 and report["kept"] == 3
        with Client(process.address) as client:
            assert table(client.read("prices")) == latest
        (line,) = lines(hedwig("compact", "prices", hub=process))
        assert line == (
            "topic prices: nothing to compact: seq-ids 1..24 are compacted already: nothing was"
            " published since, and no tombstone kept has expired"
        )
        plain = hedwig("compact", "nope", hub=process)
        assert plain.returncode != 0 and b"NO_SUCH_TOPIC" in plain.stderr


def test_create_of_an_existing_topic_of_the_other_kind_fails_and_says_what_it_is(tmp_path):
    """Issue 42: `hedwig create T --compact` on an existing plain topic printed "exists
    already" and exited 0: the user asked for a table and did not get one."""
    process = hub_process(tmp_path)
    with process:
        lines(hedwig("publish", "plain", "x", hub=process))
        asked = hedwig("create", "plain", "--compact", hub=process)
        assert asked.returncode != 0 and asked.stdout == b""
        assert b"TOPIC_EXISTS: topic plain exists already as a topic without compaction" in asked.stderr
        lines(hedwig("create", "table", "--compact", hub=process))
        asked = hedwig("create", "table", hub=process)
        assert asked.returncode != 0
        assert b"TOPIC_EXISTS: topic table exists already as a compacted topic" in asked.stderr
        assert lines(hedwig("create", "plain", hub=process)) == ["topic plain exists already"]
        assert "compacted: the latest message of each key is kept" not in lines(
            hedwig("describe", "plain", hub=process)
        )


def test_compact_right_after_publishing_covers_everything_published_before_it(tmp_path):
    """Issue 37 point 4: `hedwig compact` right after publishing said "nothing to compact"
    (everything was in the open ledger, which rolls after an hour or a GiB). Now it rolls
    the open ledger first, compacts up to the topic's end and says what it did; the
    background pass keeps Kafka's rule (the open ledger and what is younger than the lag
    wait)."""
    process = hub_process(tmp_path, interval_s=0.2, lag_s=0)
    with process:
        lines(hedwig("create", "prices", "--compact", hub=process))
        with Client(process.address) as client:
            pairs = [(b"eur", b"1.10"), (b"usd", b"1.00"), (b"eur", b"1.12"), (b"gbp", b"0.86")]
            publish_keyed(client, "prices", pairs)  # one entry, in the open ledger
            background = client.stats()["compaction"]["runs"]
            # The background pass leaves the open ledger alone ...
            wait_until_runs(client, background + 2)
            assert len(client.read("prices")) == 4
            assert len(client.describe("prices")["ledgers"]) == 1
        # ... COMPACT takes it: everything published before it.
        (line,) = lines(hedwig("compact", "prices", hub=process))
        assert line.startswith(
            "topic prices: compacted seq-ids 1..4: 3 of 4 messages kept, in 1 entry of ledger "
        )
        with Client(process.address) as client:
            assert table(client.read("prices")) == {
                b"usd": (2, b"1.00"),
                b"eur": (3, b"1.12"),
                b"gbp": (4, b"0.86"),
            }
            # Publishing goes on from the next seq-id, into an open ledger of its own.
            assert publish_keyed(client, "prices", [(b"eur", b"1.13")]) == (5, 5)
        report = json.loads(hedwig("compact", "prices", "--json", hub=process).stdout)
        assert (report["span"], report["messages"], report["kept"]) == ([1, 5], 4, 3)
        with Client(process.address) as client:
            assert table(client.read("prices")) == {
                b"usd": (2, b"1.00"),
                b"eur": (5, b"1.13"),
                b"gbp": (4, b"0.86"),
            }


def wait_until_runs(client, runs: int) -> None:
    wait_until(lambda: client.stats()["compaction"]["runs"] >= runs, f"{runs} background compaction runs")
