"""A hub whose ledgers are in a RADOS pool ([ledger] store = rados), as a user runs it:
publish, subscribe, catch up from the pool, garbage collection deleting the pool's
objects, restarts; and the starts it refuses, each in one line with exit status 1."""

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from hedwig.client import Client
from hedwig.ledger import rados_layout as layout
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.polling import wait_until
from tests.receiving import receive_all

GC_CONF = "[log]\nmax_ledger_entries = 2\ngc_interval_s = 0.2\nmax_ledger_age_s = 0\n"


def heads(ceph, namespace) -> set:
    """The ledger ids whose head objects are in the namespace."""
    return {i for i in map(layout.parse_head_name, ceph.objects(namespace)) if i is not None}


def hub_command(conf, data_dir) -> list:
    return [sys.executable, "-m", "hedwig", "hub", "--conf", str(conf), "--port", "0", "--http-port", "0",
            "--data-dir", str(data_dir)]  # fmt: skip


def test_publish_subscribe_catch_up_gc_and_restart(ceph, rados_hub):
    hub = rados_hub(GC_CONF).start()
    with Client(hub.address) as client:
        client.subscribe("orders", "reader", start="earliest").close()  # (holds every ledger)
        seqs = [client.publish_many("orders", [b"o%d-%d" % (i, j) for j in range(5)]) for i in range(10)]
        assert seqs[0] == [1, 2, 3, 4, 5] and seqs[-1][-1] == 50
        live = client.subscribe("orders", "live", start="latest")
        assert client.publish("orders", b"pushed") == 51
        (pushed,) = receive_all(live, 1)
        assert pushed.payload == b"pushed"
        live.ack(pushed)
        described = client.describe("orders")
    ledgers = [ledger["ledger_id"] for ledger in described["ledgers"]]
    assert len(ledgers) == 6 and set(ledgers) <= heads(ceph, hub.namespace)  # (11 entries, 2 a ledger)
    assert all(
        f"RADOS pool {ceph.pool}/{hub.namespace}" in ledger["location"] for ledger in described["ledgers"]
    )
    hub.stop()
    hub.start()  # the cache is empty: catching up reads the pool
    with Client(hub.address) as client:
        reader = client.subscribe("orders", "reader", start="earliest")
        messages = receive_all(reader, 51)
        assert [m.seq for m in messages] == list(range(1, 52))
        assert messages[0].payload == b"o0-0" and messages[49].payload == b"o9-4"
        for message in messages:
            reader.ack(message)
        live = client.subscribe("orders", "live")  # (attached again: it resumes after 51)
        assert client.publish("orders", b"after the restart") == 52
        receive_all(live, 1)
        receive_all(reader, 1)
        live.close()  # (their last acknowledgements go with the close)
        reader.close()
        # every subscriber consumed 52: the closed ledgers go, with their objects in the pool
        gone = set(ledgers[:-1])
        wait_until(
            lambda: not gone & heads(ceph, hub.namespace), "GC deleting the consumed ledgers' heads", 30
        )
        assert not any(
            name.startswith(tuple(layout.head_name(i) for i in gone)) for name in ceph.objects(hub.namespace)
        )
        assert client.describe("orders")["first_seq"] > 1
        assert [m.payload for m in client.read("orders", 52, 52)] == [b"after the restart"]


def test_metrics_show_the_stores_writes(rados_hub):
    hub = rados_hub(http=True).start()
    with Client(hub.address) as client:
        for _ in range(5):
            client.publish_many("measured", [b"x" * 100] * 10)
    with urllib.request.urlopen(hub.http_url + "metrics", timeout=10) as response:
        samples = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.read().decode())
            for sample in family.samples
        }
    assert samples[("hedwig_ledger_append_entries_total", ())] == 5
    assert samples[("hedwig_ledger_append_bytes_total", ())] > 5 * 1000
    assert 1 <= samples[("hedwig_ledger_append_latency_seconds_count", ())] <= 5
    assert samples[("hedwig_ledger_append_latency_seconds_sum", ())] > 0
    assert samples[("hedwig_ledger_append_failures_total", ())] == 0


def test_a_cluster_that_cannot_be_reached_ends_the_start_in_one_line(ceph, tmp_path):
    unreachable = tmp_path / "ceph.conf"
    with open(ceph.conf_file) as conf:
        unreachable.write_text(conf.read().replace(f"127.0.0.1:{ceph.port}]", "127.0.0.1:9]"))
    conf = tmp_path / "hub.conf"
    conf.write_text(
        f"[ledger]\nstore = rados\n[rados]\nconf_file = {unreachable}\npool = {ceph.pool}\nop_timeout_s = 2\n"
    )
    result = subprocess.run(hub_command(conf, tmp_path / "data"), capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("hedwig hub: could not start: connecting to the Ceph cluster of ")
    assert str(unreachable) in last


def test_a_hub_without_librados_python_module_says_so_in_one_line(ceph, tmp_path):
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "rados.py").write_text("raise ImportError('No module named rados (shadowed by the test)')\n")
    conf = tmp_path / "hub.conf"
    ceph.hub_conf(conf, "no-module")
    env = {"PYTHONPATH": str(shadow), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        hub_command(conf, tmp_path / "data"), capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert "could not start: [ledger] store = rados needs librados's Python module" in last
    assert "python3-rados" in last


def test_empty_metadata_over_a_namespace_holding_ledgers_is_refused(ceph, rados_hub, tmp_path):
    hub = rados_hub().start()
    with Client(hub.address) as client:
        client.publish("kept", b"payload")
    hub.stop()
    fresh = rados_hub(namespace=hub.namespace, data_dir=tmp_path / "another-data-dir")
    conf = fresh.extra_args[1]
    result = subprocess.run(
        hub_command(conf, tmp_path / "another-data-dir"), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert f"the RADOS pool {ceph.pool} (namespace '{hub.namespace}') holds ledgers" in last
    assert "Restore metadata.sqlite3 from a backup" in last


def test_the_twistd_plugin_runs_a_hub_on_the_pool(ceph, tmp_path):
    """`twistd -n hedwig --ledger-store rados --rados-conf ... --rados-pool ...`, as
    `hedwig hub` takes them (the namespace from its conf)."""
    namespace = f"twistd-{os.getpid()}"
    conf = tmp_path / "hub.conf"
    conf.write_text(f"[rados]\nnamespace = {namespace}\n")
    twistd = [str(Path(sys.executable).parent / "twistd"), "-n", "hedwig"]
    options = ["--conf", str(conf), "--ledger-store", "rados", "--rados-conf", ceph.conf_file]
    hub = HubProcess(
        tmp_path / "d",
        0,
        *options,
        "--rados-pool",
        ceph.pool,
        launcher=twistd,
        cwd=tmp_path,
        log_on_stdout=True,
    )
    with hub, Client(hub.address) as client:
        assert client.publish("plugged", b"x") == 1
        (ledger,) = client.describe("plugged")["ledgers"]
        assert f"RADOS pool {ceph.pool}/{namespace}" in ledger["location"]


def test_at_start_a_hub_deletes_the_pools_garbage_and_reports_ledgers_no_topic_names(ceph, rados_hub):
    """As over page files: a ledger the metadata records as garbage (a hub that died
    between dropping it and deleting it) is deleted; one no topic names and the metadata
    does not know (a hub that died between creating a ledger and recording it) is kept
    and reported, with what it holds."""
    from hedwig.ledger.rados_store import RadosLedgerStore
    from hedwig.meta.sqlite_store import SqliteMetadataStore
    from hedwig.testing.reactors import PumpedReactor

    hub = rados_hub()
    with hub, Client(hub.address) as client:
        client.publish("kept", b"x")
    reactor = PumpedReactor()
    store = RadosLedgerStore(
        reactor=reactor, conf_file=ceph.conf_file, pool=ceph.pool, namespace=hub.namespace
    )
    reactor.run_until(store.connect())
    unknown, doomed = reactor.run_until(store.create()), reactor.run_until(store.create())
    for ledger in (unknown, doomed):
        reactor.run_until(store.append(ledger, b"not an entry", 1))
    reactor.run_until(store.close())
    metadata = SqliteMetadataStore(str(Path(hub.data_dir) / "metadata.sqlite3"))
    record = metadata.get_topic("kept").result
    metadata.put_topic("kept", record.value, record.version, garbage=[doomed], options=record.options)
    metadata.close()
    assert {unknown, doomed} <= heads(ceph, hub.namespace)
    with hub, Client(hub.address) as client:
        assert [m.payload for m in client.read("kept")] == [b"x"]
        assert hub.wait_for_log(f"deleted 1 ledger(s) the metadata records as garbage: [{doomed}]")
        assert hub.wait_for_log(
            f"kept 1 ledger(s) that no topic names and the metadata does not record as garbage: {unknown}"
        )
    found = heads(ceph, hub.namespace)
    assert unknown in found and doomed not in found
