"""The hub's event loop ([hub] reactor, `hedwig hub --reactor`): Twisted's own, or
Twisted's asyncioreactor on asyncio's loop or uvloop's, each running the same hub, as a
user starts it (`hedwig hub` and `twistd -n hedwig` in their own processes)."""

import subprocess
import sys
from pathlib import Path

import pytest

from hedwig.client import Client
from hedwig.config.loading import ConfigError, load_config
from hedwig.testing.hubprocess import HubProcess, hub_environment

TWISTD = str(Path(sys.executable).parent / "twistd")
LOOPS = {
    "default": "Event loop: EPollReactor",
    "asyncio": "Event loop: AsyncioSelectorReactor on asyncio.unix_events._UnixSelectorEventLoop",
    "uvloop": "Event loop: AsyncioSelectorReactor on uvloop.Loop",
}


def logged(hub, text: str) -> bool:
    return any(text in line for line in hub.log)


@pytest.mark.parametrize("reactor", sorted(LOOPS))
def test_a_hub_serves_publishes_and_deliveries_on_each_reactor(tmp_path, reactor):
    with HubProcess(tmp_path / "data", 0, "--reactor", reactor) as hub:
        assert logged(hub, LOOPS[reactor]), list(hub.log)
        with Client(hub.address) as client:
            subscription = client.subscribe("loop", "s")
            assert client.publish("loop", b"one") == 1
            assert client.publish_many("loop", [b"two", b"three"]) == [2, 3]
            received = []
            while len(received) < 3:
                received += subscription.receive_batch(timeout=30)
            assert [(m.seq, m.payload) for m in received] == [(1, b"one"), (2, b"two"), (3, b"three")]


def test_the_reactor_setting_of_a_conf_file_is_used_and_the_option_overrides_it(tmp_path):
    conf = tmp_path / "hub.conf"
    conf.write_text("[hub]\nreactor = uvloop\n")
    with HubProcess(tmp_path / "a", 0, "--conf", str(conf)) as hub:
        assert logged(hub, LOOPS["uvloop"]), list(hub.log)
    with HubProcess(tmp_path / "b", 0, "--conf", str(conf), "--reactor", "default") as hub:
        assert logged(hub, LOOPS["default"]), list(hub.log)


def test_an_unknown_reactor_is_a_configuration_error():
    with pytest.raises(ConfigError, match=r"\[hub\] reactor = 'tornado': expected default, asyncio, uvloop"):
        load_config(None, {"hub.reactor": "tornado"})
    result = subprocess.run(
        [sys.executable, "-m", "hedwig", "hub", "--reactor", "tornado"],
        capture_output=True,
        text=True,
        timeout=60,
        env=hub_environment(),
    )
    assert result.returncode == 2 and "invalid choice: 'tornado'" in result.stderr


def test_twistd_runs_the_reactor_of_the_conf_file_or_refuses_another_than_its_own(tmp_path):
    conf = tmp_path / "hub.conf"
    conf.write_text("[hub]\nreactor = uvloop\n")
    twistd = [TWISTD, "-n", "hedwig", "--conf", str(conf)]
    with HubProcess(tmp_path / "d", launcher=twistd, cwd=tmp_path, log_on_stdout=True) as hub:
        assert logged(hub, "reactor class: twisted.internet.asyncioreactor.AsyncioSelectorReactor")
        with Client(hub.address) as client:
            assert client.publish("twistd", b"x") == 1
    epoll = [TWISTD, "-n", "--reactor", "epoll", "hedwig", "--conf", str(conf)]
    result = subprocess.run(
        [*epoll, "--data-dir", str(tmp_path / "e")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=hub_environment(),
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip().splitlines() == [
        "twistd hedwig: [hub] reactor = uvloop: this process already runs default (a reactor is installed"
        " before twisted.internet.reactor is first imported); twistd's --reactor chooses it under twistd"
    ]
