"""The classic group protocol's state machine (hedwig/kafka/groups.py), on task.Clock:
joins and rebalances, the leader's assignment handed out by SyncGroup, heartbeats that
tell members of a rebalance, session timeouts that drop a silent member, leaves."""

from twisted.internet.task import Clock

from hedwig.kafka import groups
from hedwig.kafka.groups import (
    COMPLETING,
    EMPTY,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    INVALID_SESSION_TIMEOUT,
    NON_EMPTY_GROUP,
    NONE,
    PREPARING,
    REBALANCE_IN_PROGRESS,
    STABLE,
    UNKNOWN_MEMBER_ID,
    GroupCoordinator,
)

SESSION_MS = 10_000
REBALANCE_MS = 30_000


def _coordinator(**bounds):
    clock = Clock()
    ids = iter(range(1, 1000))
    return clock, GroupCoordinator(clock, new_member_id=lambda client: f"{client}-{next(ids)}", **bounds)


def _join(coordinator, member_id="", protocols=(("range", b"meta"),), session_ms=SESSION_MS, kind="consumer"):
    answers = []
    coordinator.join(
        "g", member_id, None, "c", "127.0.0.1", session_ms, REBALANCE_MS, kind, list(protocols)
    ).addCallback(answers.append)
    return answers


def _stable_pair(clock, coordinator):
    """Two members through one rebalance: (leader id, follower id)."""
    first = _join(coordinator)
    leader = first[0]["member_id"]
    assert first[0]["generation_id"] == 1 and first[0]["leader"] == leader
    assert coordinator.sync("g", 1, leader, {leader: b"all"}).result["assignment"] == b"all"
    second = _join(coordinator)
    assert second == [] and coordinator.state("g") == PREPARING
    # The leader hears of the rebalance from its heartbeat and joins again.
    assert coordinator.heartbeat("g", 1, leader) == REBALANCE_IN_PROGRESS
    again = _join(coordinator, leader)
    follower = second[0]["member_id"]
    assert again[0]["generation_id"] == second[0]["generation_id"] == 2
    assert [m["member_id"] for m in again[0]["members"]] == [leader, follower]
    assert second[0]["members"] == []  # (only the leader is sent the subscriptions)
    waiting = []
    coordinator.sync("g", 2, follower, {}).addCallback(waiting.append)
    assert waiting == [] and coordinator.state("g") == COMPLETING
    mine = coordinator.sync("g", 2, leader, {leader: b"p0", follower: b"p1"}).result
    assert mine["assignment"] == b"p0" and waiting[0]["assignment"] == b"p1"
    assert coordinator.state("g") == STABLE
    return leader, follower


def test_a_second_member_rebalances_the_group_and_the_leader_assigns():
    clock, coordinator = _coordinator()
    _stable_pair(clock, coordinator)


def test_a_silent_member_is_dropped_at_its_session_timeout_and_the_other_rebalances():
    clock, coordinator = _coordinator()
    leader, follower = _stable_pair(clock, coordinator)
    for _ in range(3):  # the leader heartbeats, the follower is silent
        clock.advance(SESSION_MS / 1000 / 2)
        assert coordinator.heartbeat("g", 2, leader) in (NONE, REBALANCE_IN_PROGRESS)
    assert coordinator.state("g") == PREPARING
    assert coordinator.heartbeat("g", 2, follower) == UNKNOWN_MEMBER_ID
    alone = _join(coordinator, leader)
    assert alone[0]["generation_id"] == 3 and [m["member_id"] for m in alone[0]["members"]] == [leader]


def test_a_heartbeat_holds_the_session_and_a_member_not_back_by_the_rebalance_timeout_is_dropped():
    clock, coordinator = _coordinator()
    leader, follower = _stable_pair(clock, coordinator)
    for _ in range(10):
        clock.advance(SESSION_MS / 1000 / 2)
        assert coordinator.heartbeat("g", 2, leader) == NONE
        assert coordinator.heartbeat("g", 2, follower) == NONE
    third = _join(coordinator)
    assert coordinator.heartbeat("g", 2, leader) == REBALANCE_IN_PROGRESS
    back = _join(coordinator, leader)
    # The follower never joins again: the rebalance ends at its timeout without it.
    clock.advance(REBALANCE_MS / 1000)
    assert back[0]["generation_id"] == third[0]["generation_id"] == 3
    assert {m["member_id"] for m in back[0]["members"]} == {leader, third[0]["member_id"]}
    assert coordinator.heartbeat("g", 3, follower) == UNKNOWN_MEMBER_ID


def test_a_member_leaving_rebalances_and_the_last_one_leaving_empties_the_group():
    clock, coordinator = _coordinator()
    leader, follower = _stable_pair(clock, coordinator)
    assert coordinator.leave("g", [(leader, None)]) == [(leader, None, NONE)]
    assert coordinator.delete("g") == NON_EMPTY_GROUP
    alone = _join(coordinator, follower)
    assert alone[0]["leader"] == follower and alone[0]["generation_id"] == 3
    assert coordinator.leave("g", [(follower, None)]) == [(follower, None, NONE)]
    assert coordinator.state("g") == EMPTY and coordinator.delete("g") == NONE
    assert coordinator.leave("g", [(follower, None)]) == [(follower, None, UNKNOWN_MEMBER_ID)]


def test_commits_are_checked_against_the_generation():
    clock, coordinator = _coordinator()
    assert coordinator.check_commit("g", -1, "") == NONE  # (a consumer that assigns itself)
    leader, _follower = _stable_pair(clock, coordinator)
    assert coordinator.check_commit("g", 2, leader) == NONE
    assert coordinator.check_commit("g", 1, leader) == ILLEGAL_GENERATION
    assert coordinator.check_commit("g", 2, "someone") == UNKNOWN_MEMBER_ID
    assert coordinator.check_commit("g", -1, "") == UNKNOWN_MEMBER_ID  # (the group has members)


def test_refusals():
    _clock, coordinator = _coordinator()
    assert _join(coordinator, session_ms=10)[0]["error_code"] == INVALID_SESSION_TIMEOUT
    assert _join(coordinator, member_id="never-joined")[0]["error_code"] == UNKNOWN_MEMBER_ID
    _join(coordinator)
    assert (
        _join(coordinator, protocols=(("roundrobin", b""),))[0]["error_code"] == INCONSISTENT_GROUP_PROTOCOL
    )
    assert _join(coordinator, kind="connect")[0]["error_code"] == INCONSISTENT_GROUP_PROTOCOL
    assert coordinator.sync("g", 7, "nobody", {}).result["error_code"] == UNKNOWN_MEMBER_ID


def test_the_protocol_most_members_prefer_among_those_all_speak_is_chosen():
    _clock, coordinator = _coordinator()
    first = _join(coordinator, protocols=(("cooperative-sticky", b"a"), ("range", b"b")))
    leader = first[0]["member_id"]
    assert first[0]["protocol_name"] == "cooperative-sticky"
    coordinator.sync("g", 1, leader, {})
    second = _join(coordinator, protocols=(("range", b"c"), ("roundrobin", b"d")))
    _join(coordinator, leader, protocols=(("cooperative-sticky", b"a"), ("range", b"b")))
    assert second[0]["protocol_name"] == "range"


def test_what_peers_make_a_coordinator_hold_is_bounded():
    _clock, coordinator = _coordinator(max_groups=1, max_members=2)
    huge = (("range", b"x" * (groups.MAX_MEMBER_METADATA_BYTES + 1)),)
    assert _join(coordinator, protocols=huge)[0]["error_code"] == groups.INVALID_REQUEST
    _join(coordinator)
    _join(coordinator)
    assert _join(coordinator)[0]["error_code"] == groups.GROUP_MAX_SIZE_REACHED
    answers = []
    coordinator.join(
        "another", "", None, "c", "h", SESSION_MS, REBALANCE_MS, "consumer", [("range", b"")]
    ).addCallback(answers.append)
    assert answers[0]["error_code"] == groups.COORDINATOR_NOT_AVAILABLE
    assert list(coordinator.groups) == ["g"] and len(coordinator.groups["g"].members) == 2


def test_a_static_member_back_under_a_new_id_keeps_its_assignment_without_a_rebalance():
    _clock, coordinator = _coordinator()

    def join_static(instance):
        answers = []
        coordinator.join(
            "g", "", instance, "c", "h", SESSION_MS, REBALANCE_MS, "consumer", [("range", b"m")]
        ).addCallback(answers.append)
        return answers

    first = join_static("host-1")
    leader = first[0]["member_id"]
    coordinator.sync("g", 1, leader, {leader: b"p0"})
    # The process restarts (no LeaveGroup: a static member does not send one) and joins again.
    back = join_static("host-1")[0]
    assert back["error_code"] == NONE and back["generation_id"] == 1 and back["member_id"] != leader
    assert coordinator.state("g") == STABLE
    assert coordinator.sync("g", 1, back["member_id"], {}).result["assignment"] == b"p0"
    assert coordinator.heartbeat("g", 1, leader) == UNKNOWN_MEMBER_ID  # (its earlier self is fenced)
