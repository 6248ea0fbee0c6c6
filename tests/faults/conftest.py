"""The fault suite's fixtures: a network of namespaces of the test's own (deleted at the
end, whatever happened); a test that needs one fails, never skips, where namespaces or
iptables are missing."""

import pytest

from hedwig.testing.faults.ensemble import ZooKeeperEnsemble
from hedwig.testing.faults.network import Network, NetworkMissing
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
