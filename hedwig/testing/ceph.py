"""A throw-away Ceph cluster on 127.0.0.1 (or a fault suite's node), for tests and
benchmarks of replicated ledgers.

One monitor and three OSDs (bluestore on sparse files in the OSDs' directories), no
manager, cephx on, all under one directory of the cluster's own, with one replicated pool
of size 3 and min_size 2, as a real deployment keeps ledgers: every acknowledged append
is on three OSDs, and the pool takes writes while two are up. Debian's packages
(ceph-mon, ceph-osd, ceph-common; python3-rados for the admin calls made here) run it
without systemd:

1. one keyring holds every key (mon., client.admin, osd.N), imported by the monitor's
   mkfs, so no `ceph auth` call is needed; the monmap names a free port of 127.0.0.1;
2. the monitor starts; in this process, librados registers the OSD ids and creates the
   pool while the OSDs' mkfs run in parallel;
3. the OSDs start; the cluster is ready once all are up and in and a write to the pool
   is acknowledged (about 4 s).

Each daemon runs in the foreground in a session of its own, started here, so the PIDs
recorded (in memory and in `pids`, "PID name" a line) are the daemons' own, and stopping
the cluster signals exactly those: SIGTERM to the OSDs, then the monitor, SIGKILL to what
is left after a grace period; then the directory goes. A test may kill, pause, resume and
restart OSDs (the restarted one's PID is recorded too).

The settings that make a one-host cluster notice a hung OSD within seconds (a single
reporter suffices, heartbeats every second, a grace of 4 s; SIGSTOP is a hang, which no
refused connection reports) are in ceph.conf below: an operator's cluster has its own
(docs/operations.md, "RADOS"). When a binary or the `rados` module is missing,
CephMissing says what to install: the tests that need a cluster fail with that line,
never skip.
"""

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

CEPH_BINARIES = ("ceph-mon", "ceph-osd", "ceph-authtool", "monmaptool")
START_TIMEOUT_S = 90.0
STOP_GRACE_S = 5.0


class CephMissing(RuntimeError):
    """No Ceph cluster can be started here: the message says what to install."""


def find_ceph() -> None:
    """Raise CephMissing unless the daemons and the rados module are here."""
    missing = [name for name in CEPH_BINARIES if shutil.which(name) is None]
    try:
        import rados  # noqa: F401
    except ImportError:
        missing.append("the rados Python module (python3-rados, linked by `make .venv/.rados-link`)")
    if missing:
        raise CephMissing(
            f"a Ceph cluster is needed and {', '.join(missing)} is missing: install Debian's ceph-mon,"
            " ceph-osd, ceph-common and python3-rados (.ci/run does), then `make .venv/.rados-link`"
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CONF_TEMPLATE = """[global]
fsid = {fsid}
mon host = [v2:{host}:{port}]
mon initial members = a
public addr = {host}
cluster addr = {host}
ms bind msgr1 = false
ms bind msgr2 = true
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = {dir}/keyring
run dir = {dir}/run
admin socket = {dir}/run/$name.asok
log file = {dir}/log/$name.log
pid file = {dir}/run/$name.pid
crash dir = {dir}/crash
log to stderr = false
err to stderr = false
# one host: the replicas go to different OSDs, not hosts (set before the monitor's mkfs)
osd crush chooseleaf type = 0
osd pool default size = 3
osd pool default min size = 2
osd pool default pg autoscale mode = off
mon allow pool delete = true
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim allowed = false
auth allow insecure global id reclaim = false
# a hung OSD is marked down within seconds with every OSD on one host
mon osd min down reporters = 1
mon osd reporter subtree level = osd
osd heartbeat interval = 1
osd heartbeat grace = 4
mon osd adjust heartbeat grace = false
# a killed OSD stays "in" (its data is not moved elsewhere while it is restarted)
mon osd down out interval = 0
osd memory target = 939524096
mon data avail warn = 1
mon data avail crit = 0
# map changes committed in a tenth of a second, not one
paxos propose interval = 0.1
paxos min wait = 0.01

[mon]
mon data = {dir}/mon.$id
mon cluster log file = {dir}/log/cluster.log

[osd]
osd data = {dir}/osd.$id
osd objectstore = bluestore
bluestore block create = true
bluestore block size = {block_bytes}
bluestore fsck on mkfs = false
osd op num shards = 2
osd op num threads per shard = 1
{extra}
"""


class CephCluster:
    """One throw-away cluster under `directory` (which must not exist or be empty)."""

    def __init__(
        self,
        directory,
        *,
        osds: int = 3,
        pool: str = "hedwig",
        pg_num: int = 16,
        block_bytes: int = 4 << 30,
        extra_conf: str = "",
        node=None,
    ):
        """`node`: a hedwig.testing.faults node to run the daemons (and this process's
        admin handle) on, at its address (None: 127.0.0.1 of this namespace)."""
        self.directory = Path(directory)
        self.node = node
        self.host = node.address if node is not None else "127.0.0.1"
        self._prefix = node.command() if node is not None else []
        self.osd_count = osds
        self.pool = pool
        self.pg_num = pg_num
        self.block_bytes = block_bytes
        self.extra_conf = extra_conf
        self.port = None
        self._daemons: dict[str, subprocess.Popen] = {}  # name -> the daemon running now
        self._logs = []
        self._admin = None

    @property
    def conf_file(self) -> str:
        return str(self.directory / "ceph.conf")

    @property
    def pids(self) -> dict:
        """name -> PID of each daemon started (the latest, for a restarted one)."""
        return {name: process.pid for name, process in self._daemons.items()}

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- start ----------------------------------------------------------------------------

    def start(self, timeout_s: float = START_TIMEOUT_S) -> "CephCluster":
        find_ceph()
        self.directory.mkdir(parents=True, exist_ok=True)
        if any(self.directory.iterdir()):
            raise RuntimeError(f"{self.directory} is not empty")
        for sub in ("run", "log", "crash"):
            (self.directory / sub).mkdir()
        (self.directory / "pids").write_text("")
        atexit.register(self.stop)  # (a run cut short still stops its daemons)
        try:
            self._start(time.monotonic() + timeout_s)
        except BaseException:
            self.stop(keep=True)  # the logs stay for whoever looks into the failure
            raise
        return self

    def _start(self, deadline: float) -> None:
        self.port = free_port()
        fsid = str(uuid.uuid4())
        Path(self.conf_file).write_text(
            CONF_TEMPLATE.format(
                fsid=fsid,
                host=self.host,
                port=self.port,
                dir=self.directory,
                block_bytes=self.block_bytes,
                extra=self.extra_conf,
            )
        )
        keyring = str(self.directory / "keyring")
        self._run(
            "ceph-authtool", "--create-keyring", keyring, "--gen-key", "-n", "mon.", "--cap", "mon", "allow *"
        )
        caps = ("--cap", "mon", "allow *", "--cap", "osd", "allow *", "--cap", "mgr", "allow *")
        self._run("ceph-authtool", keyring, "--gen-key", "-n", "client.admin", *caps)
        for i in range(self.osd_count):
            osd_caps = (
                "--cap",
                "mon",
                "allow profile osd",
                "--cap",
                "mgr",
                "allow profile osd",
                "--cap",
                "osd",
                "allow *",
            )
            self._run("ceph-authtool", keyring, "--gen-key", "-n", f"osd.{i}", *osd_caps)
        monmap = str(self.directory / "monmap")
        self._run(
            "monmaptool", "--create", "--fsid", fsid, "--addv", "a", f"[v2:{self.host}:{self.port}]", monmap
        )
        self._run(
            "ceph-mon", "-c", self.conf_file, "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", keyring
        )
        self._launch("mon.a", "ceph-mon", "-i", "a")
        osd_uuids = [str(uuid.uuid4()) for _ in range(self.osd_count)]
        mkfs = []
        for i, osd_uuid in enumerate(osd_uuids):
            (self.directory / f"osd.{i}").mkdir()
            log = open(self.directory / "log" / f"osd.{i}.mkfs", "ab")  # noqa: SIM115 - closed below
            self._logs.append(log)
            mkfs.append(
                subprocess.Popen(
                    [
                        *self._prefix,
                        "ceph-osd",
                        "-c",
                        self.conf_file,
                        "-i",
                        str(i),
                        "--mkfs",
                        "--osd-uuid",
                        osd_uuid,
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                )
            )
        admin = self.admin(deadline)
        for i, osd_uuid in enumerate(osd_uuids):
            self.mon_command(prefix="osd new", uuid=osd_uuid, id=i)
        self.mon_command(prefix="osd pool create", pool=self.pool, pg_num=self.pg_num, pgp_num=self.pg_num)
        self.mon_command(prefix="osd pool set", pool=self.pool, var="size", val="3")
        self.mon_command(prefix="osd pool set", pool=self.pool, var="min_size", val="2")
        self.mon_command(prefix="osd pool application enable", pool=self.pool, app="hedwig")
        for i, process in enumerate(mkfs):
            if process.wait(timeout=max(1.0, deadline - time.monotonic())) != 0:
                raise RuntimeError(
                    f"ceph-osd --mkfs of osd.{i} failed: see {self.directory}/log/osd.{i}.mkfs"
                )
        for i in range(self.osd_count):
            self.start_osd(i)
        self.wait_for_osds(self.osd_count, deadline - time.monotonic())
        admin.wait_for_latest_osdmap()
        with admin.open_ioctx(self.pool) as ioctx:
            ioctx.write_full("hedwig-probe", b"x")  # (blocks until the PGs are active)
            ioctx.remove_object("hedwig-probe")

    def _run(self, *command) -> None:
        result = subprocess.run(
            command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False
        )
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command[:2])} failed: {(result.stderr or result.stdout).strip()}")

    def _launch(self, name: str, binary: str, *args) -> None:
        """Start a daemon in the foreground, in a session of its own; record its PID."""
        log = open(self.directory / "log" / f"{name}.stdout", "ab")  # noqa: SIM115 - closed at stop
        self._logs.append(log)
        process = subprocess.Popen(
            [*self._prefix, binary, "-c", self.conf_file, *args, "-f"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        self._daemons[name] = process
        with open(self.directory / "pids", "a") as pids:
            pids.write(f"{process.pid} {name}\n")

    def admin(self, deadline: float | None = None):
        """A connected librados handle with the admin's key (made once)."""
        if self._admin is None:
            deadline = deadline or time.monotonic() + 30
            if self.node is not None:  # (librados's threads, made as it connects, live there)
                self._admin = self.node.call(self._connect_admin, deadline)
            else:
                self._admin = self._connect_admin(deadline)
        return self._admin

    def _connect_admin(self, deadline: float):
        import rados

        while True:
            handle = rados.Rados(conffile=self.conf_file, conf={"rados_mon_op_timeout": "10"})
            try:
                handle.connect(timeout=2)
                return handle
            except rados.Error:
                handle.shutdown()
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.1)  # (the pace of polling a starting monitor)

    def mon_command(self, **command) -> dict | None:
        """Run a monitor command (as `ceph` would); its JSON answer, if any."""
        command.setdefault("format", "json")
        rc, out, err = self.admin().mon_command(json.dumps(command), b"")
        if rc != 0:
            raise RuntimeError(f"ceph {command['prefix']}: {err or os.strerror(-rc)}")
        return json.loads(out) if out else None

    def hub_conf_text(self, namespace: str, **rados) -> str:
        """hub.conf sections keeping a hub's ledgers in this cluster's pool, in `namespace`
        ([rados] settings in `rados` override the defaults)."""
        settings = {"conf_file": self.conf_file, "pool": self.pool, "namespace": namespace, **rados}
        lines = ["[ledger]", "store = rados", "", "[rados]"]
        lines += [f"{key} = {value}" for key, value in settings.items()]
        return "\n".join(lines) + "\n"

    def hub_conf(self, path, namespace: str, **rados) -> str:
        """Write hub_conf_text(...) to `path`; its path."""
        Path(path).write_text(self.hub_conf_text(namespace, **rados))
        return str(path)

    # -- what the pool holds (as the admin sees it) ---------------------------------------

    def objects(self, namespace: str = "") -> dict:
        """name -> size of every object in `namespace` of the pool."""
        with self.admin().open_ioctx(self.pool) as ioctx:
            ioctx.set_namespace(namespace)
            return {o.key: ioctx.stat(o.key)[0] for o in ioctx.list_objects()}

    def omap(self, name: str, keys, namespace: str = "") -> dict:
        """The values of those of `keys` object `name` has in its omap."""
        import rados

        with self.admin().open_ioctx(self.pool) as ioctx:
            ioctx.set_namespace(namespace)
            with rados.ReadOpCtx() as op:
                values, _rc = ioctx.get_omap_vals_by_keys(op, tuple(keys))
                ioctx.operate_read_op(op, name)
                return dict(values)

    def write(self, name: str, data: bytes, offset: int, namespace: str = "") -> None:
        """Write into an object behind everybody's back (a test's damage)."""
        with self.admin().open_ioctx(self.pool) as ioctx:
            ioctx.set_namespace(namespace)
            ioctx.write(name, data, offset)

    # -- the OSDs: what tests do to them --------------------------------------------------

    def osds_up(self) -> int:
        return self.mon_command(prefix="osd stat")["num_up_osds"]

    def wait_for_osds(self, count: int, timeout_s: float = 60.0) -> None:
        """Wait until exactly `count` OSDs are up (and all of them in)."""
        deadline = time.monotonic() + timeout_s
        while True:
            stat = self.mon_command(prefix="osd stat")
            if stat["num_up_osds"] == count and stat["num_in_osds"] == self.osd_count:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{count} OSDs up expected, the monitor says {stat}")
            time.sleep(0.05)

    def primary_osd(self, object_name: str, namespace: str = "") -> int:
        """The OSD the object's writes go to first."""
        found = self.mon_command(prefix="osd map", pool=self.pool, object=object_name, nspace=namespace)
        return found["acting_primary"]

    def start_osd(self, i: int) -> None:
        """Start osd.i (again, after kill_osd): its new PID is recorded."""
        self._launch(f"osd.{i}", "ceph-osd", "-i", str(i))

    def kill_osd(self, i: int, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to osd.i (SIGKILL: it crashed; see pause_osd for a hang); a signal
        that ends it leaves it to start_osd."""
        process = self._daemons[f"osd.{i}"]
        os.kill(process.pid, sig)
        if sig in (signal.SIGKILL, signal.SIGTERM):
            process.wait(timeout=30)

    def restore_osds(self, timeout_s: float = 120.0) -> None:
        """Every OSD running again (a paused one resumed, an ended one started) and up."""
        for i in range(self.osd_count):
            process = self._daemons.get(f"osd.{i}")
            if process is None or process.poll() is not None:
                self.start_osd(i)
            else:
                self.resume_osd(i)
        self.wait_for_osds(self.osd_count, timeout_s)

    def pause_osd(self, i: int) -> None:
        """SIGSTOP osd.i: a hung OSD, which no refused connection reports."""
        os.kill(self._daemons[f"osd.{i}"].pid, signal.SIGSTOP)

    def resume_osd(self, i: int) -> None:
        os.kill(self._daemons[f"osd.{i}"].pid, signal.SIGCONT)

    # -- stop -----------------------------------------------------------------------------

    def stop(self, keep: bool = False) -> None:
        """Stop exactly the daemons started here (OSDs first, so they can tell the
        monitor), SIGKILL what is left after STOP_GRACE_S, then remove the directory."""
        atexit.unregister(self.stop)
        if self._admin is not None:
            try:
                self._admin.shutdown()
            except Exception:
                pass
            self._admin = None
        osds = [p for name, p in self._daemons.items() if name.startswith("osd.")]
        mons = [p for name, p in self._daemons.items() if not name.startswith("osd.")]
        for group in (osds, mons):
            for process in group:
                if process.poll() is None:
                    try:
                        os.kill(process.pid, signal.SIGCONT)  # (a paused one must run to stop)
                        process.terminate()
                    except ProcessLookupError:
                        pass
            for process in group:
                try:
                    process.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=30)
        self._daemons.clear()
        for log in self._logs:
            log.close()
        self._logs.clear()
        if not keep:
            shutil.rmtree(self.directory, ignore_errors=True)


# -- a cluster for people to try: `python -m hedwig.testing.ceph start DIR` ---------------------


def _daemon_of(directory: Path, pid: int, name: str) -> bool:
    """Whether `pid` is still the daemon `name` of the cluster in `directory` (its command
    line names its binary and the cluster's ceph.conf: a PID reused since is left alone)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    binary = "ceph-osd" if name.startswith("osd.") else "ceph-mon"
    return (
        any(arg.endswith(binary.encode()) for arg in argv) and str(directory / "ceph.conf").encode() in argv
    )


def stop_directory(directory, keep: bool = False) -> list:
    """Stop the daemons a cluster started by `start` in `directory` recorded in its `pids`
    (the OSDs, then the monitor; SIGKILL after STOP_GRACE_S), then remove the directory
    (`keep`: leave it). The names of the daemons stopped."""
    directory = Path(directory).resolve()
    recorded = {}  # name -> its latest PID
    for line in (directory / "pids").read_text().splitlines():
        pid, _, name = line.partition(" ")
        recorded[name] = int(pid)
    running = {name: pid for name, pid in recorded.items() if _daemon_of(directory, pid, name)}
    for group in (
        [n for n in running if n.startswith("osd.")],
        [n for n in running if not n.startswith("osd.")],
    ):
        for name in group:
            try:
                os.kill(running[name], signal.SIGCONT)
                os.kill(running[name], signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + STOP_GRACE_S
        for name in group:
            while _daemon_of(directory, running[name], name):
                if time.monotonic() > deadline:
                    os.kill(running[name], signal.SIGKILL)
                time.sleep(0.05)  # (the pace of looking: the daemon's exit is not ours to wait on)
    if not keep:
        shutil.rmtree(directory, ignore_errors=True)
    return sorted(running)


def main(argv=None) -> int:
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m hedwig.testing.ceph",
        description="A throw-away Ceph cluster on this host (1 monitor, 3 OSDs on sparse files, a"
        " replicated pool of size 3) to try hedwig's replicated ledgers ([ledger] store = rados):"
        " `start DIR` prints the settings a hub needs, `stop DIR` ends it and removes DIR."
        " Needs Debian's ceph-mon, ceph-osd, ceph-common and python3-rados.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="start a cluster in DIR (new or empty) and print its settings")
    start.add_argument("directory", metavar="DIR")
    start.add_argument("--pool", default="hedwig", help="the pool to create (default hedwig)")
    start.add_argument("--osds", type=int, default=3, help="OSDs to run (default 3; the pool's size is 3)")
    stop = commands.add_parser("stop", help="stop the cluster started in DIR and remove DIR")
    stop.add_argument("directory", metavar="DIR")
    stop.add_argument("--keep", action="store_true", help="leave DIR (its logs) in place")
    args = parser.parse_args(argv)
    directory = Path(args.directory).resolve()
    if args.command == "stop":
        if not (directory / "pids").is_file():
            print(
                f"{parser.prog}: {directory} holds no cluster started by `start` (no pids file)",
                file=sys.stderr,
            )
            return 1
        stopped = stop_directory(directory, keep=args.keep)
        print(f"stopped {', '.join(stopped) or 'nothing (no daemon was running)'}")
        return 0
    cluster = CephCluster(directory, osds=args.osds, pool=args.pool)
    try:
        cluster.start()
    except (CephMissing, RuntimeError, TimeoutError) as e:
        print(f"{parser.prog}: {e}", file=sys.stderr)
        return 1
    # The daemons run on in sessions of their own; this process leaves them to `stop`.
    atexit.unregister(cluster.stop)
    cluster._admin.shutdown()
    for log in cluster._logs:
        log.close()
    print(
        f"Ceph cluster in {directory}: monitor 127.0.0.1:{cluster.port}, {args.osds} OSDs, pool {args.pool}\n"
        f"[rados] conf_file = {cluster.conf_file}\n"
        f"[rados] pool = {args.pool}\n"
        f"hedwig hub --ledger-store rados --rados-conf {cluster.conf_file} --rados-pool {args.pool}\n"
        f"stop it with: {parser.prog} stop {directory}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
