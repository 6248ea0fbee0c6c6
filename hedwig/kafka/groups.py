"""Kafka's classic consumer-group protocol on a hub: members, generations and rebalances.

A group is the set of consumers that joined it; the coordinator (this hub, for every
group its clients name: docs/kafka.md) runs Kafka's state machine over it:

    Empty -> PreparingRebalance -> CompletingRebalance -> Stable -> PreparingRebalance ...

A join, a leave or a member's session running out starts a rebalance: every member must
join again (a member learns of it from its heartbeat's REBALANCE_IN_PROGRESS) within the
rebalance timeout, those that do not are dropped; then the generation goes up, the leader
is answered with every member's subscription metadata, the others with nothing, and the
leader's SyncGroup hands each member the assignment the leader computed. The assignors
(range, roundrobin, cooperative-sticky) are the clients': the coordinator carries their
bytes. Nothing here is written down: a group's lasting state is its committed offsets
(hedwig.kafka.offsets), and after a restart its members join again, as they do when a
Kafka coordinator moves.

Time comes in as `clock` (IReactorTime): session and rebalance timers are callLater.
"""

import uuid

from twisted.internet.defer import Deferred, succeed

# Kafka's error codes a coordinator answers.
NONE = 0
COORDINATOR_NOT_AVAILABLE = 15
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82

EMPTY = "Empty"
PREPARING = "PreparingRebalance"
COMPLETING = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"

# Kafka's group.min/max.session.timeout.ms, the lower bound made small enough for tests
# and fast failover (Kafka's default is 6 s).
MIN_SESSION_TIMEOUT_MS = 1_000
MAX_SESSION_TIMEOUT_MS = 1_800_000
# Kafka's group.max.size is unbounded; a hub bounds what one group can hold, how many
# groups have members at once, and the subscription metadata one member brings (a
# consumer's is its topic list and a few bytes), so that what peers make it hold is bounded.
MAX_MEMBERS = 1_000
MAX_GROUPS = 10_000
MAX_MEMBER_METADATA_BYTES = 1 << 20
INVALID_REQUEST = 42


class GroupError(Exception):
    """A request the group refuses: `code` is the Kafka error to answer."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class Member:
    __slots__ = (
        "assignment",
        "client_host",
        "client_id",
        "instance_id",
        "joining",
        "member_id",
        "protocol_type",
        "protocols",
        "rebalance_timeout_s",
        "session_timeout_s",
        "syncing",
        "timer",
    )

    def __init__(
        self, member_id, instance_id, client_id, client_host, session_s, rebalance_s, kind, protocols
    ):
        self.member_id = member_id
        self.instance_id = instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.session_timeout_s = session_s
        self.rebalance_timeout_s = rebalance_s
        self.protocol_type = kind
        self.protocols = protocols  # [(name, metadata bytes)] in the member's order of preference
        self.assignment = b""
        self.joining = None  # the Deferred of its JoinGroup waiting for the rebalance
        self.syncing = None  # the Deferred of its SyncGroup waiting for the leader's
        self.timer = None  # its session timeout

    def metadata(self, protocol: str) -> bytes:
        return next(data for name, data in self.protocols if name == protocol)


class Group:
    __slots__ = ("generation", "group_id", "leader", "members", "protocol", "protocol_type", "state", "timer")

    def __init__(self, group_id: str):
        self.group_id = group_id
        self.state = EMPTY
        self.generation = 0
        self.protocol_type = None
        self.protocol = None
        self.leader = None
        self.members = {}  # member id -> Member, in order of joining
        self.timer = None  # the rebalance's timeout

    def has(self, member_id: str) -> bool:
        return member_id in self.members


class GroupCoordinator:
    """Every live group of this hub. Each method answers as Kafka's GroupCoordinator
    does: a dict for the response, or a Deferred of one for a join or a sync that waits
    for the rest of the group."""

    def __init__(
        self, clock, new_member_id=None, max_groups: int = MAX_GROUPS, max_members: int = MAX_MEMBERS
    ):
        self.clock = clock
        self.max_groups = max_groups
        self.max_members = max_members
        self._new_member_id = new_member_id or (lambda client_id: f"{client_id}-{uuid.uuid4()}")
        self.groups = {}  # group id -> Group, while it has members

    # -- JoinGroup ----------------------------------------------------------------------

    def join(
        self,
        group_id: str,
        member_id: str,
        instance_id,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list,
    ) -> Deferred:
        """Deferred[dict]: the JoinGroup answer, once the rebalance this join is part of
        completes (or at once, for an error)."""
        if not MIN_SESSION_TIMEOUT_MS <= session_timeout_ms <= MAX_SESSION_TIMEOUT_MS:
            return succeed(join_error(INVALID_SESSION_TIMEOUT, member_id))
        if not protocols or not protocol_type:
            return succeed(join_error(INCONSISTENT_GROUP_PROTOCOL, member_id))
        if sum(len(name) + len(data) for name, data in protocols) > MAX_MEMBER_METADATA_BYTES:
            return succeed(join_error(INVALID_REQUEST, member_id))
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return succeed(join_error(UNKNOWN_MEMBER_ID, member_id))
            if len(self.groups) >= self.max_groups:
                return succeed(join_error(COORDINATOR_NOT_AVAILABLE, member_id))
            group = self.groups[group_id] = Group(group_id)
        if group.members and (
            protocol_type != group.protocol_type or not self._candidates(group, protocols, leaving=member_id)
        ):
            return succeed(join_error(INCONSISTENT_GROUP_PROTOCOL, member_id))
        rebalance_s = (rebalance_timeout_ms if rebalance_timeout_ms > 0 else session_timeout_ms) / 1000
        if not member_id:
            old = None
            if instance_id is not None:
                old = next((m for m in group.members.values() if m.instance_id == instance_id), None)
            if old is not None:
                if (
                    group.state == STABLE
                    and old.protocols == protocols
                    and protocol_type == group.protocol_type
                ):
                    return succeed(
                        self._static_rejoin(group, old, client_id, client_host, session_timeout_ms)
                    )
                self._remove(group, old, FENCED_INSTANCE_ID)  # (then it joins as new: a rebalance)
            if len(group.members) >= self.max_members:
                return succeed(join_error(GROUP_MAX_SIZE_REACHED, ""))
            member = Member(
                self._new_member_id(client_id or "member"),
                instance_id,
                client_id,
                client_host,
                session_timeout_ms / 1000,
                rebalance_s,
                protocol_type,
                protocols,
            )
            group.members[member.member_id] = member
            if group.protocol_type is None:
                group.protocol_type = protocol_type
            return self._await_join(group, member, rebalance=True)
        member = group.members.get(member_id)
        if member is None:
            return succeed(join_error(UNKNOWN_MEMBER_ID, member_id))
        changed = protocols != member.protocols
        member.protocols = protocols
        member.session_timeout_s = session_timeout_ms / 1000
        member.rebalance_timeout_s = rebalance_s
        if group.state in (STABLE, COMPLETING) and not changed and member_id != group.leader:
            # (a follower joining again with nothing new: answered with the generation as it is)
            self._heard_from(group, member)
            return succeed(self._join_answer(group, member))
        return self._await_join(group, member, rebalance=group.state != PREPARING)

    def _static_rejoin(self, group, old, client_id, client_host, session_timeout_ms) -> dict:
        """A static member (group.instance.id) back under a new member id, its
        subscription unchanged, in a stable group: it takes its earlier self's place and
        assignment without a rebalance (KIP-345); its earlier self is fenced."""
        self._stop_timer(old)
        for waiting, answer in (
            (old.joining, join_error(FENCED_INSTANCE_ID, old.member_id)),
            (old.syncing, _sync_answer(FENCED_INSTANCE_ID)),
        ):
            if waiting is not None:
                waiting.callback(answer)
        old.joining = old.syncing = None
        member_id = self._new_member_id(client_id or "member")
        group.members = {(member_id if mid == old.member_id else mid): m for mid, m in group.members.items()}
        old.member_id = member_id
        old.client_id, old.client_host = client_id, client_host
        old.session_timeout_s = session_timeout_ms / 1000
        if group.leader not in group.members:
            group.leader = member_id
        self._heard_from(group, old)
        answer = self._join_answer(group, old)
        answer["skip_assignment"] = True  # (a leader's: the assignment stands)
        return answer

    def _await_join(self, group, member, rebalance: bool) -> Deferred:
        if member.joining is not None:  # (a join sent again: the earlier one is answered by this one)
            member.joining.callback(join_error(REBALANCE_IN_PROGRESS, member.member_id))
        member.joining = Deferred()
        self._stop_timer(member)
        waiting = member.joining
        if rebalance:
            self._prepare(group)
        self._check_joined(group)
        return waiting

    def _prepare(self, group) -> None:
        """Start a rebalance: every member must join again within the rebalance timeout."""
        if group.state == COMPLETING:
            for member in group.members.values():
                if member.syncing is not None:
                    syncing, member.syncing = member.syncing, None
                    syncing.callback(_sync_answer(REBALANCE_IN_PROGRESS))
        if group.state == PREPARING:
            return
        group.state = PREPARING
        timeout = max((m.rebalance_timeout_s for m in group.members.values()), default=0)
        group.timer = self.clock.callLater(timeout, self._rebalance_timed_out, group)

    def _rebalance_timed_out(self, group) -> None:
        group.timer = None
        for member in [m for m in group.members.values() if m.joining is None]:
            self._remove(group, member, None, rebalance=False)
        self._complete_join(group)

    def _check_joined(self, group) -> None:
        if group.state == PREPARING and all(m.joining is not None for m in group.members.values()):
            self._complete_join(group)

    def _complete_join(self, group) -> None:
        if group.timer is not None and group.timer.active():
            group.timer.cancel()
        group.timer = None
        group.generation += 1
        if not group.members:
            self._empty(group)
            return
        group.protocol = self._choose_protocol(group)
        if group.leader not in group.members:
            group.leader = next(iter(group.members))
        group.state = COMPLETING
        for member in group.members.values():
            member.assignment = b""
            joining, member.joining = member.joining, None
            self._heard_from(group, member)
            joining.callback(self._join_answer(group, member))

    def _join_answer(self, group, member) -> dict:
        leader = member.member_id == group.leader
        return {
            "throttle_time": 0,
            "error_code": NONE,
            "generation_id": group.generation,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol,
            "leader": group.leader,
            "member_id": member.member_id,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.instance_id,
                    "metadata": m.metadata(group.protocol),
                }
                for m in group.members.values()
            ]
            if leader
            else [],
        }

    def _candidates(self, group, protocols, leaving=None) -> set:
        """The protocols every member (but `leaving`, whose own are `protocols`) speaks."""
        names = {name for name, _ in protocols}
        for member in group.members.values():
            if member.member_id != leaving:
                names &= {name for name, _ in member.protocols}
        return names

    def _choose_protocol(self, group) -> str:
        """As Kafka: of the protocols every member speaks, the one most members prefer."""
        members = list(group.members.values())
        candidates = self._candidates(group, members[0].protocols)
        votes = {}
        for member in members:
            choice = next(name for name, _ in member.protocols if name in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: (votes[name], -_order(members[0].protocols, name)))

    # -- SyncGroup ----------------------------------------------------------------------

    def sync(self, group_id: str, generation: int, member_id: str, assignments: dict) -> Deferred:
        """Deferred[dict]: the member's assignment, once the leader has sent them."""
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is None:
            return succeed(_sync_answer(UNKNOWN_MEMBER_ID))
        if generation != group.generation:
            return succeed(_sync_answer(ILLEGAL_GENERATION))
        if group.state == PREPARING:
            return succeed(_sync_answer(REBALANCE_IN_PROGRESS))
        self._heard_from(group, member)
        if group.state == STABLE:
            return succeed(_sync_answer(NONE, member.assignment, group))
        if member.syncing is not None:
            member.syncing.callback(_sync_answer(REBALANCE_IN_PROGRESS))
        member.syncing = Deferred()
        waiting = member.syncing
        if member_id == group.leader:
            for m in group.members.values():
                m.assignment = bytes(assignments.get(m.member_id, b""))
            group.state = STABLE
            for m in group.members.values():
                if m.syncing is not None:
                    syncing, m.syncing = m.syncing, None
                    syncing.callback(_sync_answer(NONE, m.assignment, group))
        return waiting

    # -- Heartbeat, LeaveGroup ----------------------------------------------------------

    def heartbeat(self, group_id: str, generation: int, member_id: str) -> int:
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is None:
            return UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return ILLEGAL_GENERATION
        self._heard_from(group, member)
        return REBALANCE_IN_PROGRESS if group.state == PREPARING else NONE

    def leave(self, group_id: str, members: list) -> list:
        """[(member id, instance id, error)] for each (member id, instance id) leaving."""
        group = self.groups.get(group_id)
        answers = []
        for member_id, instance_id in members:
            member = None
            if group is not None:
                member = group.members.get(member_id) if member_id else None
                if member is None and instance_id is not None:
                    member = next((m for m in group.members.values() if m.instance_id == instance_id), None)
            if member is None:
                answers.append((member_id, instance_id, UNKNOWN_MEMBER_ID))
                continue
            self._remove(group, member, UNKNOWN_MEMBER_ID)
            answers.append((member.member_id, member.instance_id, NONE))
        return answers

    def _heard_from(self, group, member) -> None:
        """The member is alive: its session timeout starts again."""
        self._stop_timer(member)
        member.timer = self.clock.callLater(member.session_timeout_s, self._session_expired, group, member)

    def _stop_timer(self, member) -> None:
        if member.timer is not None and member.timer.active():
            member.timer.cancel()
        member.timer = None

    def _session_expired(self, group, member) -> None:
        member.timer = None
        if member.joining is not None:  # (waiting on the others is not being silent)
            return
        self._remove(group, member, UNKNOWN_MEMBER_ID)

    def _remove(self, group, member, code, rebalance: bool = True) -> None:
        """`member` is out of `group`; what it waits for is answered with `code`."""
        self._stop_timer(member)
        group.members.pop(member.member_id, None)
        for waiting, answer in (
            (member.joining, join_error(code, member.member_id)),
            (member.syncing, _sync_answer(code)),
        ):
            if waiting is not None:
                waiting.callback(answer)
        member.joining = member.syncing = None
        if not rebalance:
            return
        if group.state in (STABLE, COMPLETING):
            self._prepare(group)
        if group.state == PREPARING:
            self._check_joined(group)
        if not group.members and group.state != PREPARING:
            self._empty(group)

    def _empty(self, group) -> None:
        """No member left: forgotten here (its offsets stay, in its subscriptions)."""
        group.state = EMPTY
        group.protocol = group.protocol_type = group.leader = None
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]

    # -- OffsetCommit's check, ListGroups, DescribeGroups, DeleteGroups -------------------

    def check_commit(self, group_id: str, generation: int, member_id: str) -> int:
        """May this commit be stored? A commit without a generation (a consumer that
        assigns its partitions itself) only to a group without members, as Kafka."""
        group = self.groups.get(group_id)
        if generation < 0 and not member_id:
            return NONE if group is None or not group.members else UNKNOWN_MEMBER_ID
        member = None if group is None else group.members.get(member_id)
        if member is None:
            return UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return ILLEGAL_GENERATION
        if group.state == COMPLETING:
            return REBALANCE_IN_PROGRESS
        self._heard_from(group, member)
        return NONE

    def state(self, group_id: str) -> str:
        group = self.groups.get(group_id)
        return EMPTY if group is None else group.state

    def describe(self, group_id: str) -> dict:
        group = self.groups.get(group_id)
        if group is None:
            return {
                "group_id": group_id,
                "group_state": EMPTY,
                "protocol_type": "",
                "protocol_data": "",
                "members": [],
            }
        stable = group.state == STABLE
        return {
            "group_id": group_id,
            "group_state": group.state,
            "protocol_type": group.protocol_type or "",
            "protocol_data": (group.protocol or "") if group.state in (STABLE, COMPLETING) else "",
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.instance_id,
                    "client_id": m.client_id or "",
                    "client_host": m.client_host or "",
                    "member_metadata": m.metadata(group.protocol) if group.protocol else b"",
                    "member_assignment": m.assignment if stable else b"",
                }
                for m in group.members.values()
            ],
        }

    def delete(self, group_id: str) -> int:
        """NON_EMPTY_GROUP while it has members (Kafka's rule); NONE otherwise (its
        offsets are the caller's to delete)."""
        group = self.groups.get(group_id)
        return NON_EMPTY_GROUP if group is not None and group.members else NONE


def _order(protocols, name) -> int:
    return next(i for i, (n, _) in enumerate(protocols) if n == name)


def join_error(code: int, member_id: str) -> dict:
    return {
        "throttle_time": 0,
        "error_code": code,
        "generation_id": -1,
        "protocol_name": None,
        "leader": "",
        "member_id": member_id or "",
        "members": [],
    }


def sync_error(code: int) -> dict:
    return _sync_answer(code)


def _sync_answer(code: int, assignment: bytes = b"", group=None) -> dict:
    return {
        "throttle_time": 0,
        "error_code": code,
        "protocol_type": None if group is None else group.protocol_type,
        "protocol_name": None if group is None else group.protocol,
        "assignment": assignment,
    }
