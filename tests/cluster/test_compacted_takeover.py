"""A compacted topic taken over by another hub of a region (its owner SIGKILLed): the
flag travels in the topic's metadata record, so the new owner refuses keyless messages,
describes it as compacted and compacts it, the latest value of every key kept; a hub
starting on the region's shared storage keeps the ledger a compaction swapped in, and
leaves one a live owner's compaction is writing to that owner."""

import threading

import pytest
from kazoo.client import KazooClient

from hedwig.client import Client
from hedwig.client.errors import ConnectionLost, CouldNotConnect, KeyRequired
from hedwig.testing.polling import wait_until
from tests.hub.test_compaction import KILL_AT, publish_keyed, publish_rounds, table


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


def test_a_hub_starting_after_a_swap_keeps_the_compacted_ledger_its_record_calls_garbage(region, monkeypatch):
    """The compaction's owner dies (SIGKILL) right after the swap: the ranges name the new
    ledger, whose garbage record is not yet forgotten. A hub starting on the shared
    storage then sweeps the garbage: the old ledgers go, the new one stays."""
    conf = "[log]\nmax_ledger_entries = 3\ncompaction_interval_s = 0\n"
    monkeypatch.setenv(KILL_AT, "swapped")
    hubs = region(1, session_timeout_ms=2000, conf=conf)
    (compacting,) = hubs.hubs
    monkeypatch.delenv(KILL_AT)
    with Client(compacting.address) as client:
        client.create_topic("swept-table", compaction=True)
        latest = publish_rounds(client, "swept-table", rounds=9, keys=4)
        last_seq = client.describe("swept-table")["last_seq"]
        with pytest.raises((ConnectionLost, CouldNotConnect)):  # (the request is retried)
            client.compact("swept-table")
    compacting.process.wait(30)
    assert compacting.process.returncode == -9
    starting = hubs.add()  # (its start-up sweep reads the garbage records the swap left)
    with Client(starting.address) as client:
        wait_until(lambda: client.describe("swept-table")["owner"] == starting.address, "the takeover")
        messages = client.read("swept-table")
        assert table(messages) == latest
        assert len(messages) < last_seq  # the compacted ledger, read
        assert client.describe("swept-table")["last_seq"] == last_seq
    # The old ledgers went, by the sweep or by the new owner; the swapped-in ledger's
    # stale record went with the takeover.
    assert garbage_records(hubs) == []


def garbage_records(hubs) -> list:
    """The ledger ids the region's metadata records as garbage, read from ZooKeeper."""
    zk = KazooClient(hosts=hubs.zookeeper.address)
    zk.start(timeout=30)
    try:
        return sorted(zk.get_children(f"{hubs.root}/garbage"))
    finally:
        zk.stop()
        zk.close()


def test_a_hub_starting_while_the_owner_writes_a_compaction_leaves_its_ledger_alone(region, monkeypatch):
    """The owner pauses (SIGSTOP) with its compaction's new ledger written and recorded
    as garbage, not yet swapped in; a hub starting then on the shared storage sweeps the
    garbage but leaves that record to the owner. The owner goes on, swaps the ledger in
    and hands the topic over at its stop: the new owner reads the whole table from it."""
    conf = "[log]\nmax_ledger_entries = 3\ncompaction_interval_s = 0\n"
    monkeypatch.setenv(KILL_AT, "written:stop")
    hubs = region(1, session_timeout_ms=30000, conf=conf)  # (the pause outlives no session)
    (compacting,) = hubs.hubs
    monkeypatch.delenv(KILL_AT)
    with Client(compacting.address) as client:
        client.create_topic("paused-table", compaction=True)
        latest = publish_rounds(client, "paused-table", rounds=9, keys=4)
        last_seq = client.describe("paused-table")["last_seq"]
    compacted = {}

    def compact():
        with Client(compacting.address, timeout=120) as compacting_client:
            compacted.update(compacting_client.compact("paused-table"))

    thread = threading.Thread(target=compact, daemon=True)
    thread.start()
    wait_until(lambda: process_state(compacting.process.pid) == "T", "the owner paused mid-compaction")
    assert garbage_records(hubs), "the new ledger is recorded as garbage while it is written"
    starting = hubs.add()  # (it serves once its start-up sweep is done)
    compacting.resume()
    thread.join(120)
    assert compacted["span"] is not None
    compacting.stop()  # (a graceful stop: the topic is released, the other hub takes it)
    with Client(starting.address) as client:
        wait_until(lambda: client.describe("paused-table")["owner"] == starting.address, "the takeover")
        messages = client.read("paused-table")
        assert table(messages) == latest
        assert len(messages) < last_seq  # the compacted ledger, read
    assert garbage_records(hubs) == []


def process_state(pid: int) -> str:
    """A process's state letter from /proc ("T": stopped by a signal)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]
