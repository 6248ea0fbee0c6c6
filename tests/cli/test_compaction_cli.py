"""`hedwig create --compact`, `hedwig compact` and `hedwig describe` of a compacted topic,
run as their own processes against a real hub process."""

import json

from hedwig.client import Client
from tests.cli.test_cli import hedwig, lines
from tests.hub.test_compaction import hub_process, publish_rounds, table


def test_create_compact_and_describe_a_compacted_topic(tmp_path):
    process = hub_process(tmp_path)
    with process:
        assert lines(hedwig("create", "prices", "--compact", hub=process)) == [
            "created compacted topic prices"
        ]
        assert lines(hedwig("create", "prices", hub=process)) == ["compacted topic prices exists already"]
        assert "compacted: the latest message of each key is kept" in lines(
            hedwig("describe", "prices", hub=process)
        )
        refused = hedwig("publish", "prices", "no key", hub=process)
        assert refused.returncode != 0 and b"KEY_REQUIRED" in refused.stderr
        assert lines(hedwig("compact", "prices", hub=process)) == ["topic prices: nothing to compact"]
        with Client(process.address) as client:
            latest = publish_rounds(client, "prices", rounds=8, keys=3)
        report = json.loads(hedwig("compact", "prices", "--json", hub=process).stdout)
        assert report["span"][0] == 1 and report["messages"] == report["span"][1]
        with Client(process.address) as client:
            assert table(client.read("prices")) == latest
        (line,) = lines(hedwig("compact", "prices", hub=process))
        assert line.startswith("topic prices: ")
        plain = hedwig("compact", "nope", hub=process)
        assert plain.returncode != 0 and b"NO_SUCH_TOPIC" in plain.stderr
