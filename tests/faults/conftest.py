"""The fault suite's fixtures: a network of namespaces of the test's own (deleted at the
end, whatever happened); a test that needs one fails, never skips, where namespaces,
iptables, ZooKeeper or Ceph are missing."""

import pytest

from hedwig.testing.ceph import CephMissing
from hedwig.testing.faults.ensemble import ZooKeeperEnsemble
from hedwig.testing.faults.network import Network, NetworkMissing
from hedwig.testing.faults.schedule import Stage
from hedwig.testing.zookeeper import ZooKeeperMissing


def _made(make):
    """make(), or the test failed with what is missing here (never skipped)."""
    try:
        return make()
    except (NetworkMissing, ZooKeeperMissing, CephMissing) as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture
def network():
    made = _made(Network)
    yield made
    made.close()


@pytest.fixture
def ensemble(network, tmp_path):
    """A ZooKeeper ensemble of three servers (zk1..zk3 of `network`), serving."""
    made = _made(lambda: ZooKeeperEnsemble(network, tmp_path / "ensemble").start())
    yield made
    made.stop()


@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    """A network with a ZooKeeper ensemble, a clients' node and two hubs' nodes, shared by
    a module's scenarios (each runs a region of its own on it, and leaves it healed)."""
    made = _made(lambda: Stage(tmp_path_factory.mktemp("stage")))
    yield made
    made.close()


@pytest.fixture(scope="module")
def rados_stage(tmp_path_factory):
    """A stage whose regions keep their ledgers in a Ceph cluster on a node of its own."""
    made = _made(lambda: Stage(tmp_path_factory.mktemp("rados-stage"), rados=True))
    yield made
    made.close()


def _trials(stage):
    """A maker of Trials on `stage`, and the list of those made."""
    made = []

    def make(**options):
        made.append(stage.trial(**options))
        return made[-1]

    return make, made


@pytest.fixture
def trial(stage):
    """trial(**options) -> a Trial on the stage: a region of two hubs under load; its
    hubs stopped and the stage restored at the end."""
    make, made = _trials(stage)
    yield make
    for one in made:
        one.stop()
    stage.restore()


@pytest.fixture
def rados_trial(rados_stage):
    """As `trial`, on the stage whose regions keep their ledgers in RADOS."""
    make, made = _trials(rados_stage)
    yield make
    for one in made:
        one.stop()
    rados_stage.restore()
