"""A region of two hubs on ZooKeeper sharing one RADOS pool (no shared filesystem): the
owner of topics SIGKILLed under load loses no acknowledged message (the survivor
fences its open ledgers in the pool and recovers them), and an owner SIGSTOPped past
its session then woken acknowledges nothing more (its writes fail on the raised epoch).
"""

import itertools
import os

from hedwig.ledger import rados_layout as layout
from hedwig.testing.zkregion import RegionHubs
from tests.cluster.takeover_scenarios import pause_an_owner_past_its_session, sigkill_an_owner_under_load

TOPICS = [f"rados-kill-{i}" for i in range(4)]
_namespaces = itertools.count(1)


def rados_region(zookeeper, ceph, tmp_path, count: int, **options) -> RegionHubs:
    """A region whose hubs keep their ledgers in the session cluster's pool, in a
    namespace of its own (and its storage root holds nothing of theirs)."""
    namespace = f"region-{os.getpid()}-{next(_namespaces)}"
    hubs = RegionHubs(zookeeper, tmp_path / "region", conf=ceph.hub_conf_text(namespace), **options)
    hubs.namespace = namespace
    return hubs.start(count)


def test_sigkill_of_an_owner_under_load_loses_no_acknowledged_message(zookeeper, ceph, tmp_path):
    hubs = rados_region(zookeeper, ceph, tmp_path, 2, session_timeout_ms=2000)
    try:
        moved = sigkill_an_owner_under_load(hubs, TOPICS)
    finally:
        hubs.stop()
    for described in moved.values():
        first = described["ledgers"][0]  # (the killed owner's, recovered in the pool)
        assert f"RADOS pool {ceph.pool}/{hubs.namespace}" in first["location"]
        head = ceph.omap(layout.head_name(first["ledger_id"]), (layout.STATE, layout.CLOSED), hubs.namespace)
        assert head[layout.STATE] == b"closed"
        assert layout.decode_closed(head[layout.CLOSED])[0] >= 0
    assert not (tmp_path / "region" / "storage" / "ledgers").exists()


def test_an_owner_paused_past_its_session_acknowledges_nothing_more_when_it_wakes(zookeeper, ceph, tmp_path):
    hubs = rados_region(zookeeper, ceph, tmp_path, 2, session_timeout_ms=1000)
    try:
        before = pause_an_owner_past_its_session(hubs)
    finally:
        hubs.stop()
    # the pool holds the owner's ledger closed by the other hub's recovery, at the one
    # entry the owner acknowledged ("before")
    fenced = before["ledgers"][-1]["ledger_id"]
    head = ceph.omap(layout.head_name(fenced), (layout.STATE, layout.CLOSED), hubs.namespace)
    assert head[layout.STATE] == b"closed"
    last_entry, _bytes, _time, by = layout.decode_closed(head[layout.CLOSED])
    assert last_entry == 0 and by != before["owner"]


def test_a_regions_hub_deletes_the_orphan_ledgers_of_the_shared_namespace_and_only_those(
    zookeeper, ceph, tmp_path
):
    """A ledger no topic names, made by a hub no longer in the region and holding no
    entry (its hub died between creating it and recording it), is deleted after two looks;
    one holding entries, or made by a hub of the region, is kept and reported."""
    from hedwig.client import Client
    from hedwig.ledger.rados_store import RadosLedgerStore
    from hedwig.testing.reactors import PumpedReactor

    namespace = f"orphans-{os.getpid()}"
    conf = ceph.hub_conf_text(namespace, op_timeout_s=1)  # (two looks 3 x (2 + 1) s apart)
    hubs = RegionHubs(zookeeper, tmp_path / "region", conf=conf, session_timeout_ms=2000)
    reactor = PumpedReactor()

    def made_by(writer: str, entries: int) -> int:
        store = RadosLedgerStore(
            reactor=reactor, conf_file=ceph.conf_file, pool=ceph.pool, namespace=namespace, writer=writer
        )
        reactor.run_until(store.connect())
        ledger_id = reactor.run_until(store.create())
        for _ in range(entries):
            reactor.run_until(store.append(ledger_id, b"not an entry", 1))
        reactor.run_until(store.close())
        return ledger_id

    gone_hub = "127.0.0.1:1"  # (no hub of the region: a dead one's leftovers)
    orphan, holding = made_by(gone_hub, 0), made_by(gone_hub, 1)
    try:
        (hub,) = hubs.start(1).hubs
        live = made_by(hub.address, 0)  # (as if the hub were creating it now)
        with Client(hub.address) as client:
            client.publish_many("named", [b"x"] * 3)
            named = {r["ledger_id"] for r in client.describe("named")["ledgers"]}
        assert hub.wait_for_log("deleted 1 orphan ledger(s) of the region", timeout=60)
        assert f"made by a hub no longer in the region): [{orphan}]" in hub.output()
        assert hub.wait_for_log(f"kept 2 ledger(s) no topic names: {holding} (1 entries", timeout=10)
        assert f"{live} (empty, made by {hub.address}, which is in the region)" in hub.output()
        with Client(hub.address) as client:
            assert [m.payload for m in client.read("named")] == [b"x"] * 3
    finally:
        hubs.stop()
    heads = {i for i in map(layout.parse_head_name, ceph.objects(namespace)) if i is not None}
    assert orphan not in heads and {holding, live} | named <= heads
