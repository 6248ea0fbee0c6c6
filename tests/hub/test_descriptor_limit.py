"""A hub short of file descriptors: idle topics hold none, so a hub limited to 64 takes
100 topics, and when connections take every descriptor left, its shutdown still syncs and
closes every ledger (a reserved descriptor) instead of failing them. A real hub process
under RLIMIT_NOFILE."""

import signal
import socket
import sys

from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.polling import wait_until

LIMITED = [
    sys.executable,
    "-c",
    "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)); "
    "sys.argv = ['hedwig', 'hub', *sys.argv[1:]]; runpy.run_module('hedwig', run_name='__main__')",
]
TOPICS = 100


def test_a_hub_with_64_descriptors_serves_100_topics_and_shuts_down_cleanly(tmp_path):
    data_dir = tmp_path / "data"
    hub = HubProcess(data_dir, launcher=LIMITED)
    hub.start()
    try:
        with Client(hub.address) as client:
            for i in range(TOPICS):
                assert client.publish(f"topic-{i}", b"m%d" % i) == 1
        # Take every descriptor the hub has left (and more) with idle connections; the
        # hub accepts while it can (Twisted closes what it cannot keep).
        held = []
        for _ in range(80):
            try:
                held.append(socket.create_connection(("127.0.0.1", hub.port), timeout=5))
            except OSError:
                break
        wait_until(lambda: "EMFILE encountered" in hub.output(), "the hub running out of descriptors")
        hub.process.send_signal(signal.SIGTERM)
        assert hub.process.wait(60) == 0
        for sock in held:
            sock.close()
    finally:
        hub.stop()
    log = hub.output()
    assert "critical" not in log and "Traceback" not in log, log
    assert "closing ledger" not in log, log

    with HubProcess(data_dir) as process, Client(process.address) as client:
        for i in range(TOPICS):
            assert [m.payload for m in client.read(f"topic-{i}", 1)] == [b"m%d" % i]
        restarted = process.output()
    assert "cut back" not in restarted, restarted
