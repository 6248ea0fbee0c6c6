"""The Kafka APIs of consumer groups: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit, OffsetFetch, ListGroups, DescribeGroups and DeleteGroups.

Membership and rebalances are GroupCoordinator's (groups.py), committed offsets are
durable subscriptions (offsets.py); this module reads kio's requests of every version
served and answers them as dicts (hedwig.kafka.envelope encodes them). A hub alone
coordinates every group; in a region each group has one coordinator, chosen as Kafka
chooses it (hedwig.kafka.brokers), and the other hubs answer its requests
NOT_COORDINATOR, so its members find it (docs/kafka.md).
"""

from twisted.internet.defer import gatherResults, succeed

from hedwig.auth.principal import SUBSCRIBE
from hedwig.kafka.groups import (
    COORDINATOR_NOT_AVAILABLE,
    GROUP_ID_NOT_FOUND,
    NONE,
    GroupCoordinator,
    join_error,
    sync_error,
)
from hedwig.kafka.offsets import INVALID_GROUP_ID, NO_OFFSET, NOT_COORDINATOR, GroupOffsets, subscriber_id
from hedwig.kafka.served import Served, handlers, versions

_SERVED = {
    8: Served("OffsetCommit", 2, 8, "offset_commit"),
    9: Served("OffsetFetch", 1, 8, "offset_fetch"),
    10: Served("FindCoordinator", 0, 4, "find_coordinator"),
    11: Served("JoinGroup", 0, 9, "join_group"),
    12: Served("Heartbeat", 0, 4, "heartbeat"),
    13: Served("LeaveGroup", 0, 5, "leave_group"),
    14: Served("SyncGroup", 0, 5, "sync_group"),
    15: Served("DescribeGroups", 0, 5, "describe_groups"),
    16: Served("ListGroups", 0, 5, "list_groups"),
    42: Served("DeleteGroups", 0, 2, "delete_groups"),
}
GROUP_API_VERSIONS = versions(_SERVED)  # api key -> (name, lowest version, highest version)

TOPIC_AUTHORIZATION_FAILED = 29
_GROUP_KEY = 0


class KafkaGroupApis:
    """The group APIs over `hub`; `brokers` (hedwig.kafka.brokers) says which hub
    coordinates a group; `error_of` maps the hub's failures to Kafka's errors."""

    def __init__(self, hub, clock, brokers, error_of):
        self.brokers = brokers
        self.coordinator = GroupCoordinator(clock)
        self.offsets = GroupOffsets(hub, error_of)
        self.handlers = handlers(self, _SERVED)

    # -- FindCoordinator --------------------------------------------------------------------

    def find_coordinator(self, version, request, _peer, principal=None):
        """The hub coordinating each group named (brokers.py); transactions' coordinators
        are not served."""

        def coordinator(key):
            def row(error, broker=None, message=None):
                return {
                    "key": key,
                    "error_code": error,
                    "error_message": message,
                    "node_id": broker["node_id"] if broker else -1,
                    "host": broker["host"] if broker else "",
                    "port": broker["port"] if broker else -1,
                }

            if int(request.key_type if version >= 1 else _GROUP_KEY) != _GROUP_KEY:
                return succeed(
                    row(COORDINATOR_NOT_AVAILABLE, message="hedwig coordinates consumer groups only")
                )
            return self.brokers.coordinator(key).addCallback(lambda found: row(*found))

        if version >= 4:
            rows = [coordinator(k) for k in request.coordinator_keys]
            return gatherResults(rows, consumeErrors=True).addCallback(
                lambda rows: {"throttle_time": 0, "coordinators": rows}
            )
        return coordinator(request.key).addCallback(lambda row: {"throttle_time": 0, **row})

    # -- JoinGroup, SyncGroup, Heartbeat, LeaveGroup ----------------------------------------

    def join_group(self, version, request, peer, principal=None):
        if subscriber_id(request.group_id) is None:
            return join_error(INVALID_GROUP_ID, request.member_id)
        if not self.brokers.coordinates(request.group_id):
            return join_error(NOT_COORDINATOR, request.member_id)
        session_ms = _ms(request.session_timeout)
        rebalance_ms = _ms(request.rebalance_timeout) if version >= 1 else session_ms
        return self.coordinator.join(
            request.group_id,
            request.member_id,
            getattr(request, "group_instance_id", None),
            "consumer",
            getattr(peer, "host", ""),
            session_ms,
            rebalance_ms,
            request.protocol_type,
            [(p.name, bytes(p.metadata)) for p in request.protocols],
        )

    def sync_group(self, _version, request, _peer, principal=None):
        if not self.brokers.coordinates(request.group_id):
            return sync_error(NOT_COORDINATOR)
        assignments = {a.member_id: a.assignment for a in request.assignments}
        return self.coordinator.sync(
            request.group_id, int(request.generation_id), request.member_id, assignments
        )

    def heartbeat(self, _version, request, _peer, principal=None):
        if not self.brokers.coordinates(request.group_id):
            return {"throttle_time": 0, "error_code": NOT_COORDINATOR}
        code = self.coordinator.heartbeat(request.group_id, int(request.generation_id), request.member_id)
        return {"throttle_time": 0, "error_code": code}

    def leave_group(self, version, request, _peer, principal=None):
        if not self.brokers.coordinates(request.group_id):
            return {"throttle_time": 0, "error_code": NOT_COORDINATOR, "members": []}
        if version < 3:
            answers = self.coordinator.leave(request.group_id, [(request.member_id, None)])
            return {"throttle_time": 0, "error_code": answers[0][2]}
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
        answers = self.coordinator.leave(request.group_id, leaving)
        return {
            "throttle_time": 0,
            "error_code": NONE,
            "members": [
                {"member_id": member_id, "group_instance_id": instance_id, "error_code": code}
                for member_id, instance_id, code in answers
            ],
        }

    # -- OffsetCommit, OffsetFetch -----------------------------------------------------------

    def offset_commit(self, _version, request, _peer, principal=None):
        group = request.group_id
        refusal = self.coordinator.check_commit(
            group, int(request.generation_id_or_member_epoch), request.member_id
        )
        if subscriber_id(group) is None:
            refusal = INVALID_GROUP_ID
        elif not self.brokers.coordinates(group):
            refusal = NOT_COORDINATOR
        rows = []
        for topic in request.topics:
            for p in topic.partitions:
                if refusal != NONE:
                    code = succeed(refusal)
                else:
                    code = self.offsets.commit(
                        group, topic.name, int(p.partition_index), int(p.committed_offset), principal
                    )
                rows.append(code.addCallback(lambda code, t=topic.name, i=p.partition_index: (t, i, code)))

        def answer(results):
            by_topic = {}
            for name, index, code in results:
                by_topic.setdefault(name, []).append({"partition_index": index, "error_code": code})
            return {"throttle_time": 0, "topics": [{"name": n, "partitions": r} for n, r in by_topic.items()]}

        return gatherResults(rows, consumeErrors=True).addCallback(answer)

    def offset_fetch(self, version, request, _peer, principal=None):
        if version >= 8:
            groups = [self._fetch_group(g.group_id, g.topics, principal) for g in request.groups]
            return gatherResults(groups, consumeErrors=True).addCallback(
                lambda groups: {"throttle_time": 0, "groups": groups}
            )
        return self._fetch_group(request.group_id, request.topics, principal).addCallback(
            lambda group: {"throttle_time": 0, "topics": group["topics"], "error_code": group["error_code"]}
        )

    def _fetch_group(self, group, topics, principal):
        """Deferred[{"group_id", "topics", "error_code"}]; `topics` None: every topic the
        group committed offsets of; a topic `principal` ([auth] on) may not subscribe to:
        TOPIC_AUTHORIZATION_FAILED."""
        if subscriber_id(group) is None:
            return succeed({"group_id": group, "topics": [], "error_code": INVALID_GROUP_ID})
        if not self.brokers.coordinates(group):
            return succeed({"group_id": group, "topics": [], "error_code": NOT_COORDINATOR})
        if topics is None:
            wanted = self.offsets.committed_topics(group).addCallback(lambda names: [(n, [0]) for n in names])
        else:
            wanted = succeed([(t.name, list(t.partition_indexes)) for t in topics])

        def read(name, index):
            if principal is not None and not principal.may(SUBSCRIBE, name):
                return succeed((name, index, NO_OFFSET, TOPIC_AUTHORIZATION_FAILED))
            found = self.offsets.fetch(group, name, index, principal)
            return found.addCallback(lambda found: (name, index, *found))

        def fetch(wanted):
            reads = [read(name, int(index)) for name, indexes in wanted for index in indexes]
            return gatherResults(reads, consumeErrors=True)

        def answer(results):
            by_topic = {}
            for name, index, offset, code in results:
                by_topic.setdefault(name, []).append(
                    {
                        "partition_index": index,
                        "committed_offset": offset,
                        "metadata": "",
                        "error_code": code,
                        "committed_leader_epoch": -1,
                    }
                )
            return {
                "group_id": group,
                "topics": [{"name": n, "partitions": r} for n, r in by_topic.items()],
                "error_code": NONE,
            }

        return wanted.addCallback(fetch).addCallback(answer)

    # -- ListGroups, DescribeGroups, DeleteGroups --------------------------------------------

    def list_groups(self, version, request, _peer, principal=None):
        """The groups with members here, and those with committed offsets (Empty), of
        those this hub coordinates (as each Kafka broker lists its own)."""
        states = {s.lower() for s in getattr(request, "states_filter", ())}
        types = {t.lower() for t in getattr(request, "types_filter", ())}

        def listed(committed):
            names = set(committed) | set(self.coordinator.groups)
            rows = []
            for name in sorted(filter(self.brokers.coordinates, names)):
                state = self.coordinator.state(name)
                group = self.coordinator.groups.get(name)
                if (states and state.lower() not in states) or (types and "classic" not in types):
                    continue
                rows.append(
                    {
                        "group_id": name,
                        "protocol_type": (group.protocol_type if group else None) or "consumer",
                        "group_state": state,
                        "group_type": "classic",
                    }
                )
            return {"throttle_time": 0, "error_code": NONE, "groups": rows}

        return self.offsets.groups().addCallback(listed)

    def describe_groups(self, _version, request, _peer, principal=None):
        rows = []
        for name in request.groups:
            refused = INVALID_GROUP_ID if subscriber_id(name) is None else NONE
            if refused == NONE and not self.brokers.coordinates(name):
                refused = NOT_COORDINATOR
            if refused != NONE:
                rows.append(
                    {
                        "group_id": name,
                        "error_code": refused,
                        "group_state": "Dead",
                        "protocol_type": "",
                        "protocol_data": "",
                        "members": [],
                    }
                )
                continue
            rows.append({"error_code": NONE, **self.coordinator.describe(name)})
        return {"throttle_time": 0, "groups": rows}

    def delete_groups(self, _version, request, _peer, principal=None):
        def delete(name):
            if subscriber_id(name) is None:
                return succeed({"group_id": name, "error_code": INVALID_GROUP_ID})
            if not self.brokers.coordinates(name):
                return succeed({"group_id": name, "error_code": NOT_COORDINATOR})
            code = self.coordinator.delete(name)
            if code != NONE:
                return succeed({"group_id": name, "error_code": code})

            def gone(topics):
                if not topics:
                    return {"group_id": name, "error_code": GROUP_ID_NOT_FOUND}
                return self.offsets.delete(name, topics, principal).addCallbacks(
                    lambda _: {"group_id": name, "error_code": NONE},
                    lambda f: {"group_id": name, "error_code": self.offsets.refusal(f.value.subFailure)},
                )

            return self.offsets.committed_topics(name).addCallback(gone)

        return gatherResults([delete(n) for n in request.groups_names], consumeErrors=True).addCallback(
            lambda results: {"throttle_time": 0, "results": results}
        )


def _ms(duration) -> int:
    return int(duration.total_seconds() * 1000)
