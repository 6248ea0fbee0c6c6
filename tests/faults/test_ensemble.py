"""The ensemble the fault suite runs hubs on: three servers on nodes of their own; one
lost (killed, or cut off) is survived, two lost leave the last without a quorum, and a
server back restores it with everything written before."""

import signal

from kazoo.client import KazooClient

from hedwig.testing.polling import wait_until


def _write_and_read(address: str, path: str, value: bytes) -> bytes:
    client = KazooClient(hosts=address, timeout=5)
    client.start(timeout=30)
    try:
        client.ensure_path(path)
        client.set(path, value)
        return client.get(path)[0]
    finally:
        client.stop()
        client.close()


def test_one_server_lost_is_survived_two_are_not(network, ensemble):
    client = network.add_node("client")
    assert client.call(_write_and_read, ensemble.address, "/faults/a", b"three") == b"three"
    leader = ensemble.leader()
    leader.stop(signal.SIGKILL)
    network.note("kill", [leader.node])
    survivors = [server for server in ensemble.servers if server is not leader]
    assert client.call(_write_and_read, ensemble.address, "/faults/a", b"two") == b"two"
    assert {server.mode() for server in survivors} == {"leader", "follower"}  # a new election
    survivors[0].stop(signal.SIGKILL)
    wait_until(lambda: survivors[1].mode() == "", "the last server to stop serving without a quorum")
    survivors[0].start()
    ensemble.wait_serving(survivors)
    assert client.call(_write_and_read, ensemble.address, "/faults/a", b"two again") == b"two again"


def test_a_server_cut_off_from_the_others_stops_serving_until_healed(network, ensemble):
    alone = ensemble.servers[0]
    others = ensemble.servers[1:]
    network.partition([alone.node], [server.node for server in others])
    wait_until(lambda: alone.mode() == "", "the cut-off server to stop serving")
    assert sorted(server.mode() for server in others) == ["follower", "leader"]
    network.heal()
    ensemble.wait_serving([alone])
    assert alone.mode() == "follower"
