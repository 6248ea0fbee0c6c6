"""The shipped conf/hub.conf: it loads, it holds every setting, each at its default."""

import configparser
import dataclasses
from pathlib import Path

from hedwig.config.loading import Config, load_config

HUB_CONF = Path(__file__).resolve().parents[2] / "conf" / "hub.conf"


def test_shipped_hub_conf_loads_to_the_defaults():
    """Each at its default, but data_dir (./data) is relative to the file, like every path
    in a conf file (hedwig.config.files)."""
    expected = Config()
    expected.hub.data_dir = str(HUB_CONF.parent / "data")
    assert load_config(HUB_CONF) == expected


def test_paths_in_a_conf_file_are_relative_to_it_and_options_to_the_working_directory(tmp_path):
    conf = tmp_path / "conf" / "hub.conf"
    conf.parent.mkdir()
    conf.write_text(
        "[hub]\ndata_dir = ../var/hub\n[tls]\ncert_file = hub.pem\nkey_file = /etc/k.pem\nca_file =\n"
    )
    config = load_config(conf)
    assert config.hub.data_dir == str(tmp_path / "var" / "hub")
    assert (config.tls.cert_file, config.tls.key_file, config.tls.ca_file) == (
        str(conf.parent / "hub.pem"),
        "/etc/k.pem",
        "",
    )
    assert load_config(conf, {"hub.data_dir": "./mine"}).hub.data_dir == "./mine"


def test_shipped_hub_conf_documents_every_setting():
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#", ";"))
    parser.read(HUB_CONF)
    shipped = {(section, key) for section in parser.sections() for key in parser[section]}
    config = Config()
    settings = {
        (section.name, setting.name)
        for section in dataclasses.fields(config)
        for setting in dataclasses.fields(getattr(config, section.name))
    }
    assert shipped == settings
