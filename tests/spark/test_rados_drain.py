"""The drain job from a hub whose ledgers are in a RADOS pool: every message exactly
once in the output, read from the pool (the hub restarted: nothing in its cache), the
drained ledgers' objects deleted from the pool once acknowledged, then a second run
exactly once again."""

import pytest

from hedwig.client.blocking import Client
from hedwig.ledger import rados_layout as layout
from hedwig.spark.drain import drain
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.polling import wait_until
from tests.spark.conftest import GC_CONF
from tests.spark.test_drain import assert_exactly_once, output_rows, publish, settings, subscriber

pytestmark = pytest.mark.spark


def test_a_drain_from_a_rados_backed_hub_is_exactly_once(spark, ceph, tmp_path):
    namespace = f"drain-{tmp_path.name}"
    conf = tmp_path / "hub.conf"
    conf.write_text(ceph.hub_conf_text(namespace) + GC_CONF)
    hub = HubProcess(tmp_path / "data", 0, "--conf", str(conf)).start()
    try:
        with Client(hub.address) as client:
            for topic in ("r-orders", "r-clicks"):  # the subscription holds every ledger
                client.subscribe(topic, "lake", start="earliest").close()
            publish(client, "r-orders", 1, 430)
            publish(client, "r-clicks", 1, 120, per_entry=1)
            ledgers = [ledger["ledger_id"] for ledger in client.describe("r-orders")["ledgers"]]
        hub.stop()
        hub.start()  # nothing cached: the drain reads the pool
        run = settings(hub, tmp_path, ["r-orders", "r-clicks"], max_messages_per_trigger=200)
        first = drain(spark, run, say=lambda line: None)
        assert first.drained == 550 and first.committed == {"r-orders": 430, "r-clicks": 120}
        assert_exactly_once(output_rows(spark, run.out), {"r-orders": 430, "r-clicks": 120})
        with Client(hub.address) as client:
            assert subscriber(client, "r-orders", "lake")[1]["consumed_seq"] == 430

            def collected():
                heads = {layout.parse_head_name(name) for name in ceph.objects(namespace)}
                return not set(ledgers[:-2]) & heads

            wait_until(collected, "the drained ledgers' objects deleted from the pool", 30)
            publish(client, "r-orders", 431, 70)
            publish(client, "r-clicks", 121, 5, per_entry=1)
        second = drain(spark, run, say=lambda line: None)
        assert second.drained == 75 and second.committed == {"r-orders": 500, "r-clicks": 125}
        assert_exactly_once(output_rows(spark, run.out), {"r-orders": 500, "r-clicks": 125})
    finally:
        hub.stop()
