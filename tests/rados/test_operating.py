"""Operating a hub on RADOS as a new operator does (issue 37): a scrape, the status page,
/api/status and `hedwig top` answer from the moment the hub is up, before any topic is
opened; the start line and `hedwig stats` name the pool; no hub starts over a migration
cut short, whatever its store, and the next `hedwig migrate` still finishes it."""

import json
import os
import subprocess
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess, hub_environment
from tests.cli.test_help import hedwig
from tests.rados.test_migrate import KILL_AT, migrate


def fetch(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read()


def samples(text: str) -> dict:
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if not sample.labels
    }


def test_a_restarted_hub_answers_every_view_before_any_topic_is_opened(ceph, rados_hub):
    hub = rados_hub(http=True).start()
    with Client(hub.address) as client:
        for topic in ("alpha", "beta", "gamma"):
            client.publish(topic, b"x" * 100)
    hub.stop()
    hub.start()  # the pool's ledgers listed at start, none loaded: their sizes unknown
    status, metrics = fetch(hub.http_url + "metrics")
    assert status == 200
    scraped = samples(metrics.decode())
    assert scraped["hedwig_ledgers"] >= 3 and scraped["hedwig_ledgers_unsized"] >= 3
    status, body = fetch(hub.http_url + "api/status")
    assert status == 200
    ledgers = json.loads(body)["totals"]["ledgers"]
    assert ledgers["count"] >= 3 and ledgers["unsized"] >= 3
    assert fetch(hub.http_url)[0] == 200
    top = hedwig("--hub", hub.address, "top", "--count", "1")
    assert top.returncode == 0, top.stderr
    assert f"hedwig {hub.address}" in top.stdout
    with Client(hub.address) as client:
        assert [m.payload for m in client.read("alpha")] == [b"x" * 100]  # (opened: its ledgers known)
    after = samples(fetch(hub.http_url + "metrics")[1].decode())
    assert after["hedwig_ledgers_unsized"] < scraped["hedwig_ledgers_unsized"]
    assert after["hedwig_ledger_bytes"] > scraped["hedwig_ledger_bytes"]


def test_the_start_line_and_stats_name_the_pool(ceph, rados_hub):
    hub = rados_hub().start()
    where = f"RADOS pool {ceph.pool}/{hub.namespace}"
    assert hub.wait_for_log(f"(region standalone, ledgers in {where}) serving")
    stats = hedwig("--hub", hub.address, "stats")
    assert stats.returncode == 0, stats.stderr
    assert f"ledgers in {where}" in stats.stdout.splitlines()[1]


def test_no_hub_starts_over_a_migration_cut_short_whatever_its_store(ceph, tmp_path):
    data = tmp_path / "data"
    mmap_conf = tmp_path / "mmap.conf"
    mmap_conf.write_text("[log]\nmax_ledger_entries = 2\n")
    rados_conf = tmp_path / "rados.conf"
    namespace = f"cut-{os.getpid()}"
    ceph.hub_conf(rados_conf, namespace)
    with HubProcess(data, 0, "--conf", str(mmap_conf)) as hub, Client(hub.address) as client:
        for i in range(8):
            client.publish("alpha", b"a%d" % i)
    cut = migrate("--conf", str(rados_conf), "--data-dir", str(data), env={KILL_AT: "2"})
    assert cut.returncode == -9, cut.stderr
    assert (data / "migrating.json").is_file()
    copied = ceph.objects(namespace)
    for conf in (rados_conf, mmap_conf):
        started = subprocess.run(
            [sys.executable, "-m", "hedwig", "hub", "--conf", str(conf), "--port", "0", "--http-port", "0",
             "--data-dir", str(data)],
            capture_output=True, text=True, timeout=60, env=hub_environment(),
        )  # fmt: skip
        assert started.returncode == 1, started.stderr
        last = started.stderr.strip().splitlines()[-1]
        assert last.startswith(
            f"hedwig hub: could not start: a migration of {data}'s ledgers into pool {ceph.pool}/{namespace}"
            " was begun and not finished"
        ), last
        assert "run hedwig migrate again" in last
    assert ceph.objects(namespace) == copied  # (the hubs refused wrote nothing)
    done = migrate("--conf", str(rados_conf), "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    with HubProcess(data, 0, "--conf", str(rados_conf)) as hub, Client(hub.address) as client:
        assert [m.payload for m in client.read("alpha")] == [b"a%d" % i for i in range(8)]


def test_reading_a_topic_after_a_restart_creates_no_ledger_in_the_pool(ceph, rados_hub):
    """Issue 37: a plain `hedwig read` after a restart created a ledger in the pool and
    recorded it in the topic's ranges (the roll on every acquire). Reading, subscribing
    and describing create none; the first publish does."""
    hub = rados_hub().start()
    with Client(hub.address) as client:
        client.publish_many("alpha", [b"a1", b"a2"])
    hub.stop()
    stored = set(ceph.objects(hub.namespace))
    for _restart in range(2):
        hub.start()
        read = hedwig("--hub", hub.address, "read", "alpha")
        assert read.returncode == 0 and read.stdout.splitlines() == ["a1", "a2"], read.stderr
        shown = hedwig("--hub", hub.address, "subscribe", "alpha", "s", "--from", "earliest", "--count", "2")
        assert shown.returncode == 0 and shown.stdout.splitlines() == ["a1", "a2"], shown.stderr
        described = hedwig("--hub", hub.address, "describe", "alpha")
        assert described.returncode == 0, described.stderr
        ledgers = [line.split()[1] for line in described.stdout.splitlines() if line.startswith("  ledger ")]
        assert len(ledgers) == 1, described.stdout
        hub.stop()
        assert set(ceph.objects(hub.namespace)) == stored
    hub.start()
    published = hedwig("--hub", hub.address, "publish", "alpha", "a3")
    assert published.returncode == 0, published.stderr
    assert "seq-id 3" in published.stdout
    assert set(ceph.objects(hub.namespace)) > stored  # (the publish's ledger)
