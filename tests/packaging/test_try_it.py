"""What the docs give a user to try a region and replicated ledgers on one machine, run as
the docs show it: `python -m hedwig.testing.zookeeper start DIR` with the shipped
conf/region.conf, and `python -m hedwig.testing.ceph start DIR` printing the settings a
hub on RADOS needs; each `stop DIR` ends exactly what `start` began."""

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess, hub_environment

ROOT = Path(__file__).resolve().parents[2]


def module(name: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", name, *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=hub_environment(),
    )


def refused(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError:
        return True
    return False


def test_the_helpers_say_how_they_are_used():
    for name in ("hedwig.testing.ceph", "hedwig.testing.zookeeper"):
        helped = module(name, "--help")
        assert helped.returncode == 0, helped.stderr
        assert f"usage: python -m {name}" in helped.stdout and "{start,stop}" in helped.stdout


def test_a_region_of_two_hubs_on_the_zookeeper_the_docs_start(tmp_path):
    zookeeper = tmp_path / "zookeeper"
    started = module("hedwig.testing.zookeeper", "start", str(zookeeper))
    assert started.returncode == 0, started.stderr
    address = re.match(r"ZooKeeper on (\S+) ", started.stdout).group(1)
    try:
        conf = str(ROOT / "conf" / "region.conf")
        options = ("--conf", conf, "--zookeeper", address)
        with (
            HubProcess(tmp_path / "shared", 0, *options) as first,
            HubProcess(tmp_path / "shared", 0, *options),
        ):
            with Client(first.address) as client:
                assert client.publish("tried", b"x") == 1
            hubs = subprocess.run(
                [sys.executable, "-m", "hedwig", "--hub", first.address, "hubs", "--json"],
                capture_output=True, text=True, timeout=60, env=hub_environment(),
            )  # fmt: skip
            rows = json.loads(hubs.stdout)
            assert len(rows) == 2 and {row["region"] for row in rows} == {"local"}
    finally:
        stopped = module("hedwig.testing.zookeeper", "stop", str(zookeeper))
    assert stopped.returncode == 0, stopped.stderr
    assert refused(address)
    again = module("hedwig.testing.zookeeper", "stop", str(zookeeper))
    assert again.returncode == 1 and "no server started in" in again.stderr


def test_a_hub_on_the_ceph_cluster_the_docs_start(tmp_path):
    cluster = tmp_path / "ceph"
    started = module("hedwig.testing.ceph", "start", str(cluster))
    try:
        assert started.returncode == 0, started.stderr
        command = next(line for line in started.stdout.splitlines() if line.startswith("hedwig hub "))
        options = command.split()[2:]
        assert options[:2] == ["--ledger-store", "rados"]
        with HubProcess(tmp_path / "data", 0, *options) as hub, Client(hub.address) as client:
            assert client.publish("replicated", b"x") == 1
            (ledger,) = client.describe("replicated")["ledgers"]
            assert "RADOS pool hedwig" in ledger["location"]
        pids = [int(line.split()[0]) for line in (cluster / "pids").read_text().splitlines()]
    finally:
        stopped = module("hedwig.testing.ceph", "stop", str(cluster))
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.startswith("stopped mon.a, osd.0, osd.1, osd.2")
    assert not cluster.exists()
    assert not any(
        Path(f"/proc/{pid}/cmdline").exists() and Path(f"/proc/{pid}/cmdline").read_bytes() for pid in pids
    )
