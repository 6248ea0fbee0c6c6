"""A real ZooKeeper server in its own process, for tests and benchmarks of regions on it.

Debian's `zookeeper` package runs standalone as

    java -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \\
        org.apache.zookeeper.server.ZooKeeperServerMain zoo.cfg

The server listens on a free port of 127.0.0.1 (kept across restarts, so clients find it
again), with a short tick so that sessions may time out within a second or two: the
server grants session timeouts between 2 and `max_ticks` ticks. It is ready once a
four-letter `ruok` is answered `imok` (whitelisted in zoo.cfg). Stopping it is SIGTERM
(or SIGKILL); restarting it keeps its data directory, so sessions and znodes survive
a restart as they do in production.

When java or the jar is missing, `ZooKeeperMissing` says what to install: the tests that
need a ZooKeeper fail with that line rather than being skipped (CI installs the package).
"""

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from hedwig.testing.hubprocess import free_port

ZOOKEEPER_JAR = Path(os.environ.get("HEDWIG_ZOOKEEPER_JAR", "/usr/share/java/zookeeper.jar"))
SLF4J_JAR = ZOOKEEPER_JAR.parent / "slf4j-simple.jar"
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
START_TIMEOUT_S = 30.0


class ZooKeeperMissing(RuntimeError):
    """No ZooKeeper server can be started here: the message says what to install."""


def find_zookeeper(main_class: str = MAIN_CLASS) -> list:
    """The command prefix that runs a ZooKeeper server (`main_class`: QuorumPeerMain for
    a server of an ensemble), or ZooKeeperMissing."""
    java = shutil.which("java")
    needed = (("java", java), (str(ZOOKEEPER_JAR), ZOOKEEPER_JAR.exists()))
    missing = [what for what, there in needed if not there]
    if missing:
        raise ZooKeeperMissing(
            f"a ZooKeeper server is needed and {' and '.join(missing)} is missing: install Debian's"
            " `zookeeper` package (apt-get install zookeeper; .ci/run does), or point"
            " HEDWIG_ZOOKEEPER_JAR at a zookeeper.jar"
        )
    return [java, "-Xmx256m", "-cp", f"{ZOOKEEPER_JAR}:{SLF4J_JAR}", main_class]


class ZooKeeperServer:
    """One standalone ZooKeeper under `directory` (its zoo.cfg, data and log)."""

    host = "127.0.0.1"

    def __init__(self, directory, tick_ms: int = 100, max_ticks: int = 100):
        self.directory = Path(directory)
        self.tick_ms = tick_ms
        self.max_ticks = max_ticks
        self.port = free_port()
        self.process = None
        self._log = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def max_session_timeout_ms(self) -> int:
        return self.tick_ms * self.max_ticks

    def _write_config(self) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        data = self.directory / "data"
        data.mkdir(exist_ok=True)
        config = self.directory / "zoo.cfg"
        config.write_text(
            f"tickTime={self.tick_ms}\n"
            f"dataDir={data}\n"
            f"clientPort={self.port}\n"
            f"clientPortAddress={self.host}\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok,srvr,mntr\n"
            f"minSessionTimeout={2 * self.tick_ms}\n"
            f"maxSessionTimeout={self.max_session_timeout_ms}\n"
            "maxClientCnxns=0\n"
        )
        return config

    def command(self) -> list:
        """The command line that runs this server (its configuration written)."""
        return [*find_zookeeper(), str(self._write_config())]

    def start(self) -> "ZooKeeperServer":
        command = self.command()
        self._log = open(self.directory / "zookeeper.log", "ab")  # noqa: SIM115 - the server's
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.healthy():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"ZooKeeper did not start on {self.address}:\n{self.output()[-4000:]}")
            time.sleep(0.05)  # (the pace of polling: the server answers ruok once it serves)
        return self

    def healthy(self) -> bool:
        """Whether the server answers `ruok` with `imok`."""
        return self.four_letters("ruok") == "imok"

    def four_letters(self, word: str) -> str:
        try:
            with socket.create_connection((self.host, self.port), timeout=2) as sock:
                sock.sendall(word.encode("ascii"))
                sock.shutdown(socket.SHUT_WR)
                chunks = []
                while chunk := sock.recv(4096):
                    chunks.append(chunk)
        except OSError:
            return ""
        return b"".join(chunks).decode("utf-8", "replace")

    def output(self) -> str:
        try:
            return (self.directory / "zookeeper.log").read_text("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, signum: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signum)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def restart(self) -> "ZooKeeperServer":
        """Start again on the same port, over the same data (sessions and znodes kept)."""
        self.stop()
        return self.start()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
