"""The fault harness itself: nodes reach each other over the bridge, a partition drops
what crosses it (both ways, or one), heal restores it, and close leaves nothing behind.

An absence is shown by a later positive signal: a datagram sent during a partition is
never the first one the receiver gets after the heal."""

import socket
import subprocess
import sys

from hedwig.testing.faults.network import Network
from hedwig.testing.polling import wait_until


def _receiver(node):
    """A UDP socket bound on `node`."""
    sock = node.call(socket.socket, socket.AF_INET, socket.SOCK_DGRAM)
    node.call(sock.bind, (node.address, 0))
    sock.settimeout(30)
    return sock


def _send(node, to_sock, payload: bytes) -> None:
    def send():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.sendto(payload, to_sock.getsockname())

    node.call(send)


def test_a_partition_drops_both_ways_and_heal_restores(network):
    a, b = network.add_node("a"), network.add_node("b")
    at_a, at_b = _receiver(a), _receiver(b)
    _send(a, at_b, b"before")
    assert at_b.recv(100) == b"before"
    network.partition([a], [b])
    _send(a, at_b, b"during")
    _send(b, at_a, b"during")
    network.heal()
    _send(a, at_b, b"after")
    _send(b, at_a, b"after")
    assert at_b.recv(100) == b"after"
    assert at_a.recv(100) == b"after"
    assert network.faults == [{"kind": "partition", "nodes": ["a"], "from": ["b"], "one_way": False}]


def test_a_one_way_partition_drops_one_direction_only(network):
    a, b = network.add_node("a"), network.add_node("b")
    at_a, at_b = _receiver(a), _receiver(b)
    network.partition([a], [b], one_way=True)
    _send(a, at_b, b"dropped")
    _send(b, at_a, b"through")
    assert at_a.recv(100) == b"through"
    network.heal()
    _send(a, at_b, b"after")
    assert at_b.recv(100) == b"after"


def test_a_tcp_connect_across_a_partition_hangs_rather_than_fails(network):
    a, b = network.add_node("a"), network.add_node("b")
    listener = b.call(socket.create_server, (b.address, 0))
    address = listener.getsockname()
    network.partition([a], [b])

    def connect():
        try:
            socket.create_connection(address, timeout=1).close()
        except OSError as e:
            return type(e)
        return None

    assert a.call(connect) is TimeoutError  # the SYN is dropped: no refusal, no error
    network.heal()
    assert a.call(connect) is None
    listener.close()


def test_a_process_runs_on_its_node_and_close_deletes_every_namespace():
    network = Network()
    try:
        node = network.add_node("only")
        show = node.command("ip", "-4", "-o", "addr", "show", "eth0")
        shown = subprocess.run(show, capture_output=True, text=True, check=True)
        assert f"{node.address}/24" in shown.stdout
        sleeper = subprocess.Popen(node.command(sys.executable, "-c", "import time; time.sleep(600)"))
        wait_until(lambda: str(sleeper.pid) in _pids(node), "the process on its node")
    finally:
        network.close()
    assert sleeper.wait(30) == -9  # killed with its namespace
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert network.prefix not in listed


def _pids(node) -> list:
    listed = subprocess.run(["ip", "netns", "pids", node.namespace], capture_output=True, text=True)
    return listed.stdout.split()
