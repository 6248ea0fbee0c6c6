"""The fault suite's fixtures: a network of namespaces of the test's own (deleted at the
end, whatever happened); a test that needs one fails, never skips, where namespaces or
iptables are missing."""

import pytest

from hedwig.testing.ceph import CephMissing
from hedwig.testing.faults.ensemble import ZooKeeperEnsemble
from hedwig.testing.faults.network import Network, NetworkMissing
from hedwig.testing.faults.schedule import Stage
from hedwig.testing.zookeeper import ZooKeeperMissing


@pytest.fixture
def network():
    try:
        made = Network()
    except NetworkMissing as e:
        pytest.fail(str(e), pytrace=False)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def ensemble(network, tmp_path):
    """A ZooKeeper ensemble of three servers (zk1..zk3 of `network`), serving."""
    made = ZooKeeperEnsemble(network, tmp_path / "ensemble")
    try:
        made.start()
    except ZooKeeperMissing as e:
        pytest.fail(str(e), pytrace=False)
    try:
        yield made
    finally:
        made.stop()


@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    """A network with a ZooKeeper ensemble, a clients' node and two hubs' nodes, shared by
    a module's scenarios (each runs a region of its own on it, and leaves it healed)."""
    try:
        made = Stage(tmp_path_factory.mktemp("stage"))
    except (NetworkMissing, ZooKeeperMissing) as e:
        pytest.fail(str(e), pytrace=False)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def trial(stage):
    """trial(**options) -> a Trial on the stage: a region of two hubs under load; its
    hubs stopped and the stage restored at the end."""
    made = []

    def make(**options):
        made.append(stage.trial(**options))
        return made[-1]

    yield make
    for one in made:
        one.stop()
    stage.restore()


@pytest.fixture(scope="module")
def rados_stage(tmp_path_factory):
    """A stage whose regions keep their ledgers in a Ceph cluster on a node of its own."""
    try:
        made = Stage(tmp_path_factory.mktemp("rados-stage"), rados=True)
    except (NetworkMissing, ZooKeeperMissing, CephMissing) as e:
        pytest.fail(str(e), pytrace=False)
    try:
        yield made
    finally:
        made.close()
