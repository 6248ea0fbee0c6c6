"""ZooKeeper stopped and restarted under load: while the hubs' connections are SUSPENDED
they hold every acknowledgement and claim nothing; once it is back they go on, and no
acknowledged message is lost. A hub that cannot reach ZooKeeper at start says so in one
line and exits."""

import subprocess
import sys

from hedwig.client import Client
from hedwig.client.errors import ServiceDown
from hedwig.testing.hubprocess import hub_environment, refusing_port
from hedwig.testing.polling import wait_until
from tests.cluster.load import Load
from tests.conftest import start_zookeeper

TOPICS = [f"outage-{i}" for i in range(3)]


def test_a_zookeeper_restart_under_load_loses_no_acknowledged_message(region, tmp_path):
    zookeeper = start_zookeeper(tmp_path / "zookeeper")
    hubs = region(0, zk=zookeeper, session_timeout_ms=6000)
    try:
        hubs.start(2)
        load = Load(hubs.addresses, TOPICS, timeout=30).start()
        load.wait_for_more(30, "publishing before the outage")
        zookeeper.stop()
        for hub in hubs.hubs:
            wait_until(lambda hub=hub: "acknowledgements held" in hub.output(), "the hubs holding acks", 30)
        held = {topic: load.count(topic) for topic in TOPICS}
        with Client(hubs.hubs[0].address) as client:  # nothing is claimed meanwhile
            wait_until(lambda: _refused(client, "outage-new"), "SERVICE_DOWN for a new topic", 30)
        assert {topic: load.count(topic) for topic in TOPICS} == held  # nothing acknowledged
        zookeeper.start()
        load.wait_for_more(50, "publishing after ZooKeeper came back")
        load.stop()
        with Client(hubs.addresses) as client:
            load.check(client)
        assert all(load.count(topic) > held[topic] for topic in TOPICS)
        for hub in hubs.hubs:  # their sessions lived on: no topic was released or moved
            # (a hub whose topics the load did not wait on may reconnect a retry later)
            assert hub.wait_for_log("ZooKeeper connection back")
            assert "session lost" not in hub.output()
    finally:
        hubs.stop()  # (before ZooKeeper: their shutdown writes there)
        zookeeper.stop()


def _refused(client, topic) -> bool:
    try:
        client.publish_many(topic, [b"x"])
    except ServiceDown:
        return True
    return False


def test_an_unreachable_zookeeper_at_start_is_one_line_and_exit_status_1(tmp_path):
    with refusing_port() as port:
        done = subprocess.run(
            [
                sys.executable, "-m", "hedwig", "hub", "--port", "0", "--http-port", "0",
                "--data-dir", str(tmp_path / "data"), "--zookeeper", f"127.0.0.1:{port}",
                "--conf", str(_conf(tmp_path, "[zookeeper]\nconnect_timeout_s = 2\n")),
            ],
            capture_output=True, text=True, timeout=60, env=hub_environment(),
        )  # fmt: skip
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        f"hedwig hub: could not start: cannot reach ZooKeeper at 127.0.0.1:{port} "
        "(no server answered within 2 s, [zookeeper] connect_timeout_s; the last attempt:"
        " Connection refused)"
    )
    assert "Traceback" not in done.stderr


def _conf(tmp_path, text):
    conf = tmp_path / "hub.conf"
    conf.write_text(text)
    return conf


def test_a_hub_started_with_no_zookeeper_listening_gives_up_in_seconds_saying_why(tmp_path):
    """Issue 37: `hedwig hub --zookeeper ADDRESS` with nobody listening there waited 15 s
    (the default connect_timeout_s) to say only that no server answered."""
    with refusing_port() as port:
        done = subprocess.run(
            [
                sys.executable, "-m", "hedwig", "hub", "--port", "0", "--http-port", "0",
                "--data-dir", str(tmp_path / "data"), "--zookeeper", f"127.0.0.1:{port}",
            ],
            capture_output=True, text=True, timeout=60, env=hub_environment(),
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"hedwig hub: could not start: cannot reach ZooKeeper at 127.0.0.1:{port} (no server"
        " answered within 5 s, [zookeeper] connect_timeout_s; the last attempt: Connection refused)"
    )
