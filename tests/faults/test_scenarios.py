"""Scripted fault scenarios against a region of two hubs on a three-server ZooKeeper
ensemble, mmap ledgers on a shared storage root: each fault held for a fixed time, then
healed; the region recovers (every topic acknowledged again), and the checker finds no
acknowledged message lost, none stored twice, nothing out of order, no seq-id
acknowledged twice, and every subscriber received the logs whole and in order."""

import pytest

from hedwig.testing.polling import wait_until

SESSION_S = 2.0


def _valid(report):
    assert report.valid, report.violations()
    assert report.acked > 0


def test_owner_partitioned_from_zookeeper_only_hands_its_topics_over(trial):
    """The owner still reaches its clients and the storage, not the ensemble: it takes its
    session for lost one session timeout into the partition (kazoo alone would stay
    SUSPENDED for as long as the partition lasts), releases its topics and answers
    SERVICE_DOWN, and its clients go on through the other hub, which took them over."""
    run = trial()
    owner = run.owner()
    run.network.partition([owner], run.ensemble.nodes)
    wait_until(lambda: run.owner() is not owner, "the other hub to own the topic", 60)
    run.recovered("acknowledgements through the other hub during the partition")
    run.network.heal()
    run.recovered("acknowledgements after the heal")
    _valid(run.finish())
    assert run.hub_on(owner).wait_for_log("the session has expired on the servers, and is taken for lost")


def test_zookeeper_minority_with_the_owner_loses_the_topics_to_the_majority(trial):
    """The owner and the ensemble's leader cut off together from the rest: the minority
    server stops serving, the majority elects a leader, the other hub takes the topics
    over; the old owner acknowledges nothing it cannot keep."""
    run = trial()
    stall = run.apply("zookeeper-split", 3 * SESSION_S)
    _valid(run.finish())
    assert stall["fault"] == "zookeeper-split"


def test_the_owners_clients_partitioned_from_it(trial):
    """The clients cannot reach the owner (which keeps its session): its topics are
    unavailable to them meanwhile, and nothing is lost or doubled by the retries."""
    run = trial()
    run.apply("clients-from-owner", 2 * SESSION_S)
    _valid(run.finish())


def test_the_zookeeper_leader_killed(trial):
    run = trial()
    run.apply("leader-killed", 2 * SESSION_S)
    _valid(run.finish())


def test_a_lost_zookeeper_quorum_stops_the_region_and_loses_nothing(trial):
    """Two servers of three killed for three session timeouts: nothing can be claimed or
    acknowledged meanwhile (the hubs take their sessions for lost and release their
    topics); once the quorum is back, the hubs register again and serve on."""
    run = trial()
    run.apply("quorum-lost", 3 * SESSION_S)
    _valid(run.finish())
    assert any(hub.wait_for_log("taken for lost") for hub in run.region.hubs)


def test_a_flapping_link_between_the_owner_and_zookeeper(trial):
    run = trial()
    run.apply("flapping", 4 * SESSION_S)
    _valid(run.finish())


def test_an_owner_paused_past_its_session_loses_its_topics_while_paused(trial):
    """SIGSTOP of the owner: its connections stay open, so each publish to it times out;
    the idempotent client sends it again to the next hub of its list, which takes the
    topic over once the paused owner's session expired: publishing goes on during the
    pause (it stalled for the whole pause before), and the woken owner acknowledges
    nothing more."""
    run = trial()
    owner = run.owner()
    hub = run.hub_on(owner)
    hub.pause()
    try:
        run.recovered("acknowledgements while the owner is paused")
    finally:
        hub.resume()
    run.recovered("acknowledgements after the owner woke")
    _valid(run.finish())


@pytest.mark.parametrize("fault", ["owner-isolated", "owner-paused", "lossy-owner"])
def test_more_faults_of_the_owner(trial, fault):
    run = trial()
    run.apply(fault, 2 * SESSION_S)
    _valid(run.finish())
