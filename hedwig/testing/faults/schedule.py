"""Faults, and schedules of them, against a region under load (tests/faults and
bench/faults_bench.py).

A Stage is what outlives one region: the network, the ensemble (zk1..zk3), the clients'
node and the hubs' nodes. A Trial is one region on it (a ZooKeeper root and a storage
root of its own) with a Workload recording a History. A fault is applied to a trial and
returns what heals it; `run_schedule` applies faults one after the other, each held for
its time, healed, and followed by acknowledgements on every topic again (the region
recovered) before the next.

Faults (FAULTS), each named for what it does to the owner of the trial's first topic:
owner-from-zookeeper (partitioned from the ensemble only), owner-isolated (from every
node), zookeeper-split (the owner and the ensemble's leader on one side, the rest of the
ensemble, the other hub and the clients on the other), clients-from-owner, leader-killed
(the ensemble's leader SIGKILLed, restarted at heal), quorum-lost (two of the three
servers SIGKILLed, restarted at heal), owner-paused (SIGSTOP past its
session), owner-killed (SIGKILL, restarted at heal), flapping (the owner cut off from
the ensemble and healed every 0.3-0.8 s), lossy-owner (20% of its packets dropped).
"""

import random
import signal
import threading
import time
from pathlib import Path

from hedwig.testing.faults.ensemble import ZooKeeperEnsemble
from hedwig.testing.faults.history import History, check, longest_stall
from hedwig.testing.faults.network import Network
from hedwig.testing.faults.workload import Workload
from hedwig.testing.zkregion import RegionHubs

RECOVERY_ACKS = 5  # acknowledgements on every topic that show the region recovered
RECOVERY_TIMEOUT_S = 120.0


class Stage:
    """A network with a ZooKeeper ensemble, a clients' node and `hubs` hubs' nodes; with
    `rados`, a Ceph cluster on a node of its own ("rados"), whose pool the regions keep
    their ledgers in (else mmap ledgers on a storage root the hubs share)."""

    def __init__(self, directory, hubs: int = 2, *, rados: bool = False):
        self.directory = Path(directory)
        self.network = Network()
        self.ceph = None
        try:
            self.ensemble = ZooKeeperEnsemble(self.network, self.directory / "ensemble")
            self.client_node = self.network.add_node("client")
            self.hub_nodes = [self.network.add_node(f"hub{number}") for number in range(1, hubs + 1)]
            if rados:
                from hedwig.testing.ceph import CephCluster

                self.ceph = CephCluster(self.directory / "ceph", node=self.network.add_node("rados"))
                self.ceph.start()
            self.ensemble.start()
        except BaseException:
            self.close()
            raise
        self._trials = 0

    def restore(self) -> None:
        """Every fault healed, every ZooKeeper server running and serving."""
        self.network.heal()
        stopped = [server for server in self.ensemble.servers if not server.running]
        for server in stopped:
            server.start()
        self.ensemble.wait_serving(self.ensemble.servers)

    def trial(self, topics=("faults-0", "faults-1"), *, session_timeout_ms: int = 2000, conf: str = ""):
        """A region of a hub on each hub node, under load (its workload started)."""
        self._trials += 1
        if self.ceph is not None:
            conf = self.ceph.hub_conf_text(f"trial{self._trials}") + conf
        return Trial(self, self.directory / f"trial{self._trials}", topics, session_timeout_ms, conf)

    def close(self) -> None:
        if hasattr(self, "ensemble"):
            self.ensemble.stop()
        if self.ceph is not None:
            self.ceph.stop()
        self.network.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


class Trial:
    """One region on a Stage, its workload and its history."""

    def __init__(self, stage: Stage, directory, topics, session_timeout_ms: int, conf: str):
        self.stage = stage
        self.network = stage.network
        self.ensemble = stage.ensemble
        self.topics = list(topics)
        self.region = RegionHubs(stage.ensemble, directory, session_timeout_ms=session_timeout_ms, conf=conf)
        self.session_timeout_s = session_timeout_ms / 1000.0
        self.history = History()
        self.workload = None
        self.stalls: list[dict] = []  # per fault applied: its name and the longest stall under it
        self.started = None
        try:
            for node in stage.hub_nodes:
                launcher = node.command(*_hub_command())
                self.region.add(launcher=launcher, host=node.address)
            self.workload = Workload(stage.client_node, self.region.addresses, self.topics, self.history)
            self.workload.start()
            self.workload.wait_for_acks(RECOVERY_ACKS, "publishing before any fault")
            self.started = time.monotonic()
        except BaseException:
            self.stop()
            raise

    def hub_on(self, node):
        return self.region.hubs[self.stage.hub_nodes.index(node)]

    def owner(self, topic: str | None = None):
        """The node of the hub that owns `topic` (the first topic) now, as the first hub
        that answers says (one cut off from ZooKeeper answers SERVICE_DOWN)."""
        from hedwig.client import Client

        topic = topic or self.topics[0]

        def ask(address):
            with Client(address, timeout=5, connect_timeout=2) as client:
                return client.describe(topic)["owner"]

        error = None
        for hub in self.region.hubs:
            if not hub.running:
                continue
            try:
                address = self.stage.client_node.call(ask, hub.address)
            except Exception as e:
                error = e
                continue
            return self.stage.hub_nodes[self.region.hubs.index(self.region.hub_at(address))]
        raise error or RuntimeError("no hub running")

    def recovered(self, what: str) -> None:
        """Until every topic has RECOVERY_ACKS acknowledgements more than now."""
        self.workload.wait_for_acks(RECOVERY_ACKS, what, RECOVERY_TIMEOUT_S)

    def apply(self, name: str, hold_s: float, rng=None) -> dict:
        """Fault `name` applied, held `hold_s` seconds, healed, and the region recovered:
        {fault, stall_s} (the longest time any topic went without an acknowledgement
        from the fault to its recovery)."""
        start = time.monotonic()
        heal = {**FAULTS, **RADOS_FAULTS}[name](self, rng or random.Random(0))
        try:
            time.sleep(hold_s)  # (the schedule: the fault lasts this long)
        finally:
            heal()
        self.recovered(f"acknowledgements after {name} healed")
        end = time.monotonic()
        publishes = self.history.publishes
        stall = max(longest_stall([p for p in publishes if p.topic == t], start, end) for t in self.topics)
        self.stalls.append({"fault": name, "hold_s": hold_s, "stall_s": round(stall, 3)})
        return self.stalls[-1]

    def finish(self):
        """Load stopped, logs read: the checker's report."""
        self.stage.restore()
        self.workload.stop()
        return check(self.history, window=(self.started, time.monotonic()))

    def stop(self) -> None:
        for hub in self.region.hubs:
            hub.resume()
        self.stage.network.heal()
        if self.workload is not None and not self.workload._stop.is_set():
            self.workload._stop.set()
            self.workload._caught_up.update({topic: 0 for topic in self.topics})
        self.region.stop()


def _hub_command() -> list:
    import sys

    return [sys.executable, "-m", "hedwig", "hub"]


# -- the faults: each takes a Trial and an rng, applies itself, and returns its heal -------


def owner_from_zookeeper(trial, _rng):
    owner = trial.owner()
    trial.network.partition([owner], trial.ensemble.nodes)
    return trial.network.heal


def owner_isolated(trial, _rng):
    trial.network.isolate([trial.owner()])
    return trial.network.heal


def zookeeper_split(trial, _rng):
    owner = trial.owner()
    leader = trial.ensemble.leader().node
    minority = [owner, leader]
    majority = [node for node in trial.network.nodes.values() if node not in minority]
    trial.network.partition(minority, majority)
    return trial.network.heal


def clients_from_owner(trial, _rng):
    trial.network.partition([trial.stage.client_node], [trial.owner()])
    return trial.network.heal


def leader_killed(trial, _rng):
    leader = trial.ensemble.leader()
    leader.stop(signal.SIGKILL)
    trial.network.note("kill", [leader.node])

    def heal():
        leader.start()
        trial.ensemble.wait_serving([leader])

    return heal


def quorum_lost(trial, _rng):
    """Two servers of three SIGKILLed (the leader one of them): no quorum, nothing served."""
    leader = trial.ensemble.leader()
    victims = [leader, next(server for server in trial.ensemble.servers if server is not leader)]
    for server in victims:
        server.stop(signal.SIGKILL)
    trial.network.note("kill", [server.node for server in victims])

    def heal():
        for server in victims:
            server.start()
        trial.ensemble.wait_serving(trial.ensemble.servers)

    return heal


def owner_paused(trial, _rng):
    hub = _signal_owner(trial, "pause")
    return hub.resume


def owner_killed(trial, _rng):
    hub = _signal_owner(trial, "kill")
    return hub.restart


def _signal_owner(trial, kind: str):
    """The owner's hub paused (SIGSTOP) or killed (SIGKILL); that hub."""
    owner = trial.owner()
    hub = trial.hub_on(owner)
    getattr(hub, kind)()
    trial.network.note(kind, [owner])
    return hub


def flapping(trial, rng):
    owner = trial.owner()
    stop = threading.Event()
    seed = rng.random()
    zookeeper = [node.name for node in trial.ensemble.nodes]
    trial.network.note("partition", [owner], flapping=True, **{"from": zookeeper})

    def flap():
        flips = random.Random(seed)
        while not stop.is_set():
            trial.network.partition([owner], trial.ensemble.nodes, record=False)
            stop.wait(flips.uniform(0.3, 0.8))  # (the schedule of the flaps)
            trial.network.heal()
            stop.wait(flips.uniform(0.3, 0.8))

    flapper = threading.Thread(target=flap, daemon=True, name="flapping")
    flapper.start()

    def heal():
        stop.set()
        flapper.join(30)
        trial.network.heal()

    return heal


def rados_from_owner(trial, _rng):
    """The owner cut off from the Ceph cluster (it keeps ZooKeeper and its clients)."""
    trial.network.partition([trial.owner()], [trial.network["rados"]])
    return trial.network.heal


def lossy_owner(trial, _rng):
    trial.network.lose([trial.owner()], 0.2)
    return trial.network.heal


FAULTS = {
    "owner-from-zookeeper": owner_from_zookeeper,
    "owner-isolated": owner_isolated,
    "zookeeper-split": zookeeper_split,
    "clients-from-owner": clients_from_owner,
    "leader-killed": leader_killed,
    "quorum-lost": quorum_lost,
    "owner-paused": owner_paused,
    "owner-killed": owner_killed,
    "flapping": flapping,
    "lossy-owner": lossy_owner,
}
RADOS_FAULTS = {"rados-from-owner": rados_from_owner}


def random_schedule(rng: random.Random, length: int, session_timeout_s: float, rados: bool = False) -> list:
    """`length` (fault, hold_s) steps drawn from `rng`: holds from half to three session
    timeouts (short ones heal before the session expires, long ones after); `rados`: the
    faults of a Ceph cluster too."""
    names = sorted({**FAULTS, **RADOS_FAULTS} if rados else FAULTS)
    return [(rng.choice(names), round(rng.uniform(0.5, 3.0) * session_timeout_s, 2)) for _ in range(length)]
