"""[kafka] settings: checked when the configuration is read, one sentence naming the
setting; `hedwig hub --kafka-port` sets [kafka] port."""

import argparse

import pytest

from hedwig.config.loading import load_config
from hedwig.config.settings import ConfigError
from hedwig.hub.main import add_hub_arguments, config_from_args
from hedwig.kafka.settings import listen_host, max_request_bytes


def test_defaults_are_off_and_bounded_by_the_hubs_frames():
    config = load_config()
    assert config.kafka.port == 0
    assert max_request_bytes(config) == config.hub.max_frame_bytes
    assert listen_host(config) == config.hub.host


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"kafka.port": 70000}, "kafka.port = 70000"),
        ({"kafka.port": 4080, "hub.port": 4080}, "[kafka] port = 4080 is the hub's port too"),
        ({"kafka.max_request_bytes": 100}, "[kafka] max_request_bytes = 100"),
        ({"kafka.produced_cache_bytes": -1}, "[kafka] produced_cache_bytes = -1"),
    ],
)
def test_bad_settings_are_refused_naming_them(overrides, named):
    with pytest.raises(ConfigError, match=named.replace("[", r"\[").replace("]", r"\]")):
        load_config(None, overrides)


def test_the_kafka_port_option_sets_the_setting():
    parser = argparse.ArgumentParser()
    add_hub_arguments(parser)
    args = parser.parse_args(["--kafka-port", "9092", "--kafka-port", "19092"])
    assert config_from_args(args).kafka.port == 19092
