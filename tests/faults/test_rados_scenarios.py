"""Fault scenarios of a region of two hubs whose ledgers are in a RADOS pool (a Ceph
cluster on a node of its own): the owner cut off from ZooKeeper, from the Ceph cluster,
and paused past its session; the checker finds nothing acknowledged lost or doubled and
nothing out of order."""

import pytest

SESSION_S = 2.0


@pytest.mark.parametrize("fault", ["owner-from-zookeeper", "rados-from-owner", "owner-paused"])
def test_a_region_on_rados_under_a_fault_of_the_owner(rados_trial, fault):
    run = rados_trial()
    run.apply(fault, 3 * SESSION_S)
    report = run.finish()
    assert report.valid, report.violations()
    assert report.acked > 0
