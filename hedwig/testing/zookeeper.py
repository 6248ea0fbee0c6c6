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
PID_FILE = "zookeeper.pid"


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

    def __init__(
        self, directory, tick_ms: int = 100, max_ticks: int = 100, port: int = 0, detach: bool = False
    ):
        """`port` 0: a free one; `detach`: the server runs on in a session of its own after
        this process ends (`python -m hedwig.testing.zookeeper start`), its PID in
        DIR/zookeeper.pid for `stop`."""
        self.directory = Path(directory)
        self.tick_ms = tick_ms
        self.max_ticks = max_ticks
        self.port = port or free_port()
        self.detach = detach
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
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=self.detach,
        )
        (self.directory / PID_FILE).write_text(f"{self.process.pid}\n")
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


# -- a server for people to try a region: `python -m hedwig.testing.zookeeper start DIR` ----------


def stop_directory(directory) -> bool:
    """SIGTERM the server `start` left running in `directory` (its PID file's, when that
    process still runs this directory's zoo.cfg: a PID reused since is left alone), then
    wait for it to end; whether one was running."""
    directory = Path(directory).resolve()
    try:
        pid = int((directory / PID_FILE).read_text().strip())
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return False
    if MAIN_CLASS.encode() not in argv or str(directory / "zoo.cfg").encode() not in argv:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while Path(f"/proc/{pid}/cmdline").exists() and Path(f"/proc/{pid}/cmdline").read_bytes():
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)  # (the pace of looking: the server is not our child to wait on)
    (directory / PID_FILE).unlink(missing_ok=True)
    return True


def main(argv=None) -> int:
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m hedwig.testing.zookeeper",
        description="A standalone ZooKeeper server on 127.0.0.1 to try a region of several hubs"
        " (docs/operations.md, 'Regions of several hubs'): `start DIR` prints its address, `stop"
        " DIR` ends it (DIR keeps its data). Needs java and Debian's `zookeeper` package.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="start a server with its data in DIR and print its address")
    start.add_argument("directory", metavar="DIR")
    start.add_argument("--port", type=int, default=0, help="its client port (default: a free one)")
    stop = commands.add_parser("stop", help="stop the server started in DIR")
    stop.add_argument("directory", metavar="DIR")
    args = parser.parse_args(argv)
    directory = Path(args.directory).resolve()
    if args.command == "stop":
        if not stop_directory(directory):
            print(f"{parser.prog}: no server started in {directory} is running", file=sys.stderr)
            return 1
        print(f"stopped the ZooKeeper server of {directory}")
        return 0
    # Ticks of 200 ms granting sessions of 0.4-20 s: a hub's default 10 s session fits.
    server = ZooKeeperServer(directory, tick_ms=200, max_ticks=100, port=args.port, detach=True)
    try:
        server.start()
    except (ZooKeeperMissing, RuntimeError) as e:
        print(f"{parser.prog}: {e}", file=sys.stderr)
        return 1
    print(
        f"ZooKeeper on {server.address} (data in {directory})\n"
        f"hedwig hub --conf conf/region.conf --zookeeper {server.address} --port 4080\n"
        f"stop it with: {parser.prog} stop {directory}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
