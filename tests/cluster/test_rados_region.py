"""A region of two hubs on ZooKeeper sharing one RADOS pool (no shared filesystem): the
owner of topics SIGKILLed under load loses no acknowledged message (the survivor
fences its open ledgers in the pool and recovers them), and an owner SIGSTOPped past
its session then woken acknowledges nothing more (its writes fail on the raised epoch).
"""

import itertools
import os
import threading

from hedwig.client import Client
from hedwig.client.errors import HedwigError
from hedwig.ledger import rados_layout as layout
from hedwig.testing.polling import wait_until
from hedwig.testing.zkregion import RegionHubs
from tests.cluster.load import Load

TOPICS = [f"rados-kill-{i}" for i in range(4)]
_namespaces = itertools.count(1)


def rados_region(zookeeper, ceph, tmp_path, count: int, **options) -> RegionHubs:
    namespace = f"region-{os.getpid()}-{next(_namespaces)}"
    hubs = RegionHubs(zookeeper, tmp_path / "region", conf=ceph.hub_conf_text(namespace), **options)
    hubs.namespace = namespace
    return hubs.start(count)


def test_sigkill_of_an_owner_under_load_loses_no_acknowledged_message(zookeeper, ceph, tmp_path):
    hubs = rados_region(zookeeper, ceph, tmp_path, 2, session_timeout_ms=2000)
    try:
        load = Load(hubs.addresses, TOPICS).start()
        load.wait_for_more(50, "publishing to every topic")
        with Client(hubs.addresses) as client:
            owners = {topic: client.describe(topic)["owner"] for topic in TOPICS}
        victim = hubs.hub_at(owners[TOPICS[0]])
        (survivor,) = hubs.others(victim.address)
        moved = [topic for topic, owner in owners.items() if owner == victim.address]
        victim.kill()
        load.wait_for_more(100, "publishing through the surviving hub after the takeover")
        load.stop()
        with Client(survivor.address) as client:
            load.check(client)
            after = {topic: client.describe(topic) for topic in moved}
        for described in after.values():
            assert described["owner"] == survivor.address
            first, *_, last = described["ledgers"]  # the killed owner's ledger, recovered and closed
            assert first["last_seq"] < last["first_seq"]
            assert f"RADOS pool {ceph.pool}/{hubs.namespace}" in first["location"]
        assert any(load.failures[topic] for topic in moved)  # (the kill did hit them under load)
    finally:
        hubs.stop()


def test_an_owner_paused_past_its_session_acknowledges_nothing_more_when_it_wakes(zookeeper, ceph, tmp_path):
    hubs = rados_region(zookeeper, ceph, tmp_path, 2, session_timeout_ms=1000)
    try:
        with Client(hubs.addresses) as client:
            client.publish_many("paused", [b"before"])
            described = client.describe("paused")
            owner = hubs.hub_at(described["owner"])
            fenced_ledger = described["ledgers"][-1]["ledger_id"]
        (other,) = hubs.others(owner.address)
        with Client(owner.address) as at_owner:
            acknowledged_by_owner = at_owner.stats()["ops"]["publish"]["ok"]
        stalled = Client(owner.address, timeout=60)  # a client of the owner alone, caught by the pause
        outcome = []

        def publish_into_the_pause():
            try:
                outcome.append(("acked", stalled.publish_many("paused", [b"sent during the pause"])))
            except HedwigError as e:
                outcome.append(("failed", e))

        owner.pause()
        try:
            sender = threading.Thread(target=publish_into_the_pause)
            sender.start()
            with Client(other.address, max_redirects=0, timeout=5) as at_other:

                def publish_there():
                    try:
                        return at_other.publish_many("paused", [b"after the takeover"])
                    except HedwigError:
                        return None

                taken_over = wait_until(publish_there, "the other hub taking the topic over", 30)
                more = [at_other.publish_many("paused", [b"after %d" % i])[0] for i in range(5)]
        finally:
            owner.resume()
        sender.join(60)
        stalled.close()
        assert taken_over == [2] and more == [3, 4, 5, 6, 7]
        with Client(owner.address) as at_owner:  # the woken hub acknowledged no publish at all
            assert at_owner.stats()["ops"]["publish"]["ok"] == acknowledged_by_owner
        # the pool holds the recovered ledger closed, at the one entry the owner acknowledged
        head = ceph.omap(layout.head_name(fenced_ledger), (layout.STATE, layout.CLOSED), hubs.namespace)
        assert head[layout.STATE] == b"closed"
        assert layout.decode_closed(head[layout.CLOSED])[0] == 0  # (entry 0: "before")
        with Client(other.address) as client:
            payloads = [m.payload for m in client.read("paused")]
        expected = [b"before", b"after the takeover", *(b"after %d" % i for i in range(5))]
        (result,) = outcome
        if result[0] == "acked":  # redirected by the woken hub to the new owner, stored there once
            assert payloads == [*expected, b"sent during the pause"] and result[1] == [8]
        else:
            assert payloads == expected
    finally:
        hubs.stop()
