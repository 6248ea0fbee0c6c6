"""conf/regions, the README's worked region tree, run as the README says: from another
working directory (each hub's data in /tmp/hedwig-regions/<region>, neither in a
checkout's data/, which `make run` uses, nor beside an installed copy of the confs), a
message published in europe read by a subscriber in world, and each hub stopped the
documented way (SIGTERM: a graceful shutdown, status 0).

The copy of conf/regions the test runs sits in a scratch "checkout" of its own, with free
ports in place of 4080-4085 (other hubs may hold those), no HTTP listeners, and a scratch
directory in place of /tmp/hedwig-regions (other runs may use that)."""

import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess, free_port, hub_environment

ROOT = Path(__file__).resolve().parents[2]
REGIONS = ("world", "europe")
RELAY_TIMEOUT_S = 60.0


EXAMPLE_DATA = "/tmp/hedwig-regions/"


def copy_of_the_example(checkout: Path, data: Path) -> Path:
    """conf/regions under `checkout`, every example port mapped to a free one, the data
    directories under `data` instead of EXAMPLE_DATA."""
    regions = checkout / "conf" / "regions"
    shutil.copytree(ROOT / "conf" / "regions", regions)
    ports = {}

    def free(match):
        return ports.setdefault(match.group(0), str(free_port()))

    for conf in regions.glob("*.conf"):
        text = re.sub(r"\b408\d\b", free, conf.read_text())
        text = re.sub(r"(\[http\][^\[]*?\nport = )\d+", r"\g<1>0", text)  # no HTTP listener
        assert f"data_dir = {EXAMPLE_DATA}{conf.stem}\n" in text, conf
        conf.write_text(text.replace(EXAMPLE_DATA, f"{data}/"))
    return regions


class ExampleHub(HubProcess):
    """`hedwig hub --conf conf/regions/NAME.conf`, nothing else on its command line."""

    def __init__(self, conf: Path, cwd: Path):
        super().__init__(conf.parent / "unused", cwd=cwd, env=hub_environment())
        self.conf = conf

    def command(self):
        return [sys.executable, "-m", "hedwig", "hub", "--conf", str(self.conf)]


def hedwig(hub, *args) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "hedwig", "--hub", hub.address, *args],
        capture_output=True, text=True, timeout=60, env=hub_environment(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_worked_example_runs_from_any_directory_and_stops_on_sigterm(tmp_path):
    checkout = tmp_path / "checkout"
    data = tmp_path / "example-data"
    regions = copy_of_the_example(checkout, data)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    hubs = {name: ExampleHub(regions / f"{name}.conf", elsewhere) for name in REGIONS}
    try:
        for hub in hubs.values():
            hub.start()
        world, europe = hubs["world"], hubs["europe"]
        with Client(world.address) as client, client.subscribe("news", "desk") as desk:
            assert "published 1 message" in hedwig(europe, "publish", "news", "bonjour")
            relayed = desk.receive(timeout=RELAY_TIMEOUT_S)  # europe -> world
            assert relayed is not None and bytes(relayed.payload) == b"bonjour"
            desk.ack(relayed)
        for name, hub in hubs.items():
            assert hub.stop(signal.SIGTERM) == 0, hub.output()
            assert re.search(r"hedwig hub \S+ stopped", hub.output()), hub.output()
            assert (data / name / "metadata.sqlite3").is_file(), name
    finally:
        for hub in hubs.values():
            hub.stop()
    assert list(elsewhere.iterdir()) == []
    assert not (checkout / "data").exists()  # (`make run`'s data directory is left alone)
