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
