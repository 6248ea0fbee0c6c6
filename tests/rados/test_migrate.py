"""`hedwig migrate`: an embedded hub's page-file ledgers moved into the Ceph pool under the
same ids, and the hub started again over the pool with its whole history: every
message as it was (seq-ids, payloads, keys, typed properties, publish times, a compacted
topic's gaps), its subscriptions where they were, new ledgers with new ids. A run cut
short (SIGKILL with a ledger written, not closed) is finished by running again; the
hub on the page files is refused afterwards; a running hub's directory is refused."""

import os
import subprocess
import sys

import pytest

from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess, hub_environment
from tests.hub.test_compaction import publish_rounds

LOG = "[log]\nmax_ledger_entries = 4\ncompaction_interval_s = 0\n"
KILL_AT = "HEDWIG_TEST_MIGRATE_KILL_AT"


def migrate(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "hedwig", "migrate", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**hub_environment(), **(env or {})},
    )


def fill(hub) -> dict:
    """Topics of every kind, several ledgers each, a subscription half-way; what the hub
    serves of them: {topic: messages}, and the subscription's next seq-id."""
    with Client(hub.address) as client:
        for i in range(30):
            client.publish_many(
                "events",
                [f"e{i}-{j}".encode() for j in range(3)],
                [{"n": i, "price": i / 4, "ok": bool(i % 2), "raw": b"\x00\xff"}] * 3,
                keys=[f"host-{j}" for j in range(3)],
            )
        client.create_topic("table", compaction=True)
        publish_rounds(client, "table", rounds=8, keys=5)
        assert client.compact("table")["span"] is not None  # (sparse entries, gaps in its seq-ids)
        subscription = client.subscribe("events", "reader", start="earliest")
        for _ in range(20):
            subscription.ack(subscription.receive(timeout=30))
        subscription.close()
        return {topic: client.read(topic) for topic in ("events", "table")}


def test_an_embedded_hubs_ledgers_move_into_the_pool_and_it_goes_on_there(ceph, tmp_path):
    data = tmp_path / "data"
    mmap_conf = tmp_path / "mmap.conf"
    mmap_conf.write_text(LOG)
    rados_conf = tmp_path / "rados.conf"
    ceph.hub_conf(rados_conf, f"migrate-{os.getpid()}-whole")
    with open(rados_conf, "a") as f:
        f.write(LOG)
    hub = HubProcess(data, 0, "--conf", str(mmap_conf)).start()
    served = fill(hub)
    with Client(hub.address) as client:
        client.publish("events", b"the last one")  # (into the open ledger the kill leaves open)
        served["events"] = client.read("events")
        ledgers_before = {r["ledger_id"] for r in client.describe("events")["ledgers"]}
    refused = migrate("--conf", str(rados_conf), "--data-dir", str(data))
    assert refused.returncode == 1 and "stop it first" in refused.stderr
    hub.kill()  # (a crash: the last ledger is left open, as after any kill -9)

    # Cut short once the second ledger is written, then run again: the first is found
    # copied, the second (left open) copied again, the rest copied.
    cut = migrate("--conf", str(rados_conf), "--data-dir", str(data), env={KILL_AT: "2"})
    assert cut.returncode == -9, cut.stderr
    assert (data / "migrating.json").is_file() and (data / "ledgers").is_dir()
    done = migrate("--conf", str(rados_conf), "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert "found copied already" in lines[0] and "copied again (a partial copy was there)" in lines[1]
    assert all(line.endswith(" copied") for line in lines[2:-1]), done.stderr
    assert not (data / "ledgers").exists() and (data / "ledgers.migrated").is_dir()
    assert not (data / "migrating.json").exists()
    again = migrate("--conf", str(rados_conf), "--data-dir", str(data))
    assert again.returncode == 1 and "migrated already" in again.stderr

    # The hub on the page files is refused in one line; on the pool it serves it all.
    on_pages = HubProcess(data, 0, "--conf", str(mmap_conf))
    with pytest.raises(RuntimeError, match="hedwig migrate"):
        on_pages.start()
    on_pool = HubProcess(data, 0, "--conf", str(rados_conf)).start()
    try:
        with Client(on_pool.address) as client:
            assert {topic: client.read(topic) for topic in served} == served
            ledgers = client.describe("events")["ledgers"]
            assert all("RADOS pool" in r["location"] for r in ledgers)
            subscription = client.subscribe("events", "reader")
            assert subscription.receive(timeout=30).seq == served["events"][20].seq
            subscription.close()
            last = served["events"][-1].seq
            assert client.publish("events", b"after the move") == last + 1
            assert client.read("events", last + 1)[0].payload == b"after the move"
            new_ids = {r["ledger_id"] for r in client.describe("events")["ledgers"]} - ledgers_before
            assert new_ids and min(new_ids) > max(ledgers_before)
    finally:
        on_pool.stop()


def test_a_pool_namespace_that_holds_ledgers_is_refused_and_nothing_changes(ceph, rados_hub, tmp_path):
    """Ids there may be another hub's: the data directory stays as it was, and a run
    into an empty namespace then goes ahead."""
    other = rados_hub().start()
    with Client(other.address) as client:
        client.publish("theirs", b"x")
    other.stop()
    data = tmp_path / "data"
    with HubProcess(data, 0) as hub, Client(hub.address) as client:
        client.publish("ours", b"y")
    busy = tmp_path / "busy.conf"
    ceph.hub_conf(busy, other.namespace)
    refused = migrate("--conf", str(busy), "--data-dir", str(data))
    assert refused.returncode == 1 and "already holds ledgers" in refused.stderr
    assert (data / "ledgers").is_dir() and not (data / "migrating.json").exists()
    empty = tmp_path / "empty.conf"
    ceph.hub_conf(empty, f"migrate-{os.getpid()}-empty")
    done = migrate("--conf", str(empty), "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    with HubProcess(data, 0, "--conf", str(empty)) as hub, Client(hub.address) as client:
        assert [m.payload for m in client.read("ours")] == [b"y"]


def test_a_regions_shared_storage_moves_into_the_pool_and_its_hubs_go_on_there(ceph, region, tmp_path):
    """Two hubs on ZooKeeper and a shared storage root: refused while a hub of the region
    is registered; once they are stopped, every topic's ledgers go to the pool, and the
    region's hubs started on it serve every topic (on page files they are refused)."""
    hubs = region(2, conf=LOG)
    with Client(hubs.addresses) as client:
        served = {}
        for t in range(4):
            topic = f"region-topic-{t}"
            for i in range(9):
                client.publish_many(topic, [f"{topic}-{i}-{j}".encode() for j in range(2)])
            served[topic] = client.read(topic)
    args = ["--zookeeper", hubs.zookeeper.address, "--conf", str(hubs.conf), "--data-dir", str(hubs.data_dir)]
    rados_conf = tmp_path / "rados.conf"
    ceph.hub_conf(rados_conf, f"migrate-{os.getpid()}-region")
    rados_args = ["--rados-conf", ceph.conf_file, "--rados-pool", ceph.pool]
    refused = migrate(*args, *rados_args)  # (a hub of the region here holds the root's lock)
    assert refused.returncode == 1 and "stop it first" in refused.stderr
    hubs.stop()
    # A hub of the region elsewhere (another machine: another storage root) is registered.
    elsewhere = region(1, root=hubs.root, conf=LOG)
    refused = migrate(*args, *rados_args)
    assert refused.returncode == 1 and "stop them all first" in refused.stderr
    elsewhere.stop()
    # (the namespace comes from a conf of its own: the region's conf and this one's [rados])
    region_conf = tmp_path / "region-rados.conf"
    region_conf.write_text(hubs.conf.read_text() + "\n" + rados_conf.read_text())
    done = migrate(
        "--zookeeper", hubs.zookeeper.address, "--conf", str(region_conf), "--data-dir", str(hubs.data_dir)
    )
    assert done.returncode == 0, done.stderr
    assert "the region's hubs" in done.stderr and (hubs.data_dir / "ledgers.migrated").is_dir()
    on_pages = region(0, root=hubs.root, conf=LOG)
    on_pages.data_dir = hubs.data_dir
    with pytest.raises(RuntimeError, match="hedwig migrate"):
        on_pages.add()
    on_pool = region(0, root=hubs.root, conf=LOG + rados_conf.read_text())
    on_pool.data_dir = hubs.data_dir
    on_pool.start(2)
    with Client(on_pool.addresses) as client:
        assert {topic: client.read(topic) for topic in served} == served
        assert client.publish("region-topic-0", b"after") == served["region-topic-0"][-1].seq + 1
