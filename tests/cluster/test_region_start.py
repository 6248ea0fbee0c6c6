"""Starting a hub of a region on ZooKeeper, and the mistakes it refuses: two regions
sharing one root, an embedded hub on a region's storage root (or the reverse), a
[zookeeper] section that cannot work. Each is one line and a non-zero exit."""

import subprocess
import sys

import pytest

from hedwig.config.loading import ConfigError, load_config
from hedwig.testing.hubprocess import hub_environment


def run_hub(*args, timeout=60):
    """(exit status, last line of standard error) of `hedwig hub ARGS` that stops by itself."""
    command = [sys.executable, "-m", "hedwig", "hub", "--port", "0", "--http-port", "0", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=hub_environment())
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr.strip().splitlines()[-1]


def test_two_regions_sharing_one_root_are_refused(region, tmp_path):
    alpha = region(1, region="alpha")
    conf = tmp_path / "beta.conf"
    conf.write_text(f"[zookeeper]\nroot = {alpha.root}\n[region]\nname = beta\n")
    status, last = run_hub(
        "--conf", str(conf), "--zookeeper", alpha.zookeeper.address, "--data-dir", str(tmp_path / "beta")
    )
    assert status == 1
    assert last == (
        f"hedwig hub: could not start: ZooKeeper root {alpha.root} belongs to region 'alpha', not"
        " 'beta': two regions cannot share a root; give each its own [zookeeper] root"
    )
    assert alpha.hubs[0].running  # the region's own hub goes on


def test_a_region_and_an_embedded_hub_never_share_a_storage_root(region, tmp_path):
    hubs = region(1)
    status, last = run_hub("--data-dir", str(hubs.data_dir))  # embedded: no [zookeeper] servers
    assert status == 1
    assert last.startswith(f"hedwig hub: could not start: another hub is serving {hubs.data_dir}")
    hubs.stop()
    from hedwig.testing.hubprocess import HubProcess

    with HubProcess(hubs.data_dir):  # an embedded hub there now keeps the region's hubs out
        status, last = run_hub(
            "--conf", str(hubs.conf), "--zookeeper", hubs.zookeeper.address, "--data-dir", str(hubs.data_dir)
        )
    assert status == 1
    assert last.startswith("hedwig hub: could not start: an embedded hub (no [zookeeper] servers) is serving")


@pytest.mark.parametrize(
    "section, message",
    [
        ("servers = a:b", "[zookeeper] servers = a:b: hub address 'a:b': port 'b' is not a number"),
        ("servers = zk:2181\nroot = hedwig", "[zookeeper] root = hedwig: expected an absolute path below /"),
        ("servers = zk:2181\nroot = /", "[zookeeper] root = /: expected an absolute path below /"),
        ("servers = zk:2181\nroot = /a//b", "[zookeeper] root = /a//b: expected an absolute path below /"),
        ("session_timeout_ms = 10", "[zookeeper] session_timeout_ms = 10: expected 100-3600000"),
        ("rebalance_max_shed = 0", "[zookeeper] rebalance_max_shed = 0: expected 1 or more"),
        ("topic_release_s = -1", "[zookeeper] topic_release_s = -1: expected 0 or more seconds"),
    ],
)
def test_zookeeper_settings_that_cannot_work_are_refused(tmp_path, section, message):
    conf = tmp_path / "hub.conf"
    conf.write_text(f"[zookeeper]\n{section}\n")
    with pytest.raises(ConfigError) as refused:
        load_config(conf)
    assert message in str(refused.value)


def test_a_hub_listening_on_every_address_must_say_where_it_is_reached(tmp_path):
    conf = tmp_path / "hub.conf"
    conf.write_text("[hub]\nhost = 0.0.0.0\n[zookeeper]\nservers = zk:2181\n")
    with pytest.raises(ConfigError, match=r"set \[zookeeper\] advertised_host"):
        load_config(conf)
    conf.write_text("[hub]\nhost = 0.0.0.0\n[zookeeper]\nservers = zk:2181\nadvertised_host = hub1.example\n")
    assert load_config(conf).zookeeper.advertised_host == "hub1.example"


def test_zookeeper_on_the_command_line_overrides_the_file(tmp_path):
    conf = tmp_path / "hub.conf"
    conf.write_text("[zookeeper]\nservers = a:1\n")
    assert load_config(conf, {"zookeeper.servers": "b:2,c:3"}).zookeeper.servers == "b:2,c:3"
    assert load_config().zookeeper.servers == ""  # the embedded default: no ZooKeeper at all


def test_an_unnamed_hub_on_a_root_recorded_under_another_name_is_told_how_to_join(region, tmp_path):
    """A region made when unnamed regions were called "standalone": a hub with no [region]
    name takes its root's last part, is refused, and is told the name to set."""
    old = region(1, region="standalone")
    conf = tmp_path / "unnamed.conf"
    conf.write_text(f"[zookeeper]\nroot = {old.root}\n")
    status, last = run_hub(
        "--conf", str(conf), "--zookeeper", old.zookeeper.address, "--data-dir", str(old.data_dir)
    )
    assert status == 1
    assert last.endswith(
        "give each its own [zookeeper] root (a hub of region 'standalone' on this root: set"
        " [region] name = standalone)"
    )
