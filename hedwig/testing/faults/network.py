"""Hosts of their own on one machine: a bridge in a network namespace of its own, and one
namespace per node (a hub, a ZooKeeper server, the clients), each with an address on the
bridge, so that any set of nodes may be cut off from any other.

Faults are iptables rules in the receiving node's INPUT chain (the kernel here has no
sch_netem and no tc actions, but it has iptables): a partition drops what one side sends
the other, silently, as a cut cable does (a DROP in OUTPUT would fail the sender's calls
with EPERM instead, which no real partition does); `lose` drops a share of a node's
packets at random (iptables' statistic match). `heal` removes every rule. Processes run
on a node through `ip netns exec` (`command`), threads of this process through setns(2)
(`thread`, `call`): a thread that entered a node's namespace makes its sockets there.

Every namespace's name starts with `hwf<pid>x`: `close` deletes them (the processes in
them killed first), and a network made later sweeps what a dead process left.
"""

import ctypes
import itertools
import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path

NETNS_DIR = Path("/var/run/netns")
PREFIX = "hwf"
CLONE_NEWNET = 0x40000000
SUBNET = "10.77.0"  # inside each network's own bridge: no two networks ever meet
_networks = itertools.count()
_libc = ctypes.CDLL(None, use_errno=True)


class NetworkMissing(RuntimeError):
    """Network namespaces cannot be made here: the message says what is missing."""


def iptables_command() -> str:
    """iptables-legacy where there is one (the kernel's ip_tables, present wherever
    iptables is), else iptables; NetworkMissing without either."""
    found = shutil.which("iptables-legacy") or shutil.which("iptables")
    if found is None:
        raise NetworkMissing("the fault suite needs iptables: apt-get install iptables (.ci/run does)")
    return found


def _run(*command: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise NetworkMissing(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def _delete_namespace(name: str) -> None:
    """Kill what runs in namespace `name`, then delete it (and its links)."""
    pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, check=False)
    for pid in pids.stdout.split():
        try:
            os.kill(int(pid), signal.SIGCONT)
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    subprocess.run(["ip", "netns", "delete", name], capture_output=True, check=False)


def sweep_stale_namespaces() -> list:
    """Delete the namespaces a network of a process that no longer runs left behind."""
    swept = []
    for entry in NETNS_DIR.glob(f"{PREFIX}*x*") if NETNS_DIR.exists() else ():
        pid = entry.name[len(PREFIX) :].split("x", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            _delete_namespace(entry.name)
            swept.append(entry.name)
    return swept


class Node:
    """One host: its namespace and its address on the network's bridge."""

    def __init__(self, network: "Network", name: str, namespace: str, address: str):
        self.network = network
        self.name = name
        self.namespace = namespace
        self.address = address

    def __repr__(self):
        return f"Node({self.name} {self.address})"

    def command(self, *args: str) -> list:
        """`args` as a command run on this node."""
        return ["ip", "netns", "exec", self.namespace, *args]

    def thread(self, target, *args, name: str = "", **kwargs) -> threading.Thread:
        """A daemon thread (not started) that runs `target` inside this node's namespace:
        its sockets are this node's."""

        def run():
            self.enter()
            target(*args, **kwargs)

        return threading.Thread(target=run, daemon=True, name=name or f"{self.name}-thread")

    def call(self, function, *args, timeout: float = 300.0, **kwargs):
        """function(*args, **kwargs) run in a thread inside this node's namespace: its
        result, or what it raised."""
        outcome = {}

        def run():
            try:
                outcome["result"] = function(*args, **kwargs)
            except BaseException as e:  # re-raised in the caller
                outcome["error"] = e

        worker = self.thread(run, name=f"{self.name}-call")
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            raise TimeoutError(f"{function!r} on {self.name} did not return within {timeout}s")
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("result")

    def enter(self) -> None:
        """Move the calling thread (it alone) into this node's namespace."""
        fd = os.open(NETNS_DIR / self.namespace, os.O_RDONLY)
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                error = ctypes.get_errno()
                raise OSError(error, f"setns into {self.namespace}: {os.strerror(error)}")
        finally:
            os.close(fd)

    def iptables(self, *rule: str) -> None:
        _run(*self.command(self.network.iptables, *rule))


class Network:
    """A bridge and the nodes on it; the faults between them (`faults`: each applied,
    for a report)."""

    def __init__(self):
        if os.geteuid() != 0:
            raise NetworkMissing("the fault suite makes network namespaces: it must run as root")
        if shutil.which("ip") is None:
            raise NetworkMissing("the fault suite needs ip: apt-get install iproute2")
        self.iptables = iptables_command()
        sweep_stale_namespaces()
        self.prefix = f"{PREFIX}{os.getpid()}x{next(_networks)}"
        self.bridge = f"{self.prefix}br"
        self.nodes: dict[str, Node] = {}
        self.faults: list[dict] = []
        self._rules: list[tuple] = []  # (node, rule) in force, for heal
        self._namespaces = []
        try:
            self._add_namespace(self.bridge)
            _run("ip", "-n", self.bridge, "link", "add", "br0", "type", "bridge")
            _run("ip", "-n", self.bridge, "link", "set", "br0", "up")
        except BaseException:
            self.close()
            raise

    def _add_namespace(self, name: str) -> None:
        _run("ip", "netns", "add", name)
        self._namespaces.append(name)
        _run("ip", "-n", name, "link", "set", "lo", "up")

    def add_node(self, name: str) -> Node:
        """A node of its own namespace and address, on the bridge."""
        index = len(self.nodes) + 1
        namespace = f"{self.prefix}n{index}"
        address = f"{SUBNET}.{10 + index}"
        self._add_namespace(namespace)
        port = f"v{index}"
        peer = ("peer", "name", port, "netns", self.bridge)
        _run("ip", "link", "add", "eth0", "netns", namespace, "type", "veth", *peer)
        _run("ip", "-n", self.bridge, "link", "set", port, "master", "br0", "up")
        _run("ip", "-n", namespace, "addr", "add", f"{address}/24", "dev", "eth0")
        _run("ip", "-n", namespace, "link", "set", "eth0", "up")
        node = Node(self, name, namespace, address)
        self.nodes[name] = node
        return node

    def __getitem__(self, name: str) -> Node:
        return self.nodes[name]

    def _nodes(self, nodes) -> list:
        nodes = [nodes] if isinstance(nodes, (str, Node)) else list(nodes)
        return [node if isinstance(node, Node) else self.nodes[node] for node in nodes]

    def _add_rule(self, node: Node, *rule: str) -> None:
        node.iptables("-I", "INPUT", *rule)
        self._rules.append((node, rule))

    def partition(self, senders, receivers, *, one_way: bool = False, record: bool = True) -> None:
        """What `senders` send `receivers` is dropped (and the other way too, unless
        `one_way`); `record` False leaves it out of `faults` (one of many flaps)."""
        senders, receivers = self._nodes(senders), self._nodes(receivers)
        for sender in senders:
            for receiver in receivers:
                self._add_rule(receiver, "-s", sender.address, "-j", "DROP")
                if not one_way:
                    self._add_rule(sender, "-s", receiver.address, "-j", "DROP")
        if record:
            self.faults.append(
                {
                    "kind": "partition",
                    "nodes": [node.name for node in senders],
                    "from": [node.name for node in receivers],
                    "one_way": one_way,
                }
            )

    def isolate(self, nodes) -> None:
        """`nodes` cut off from every other node, both ways."""
        inside = self._nodes(nodes)
        others = [node for node in self.nodes.values() if node not in inside]
        self.partition(inside, others)

    def lose(self, nodes, probability: float) -> None:
        """A share `probability` of every packet to and from `nodes` dropped at random (a
        lossy link; the kernel here has no netem)."""
        random_drop = ("-m", "statistic", "--mode", "random", "--probability", f"{probability}", "-j", "DROP")
        for node in self._nodes(nodes):
            self._add_rule(node, *random_drop)
            for other in self.nodes.values():
                if other is not node:
                    self._add_rule(other, "-s", node.address, *random_drop)
        self.faults.append(
            {"kind": "netem", "nodes": [node.name for node in self._nodes(nodes)], "loss": probability}
        )

    def heal(self) -> None:
        """Every partition and loss removed."""
        while self._rules:
            node, rule = self._rules.pop()
            node.iptables("-D", "INPUT", *rule)

    def note(self, kind: str, nodes, **details) -> None:
        """A fault made outside the network (a pause, a kill), for the report."""
        self.faults.append({"kind": kind, "nodes": [node.name for node in self._nodes(nodes)], **details})

    def close(self) -> None:
        """Every namespace deleted, with what ran in it and its links."""
        self._rules.clear()
        for name in reversed(self._namespaces):
            _delete_namespace(name)
        self._namespaces.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
