"""The shipped conf/hub.conf: it loads, it holds every setting, each at its default."""

import configparser
import dataclasses
from pathlib import Path

from hedwig.config import Config, load_config

HUB_CONF = Path(__file__).resolve().parents[2] / "conf" / "hub.conf"


def test_shipped_hub_conf_loads_to_the_defaults():
    assert load_config(HUB_CONF) == Config()


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
