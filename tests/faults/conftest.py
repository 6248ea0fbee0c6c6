"""The fault suite's fixtures: a network of namespaces of the test's own (deleted at the
end, whatever happened); a test that needs one fails, never skips, where namespaces or
iptables are missing."""

import pytest

from hedwig.testing.faults.network import Network, NetworkMissing


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
