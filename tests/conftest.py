"""Shared test settings, and the hub-process fixtures of every area that runs real hubs."""

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

from hedwig.testing.ceph import CephCluster, CephMissing
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.zkregion import RegionHubs
from hedwig.testing.zookeeper import ZooKeeperMissing, ZooKeeperServer

# Hypothesis keeps what it learns (constants, examples) in a directory of its own: a
# temporary one, not .hypothesis in the repository.
_hypothesis_home = tempfile.mkdtemp(prefix="hedwig-hypothesis-")
set_hypothesis_home_dir(_hypothesis_home)
# ... in the processes the tests start too (hubs, the CLI): kio, the Kafka port's schemas,
# imports hypothesis when it is installed, which then keeps its Unicode tables under the
# process's working directory.
os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = _hypothesis_home
atexit.register(shutil.rmtree, _hypothesis_home, True)

# CI machines have 2 cores shared with Spark and hub processes: judge properties, not speed.
# No example database: it would be a .hypothesis directory in the repository (a failing
# example is printed as a blob to reproduce it instead).
settings.register_profile(
    "hedwig",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
    database=None,
)
settings.load_profile("hedwig")


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """One hub process shared by a module's tests (each test uses topics of its own)."""
    with HubProcess(tmp_path_factory.mktemp("hub")) as process:
        yield process


@pytest.fixture
def own_hub(tmp_path):
    """A hub process of the test's own, not started yet: to start, kill and restart."""
    process = HubProcess(tmp_path / "data")
    yield process
    process.stop()


@pytest.fixture
def hubs():
    """A list the test appends the hubs it starts to (hub processes, region hubs: anything
    with stop()); each is stopped at the end."""
    started = []
    yield started
    for hub in started:
        hub.stop()


def start_zookeeper(directory, **options) -> ZooKeeperServer:
    """A ZooKeeper server under `directory`, started; a test that needs one fails (never
    skips) with what to install when ZooKeeper is missing here."""
    try:
        return ZooKeeperServer(directory, **options).start()
    except ZooKeeperMissing as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory):
    """One ZooKeeper server for the session's tests (each uses a root of its own): a tick of
    100 ms, so sessions may time out in 0.2-10 s. Tests that stop or restart ZooKeeper
    start one of their own (start_zookeeper)."""
    server = start_zookeeper(tmp_path_factory.mktemp("zookeeper"))
    yield server
    server.stop()


def start_ceph(directory, **options) -> CephCluster:
    """A throw-away Ceph cluster under `directory` (hedwig.testing.ceph), started; a test
    that needs one fails (never skips) with what to install when Ceph is missing here."""
    try:
        return CephCluster(directory, **options).start()
    except CephMissing as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def ceph(tmp_path_factory):
    """One Ceph cluster for the session's tests (1 monitor, 3 OSDs, a pool of size 3 and
    min_size 2; each test uses a namespace of its own). Tests that kill or pause OSDs
    restart or resume them before they end, or start a cluster of their own."""
    cluster = start_ceph(tmp_path_factory.mktemp("ceph") / "cluster")
    yield cluster
    cluster.stop()


@pytest.fixture
def region(zookeeper, tmp_path):
    """region(count=..., **options) -> RegionHubs with `count` hubs started; all stopped
    at the end."""
    made = []

    def make(count: int = 0, zk=None, **options):
        hubs = RegionHubs(zk or zookeeper, tmp_path / f"region{len(made)}", **options)
        made.append(hubs)
        return hubs.start(count)

    yield make
    for hubs in made:
        for hub in hubs.hubs:
            hub.resume()
        hubs.stop()


# -- no test leaves files in the repository ---------------------------------------------------

_ROOT = Path(__file__).resolve().parents[1]


def _untracked_files() -> set:
    """Every file in the work tree that git does not track (ignored ones included)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--others", "--exclude-standard", "--ignored", "--directory"],
        cwd=_ROOT,
        capture_output=True,
        check=False,
    )
    untracked = subprocess.run(
        ["git", "ls-files", "-z", "--others", "--exclude-standard", "--directory"],
        cwd=_ROOT,
        capture_output=True,
        check=False,
    )
    names = set(listed.stdout.split(b"\0")) | set(untracked.stdout.split(b"\0"))
    return {name.decode("utf-8", "replace") for name in names if name and b"__pycache__" not in name}


def pytest_sessionstart(session):
    session.config._hedwig_files_before = _untracked_files()


def pytest_sessionfinish(session, exitstatus):
    """Fail the run if the tests left files in the repository (they belong in tmp_path)."""
    before = getattr(session.config, "_hedwig_files_before", None)
    if before is None:
        return
    # Not the tests' doing: pytest's own cache, Twisted's plugin cache.
    tools = {".pytest_cache/", "twisted/plugins/dropin.cache"}
    left = sorted(_untracked_files() - before - tools)
    if left:
        session.config.get_terminal_writer().line(
            f"the tests left files in the repository: {', '.join(left)}", red=True
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
