"""[region] checks: a hierarchy that cannot work is refused when the configuration is read,
with a sentence naming the setting; the shipped example tree loads and is a tree."""

import configparser
from pathlib import Path

import pytest

from hedwig.config.loading import ConfigError, load_config
from hedwig.region.settings import relay_peer, relay_subscriber_id

REGIONS = Path(__file__).resolve().parents[2] / "conf" / "regions"


def load(**region):
    return load_config(None, {f"region.{key}": value for key, value in region.items()})


def test_the_defaults_are_a_root_region():
    config = load()
    assert config.region.name == "standalone" and not config.region.parent
    assert load(name="").region.name == "standalone"


def test_a_region_on_zookeeper_is_named_after_its_root_unless_named():
    """Issue 37: a region of several hubs was called "standalone", the single hub's name."""

    def on_zookeeper(root, **region):
        overrides = {"zookeeper.servers": "127.0.0.1:2181", "zookeeper.root": root}
        return load_config(None, overrides | {f"region.{key}": value for key, value in region.items()})

    assert on_zookeeper("/hedwig").region.name == "hedwig"
    assert on_zookeeper("/regions/paris").region.name == "paris"
    assert on_zookeeper("/regions/paris", name="europe").region.name == "europe"
    with pytest.raises(ConfigError, match=r"root = /a b ends in no region name.*set \[region\] name"):
        on_zookeeper("/a b")


@pytest.mark.parametrize(
    ("region", "said"),
    [
        ({"name": "eu west"}, "region names are 1-245 characters"),
        ({"name": "x" * 246}, "region names are 1-245 characters"),
        ({"parent": "eu west", "parent_address": "h:1"}, "[region] parent = 'eu west'"),
        ({"name": "eu", "parent": "eu", "parent_address": "h:1"}, "region eu names itself as its parent"),
        ({"parent": "world"}, "needs parent_address"),
        ({"parent_address": "h:1"}, "is set but parent is not"),
        ({"parent": "world", "parent_address": "h:99999"}, "port 99999 is outside 1-65535"),
        ({"parent": "world", "parent_address": "127.0.0.1:4080"}, "names this hub's own address"),
        ({"retry_backoff_ms": 0}, "retry_backoff_ms = 0"),
        ({"retry_backoff_ms": 900, "max_retry_backoff_ms": 100}, "is below retry_backoff_ms"),
        ({"relay_inflight_bytes": 1000}, "relay_inflight_bytes = 1000"),
        ({"link_timeout_s": 0.0}, "link_timeout_s = 0: expected > 0"),
    ],
)
def test_an_impossible_region_is_refused_naming_the_setting(region, said):
    with pytest.raises(ConfigError) as refused:
        load(**region)
    assert said in str(refused.value)


def test_several_parent_addresses_are_accepted():
    config = load(parent="world", parent_address="10.0.0.1:4080, 10.0.0.2:4080")
    assert config.region.parent == "world"


def test_relay_subscriber_ids_name_their_region():
    assert relay_subscriber_id("europe") == "__region__europe"
    assert relay_peer("__region__europe") == "europe"
    assert relay_peer("billing") is None
    assert relay_peer("__other") is None


def test_the_worked_example_is_a_three_level_tree_of_hubs_that_load():
    configs = {path.stem: load_config(path) for path in sorted(REGIONS.glob("*.conf"))}
    assert set(configs) == {"world", "europe", "america", "paris", "berlin", "newyork"}
    ports = {name: c.hub.port for name, c in configs.items()}
    assert len(set(ports.values())) == len(ports)
    parents = {}
    for name, config in configs.items():
        assert config.region.name == name
        if config.region.parent:
            parent = config.region.parent
            assert config.region.parent_address == f"127.0.0.1:{ports[parent]}"
            parents[name] = parent
    assert parents == {
        "europe": "world",
        "america": "world",
        "paris": "europe",
        "berlin": "europe",
        "newyork": "america",
    }
    # Every file is a hub.conf: only known sections and keys (load_config checked), and
    # each names its own data directory.
    dirs = set()
    for path in REGIONS.glob("*.conf"):
        parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#", ";"))
        parser.read(path)
        dirs.add(parser["hub"]["data_dir"])
    assert len(dirs) == len(configs)
