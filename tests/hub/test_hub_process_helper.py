"""hedwig/testing/hubprocess.py, the helper every integration test and benchmark starts hubs with:
a hub that cannot start is reported with its own words, never taken for a started one."""

import pytest

from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess


def test_a_hub_that_exits_at_start_is_reported_with_its_log(own_hub):
    own_hub.start()
    second = HubProcess(own_hub.data_dir)
    with pytest.raises(RuntimeError, match="the hub did not start") as raised:
        second.start()
    assert "another hub is serving" in str(raised.value)
    assert not second.running and second.process.returncode == 1
    with Client(own_hub.address) as client:  # the first one goes on
        assert client.publish("helper", b"x") == 1


def test_a_restart_keeps_the_port_the_hub_picked(own_hub):
    own_hub.start()
    port = own_hub.port
    assert port != 0 and own_hub.address == f"127.0.0.1:{port}"
    assert own_hub.stop() == 0
    assert "stopped" in own_hub.output()
    own_hub.restart()
    assert own_hub.port == port and own_hub.running
