"""Regions of several hubs on a real ZooKeeper (tests/conftest.py's `zookeeper`, or one
of a test's own when it stops or restarts ZooKeeper) and real hub processes."""

import pytest

from hedwig.testing.zkregion import RegionHubs


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
