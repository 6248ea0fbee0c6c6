"""A compacted topic taken over by another hub of a region (its owner SIGKILLed): the
flag travels in the topic's metadata record, so the new owner refuses keyless messages,
describes it as compacted and compacts it, the latest value of every key kept."""

import pytest

from hedwig.client import Client
from hedwig.client.errors import KeyRequired
from hedwig.testing.polling import wait_until
from tests.hub.test_compaction import publish_keyed, publish_rounds, table


def test_a_compacted_topic_stays_compacted_on_the_hub_that_takes_it_over(region):
    hubs = region(
        2, session_timeout_ms=2000, conf="[log]\nmax_ledger_entries = 3\ncompaction_interval_s = 0\n"
    )
    with Client(hubs.addresses) as client:
        assert client.create_topic("moving-table", compaction=True)["compaction"] is True
        latest = publish_rounds(client, "moving-table", rounds=6, keys=3)
        owner = client.describe("moving-table")["owner"]
    victim = hubs.hub_at(owner)
    (survivor,) = hubs.others(owner)
    victim.kill()
    with Client(survivor.address) as client:
        wait_until(lambda: client.describe("moving-table")["owner"] == survivor.address, "the takeover")
        assert client.describe("moving-table")["compaction"] is True
        with pytest.raises(KeyRequired):
            client.publish("moving-table", b"no key")
        latest.update(publish_rounds(client, "moving-table", rounds=3, keys=2))
        publish_keyed(client, "moving-table", [(b"k9", b"last")])
        latest[b"k9"] = (client.describe("moving-table")["last_seq"], b"last")
        assert client.compact("moving-table")["span"] is not None
        assert table(client.read("moving-table")) == latest
