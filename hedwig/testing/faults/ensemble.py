"""A ZooKeeper ensemble of three servers (Debian's jar, QuorumPeerMain), each on a node of
its own, so that a partition may split its quorum: one server lost is survivable, two are
not.

Each server is hedwig.testing.zookeeper's ZooKeeperServer on its node's address (client
port 2181, quorum port 2888, election port 3888 there), with `myid` in its data directory
and one `server.N` line per member. A server serves once it answers `srvr` with its mode
(leader or follower): a server without a quorum says it is not serving. Elections are
made quick (a tick of 100 ms, and connects between members given up after a second) so
that a suite of faults runs in minutes.
"""

import subprocess
import time
from pathlib import Path

from hedwig.testing.zookeeper import ZooKeeperServer, find_zookeeper

QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
CLIENT_PORT = 2181
QUORUM_PORT = 2888
ELECTION_PORT = 3888
START_TIMEOUT_S = 60.0


class QuorumServer(ZooKeeperServer):
    """Server `myid` of an ensemble, on `node`; `members`: every member's node, in myid
    order from 1."""

    def __init__(self, directory, node, myid: int, members, *, tick_ms: int = 100, max_ticks: int = 100):
        super().__init__(directory, tick_ms=tick_ms, max_ticks=max_ticks)
        self.node = node
        self.host = node.address
        self.port = CLIENT_PORT
        self.myid = myid
        self.members = list(members)

    def _write_config(self) -> Path:
        config = super()._write_config()
        (self.directory / "data" / "myid").write_text(f"{self.myid}\n")
        servers = "".join(
            f"server.{number}={member.address}:{QUORUM_PORT}:{ELECTION_PORT}\n"
            for number, member in enumerate(self.members, 1)
        )
        with config.open("a") as text:
            text.write(f"initLimit=50\nsyncLimit=10\n{servers}")
        return config

    def command(self) -> list:
        java, *options = find_zookeeper(QUORUM_MAIN)
        return self.node.command(java, "-Dzookeeper.cnxTimeout=1000", *options, str(self._write_config()))

    def start(self) -> "QuorumServer":
        """Launch the server (it serves once a quorum of the ensemble runs: `serving`)."""
        command = self.command()
        self._log = open(self.directory / "zookeeper.log", "ab")  # noqa: SIM115 - the server's
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
        )
        return self

    def four_letters(self, word: str) -> str:
        return self.node.call(super().four_letters, word, timeout=30)

    def mode(self) -> str:
        """ "leader", "follower", or "" (not serving: no quorum, or not running)."""
        for line in self.four_letters("srvr").splitlines():
            if line.startswith("Mode: "):
                return line[len("Mode: ") :].strip()
        return ""

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


class ZooKeeperEnsemble:
    """`size` servers on nodes zk1..zkN of `network`, under `directory`."""

    def __init__(self, network, directory, size: int = 3, **options):
        self.network = network
        nodes = [network.add_node(f"zk{number}") for number in range(1, size + 1)]
        self.servers = [
            QuorumServer(Path(directory) / f"zk{number}", node, number, nodes, **options)
            for number, node in enumerate(nodes, 1)
        ]

    @property
    def address(self) -> str:
        """The connection string a hub is given: every member."""
        return ",".join(server.address for server in self.servers)

    @property
    def nodes(self) -> list:
        return [server.node for server in self.servers]

    def start(self) -> "ZooKeeperEnsemble":
        for server in self.servers:
            server.start()
        self.wait_serving(self.servers)
        return self

    def wait_serving(self, servers, timeout: float = START_TIMEOUT_S) -> None:
        """Until each of `servers` serves (leader or follower); RuntimeError with their
        logs if one does not in time."""
        deadline = time.monotonic() + timeout
        for server in servers:
            while not server.mode():
                if not server.running or time.monotonic() > deadline:
                    logs = "\n".join(f"-- zk{s.myid}:\n{s.output()[-3000:]}" for s in servers)
                    raise RuntimeError(f"the ensemble did not serve on {self.address}:\n{logs}")
                time.sleep(0.1)  # (the pace of polling: a server answers srvr once it serves)

    def leader(self) -> QuorumServer:
        """The server that leads now (polled until one does)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for server in self.servers:
                if server.running and server.mode() == "leader":
                    return server
            time.sleep(0.1)  # (the pace of polling an election)
        raise RuntimeError(f"no leader in the ensemble on {self.address}")

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
