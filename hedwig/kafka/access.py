"""hedwig's permissions on Kafka requests, for a connection authenticated by SASL (sasl.py).

Each API needs what the native op doing the same needs (hedwig/auth/gate.py):

    Produce                     publish on the topic, and create unless it exists
    Fetch, ListOffsets,         subscribe on the topic
    OffsetCommit, OffsetFetch
    Metadata                    publish or subscribe on a topic named (every topic: the
                                ones the user may use are listed); auto-creation only
                                when the user may create every topic named
    CreateTopics                create on the topic
    DeleteTopics                admin
    groups (Join, Sync, ...)    an authenticated user; a group's offsets are a
                                subscription owned by the user who first committed, and
                                another user's commit or DeleteGroups is refused
                                (GROUP_AUTHORIZATION_FAILED)
    ApiVersions, InitProducerId, DescribeConfigs, CreatePartitions: any user (the last
                                changes nothing; configs are hub-wide)

A topic refused is answered TOPIC_AUTHORIZATION_FAILED (29) in its own rows, the rest of
the request served: what a Kafka broker's ACLs do.
"""

from dataclasses import replace
from functools import partial

from twisted.internet.defer import gatherResults, maybeDeferred, succeed

from hedwig.auth.principal import CREATE, PUBLISH, SUBSCRIBE

TOPIC_AUTHORIZATION_FAILED = 29
_GROUP_APIS = frozenset((8, 9, 10, 11, 12, 13, 14, 15, 16, 42))


def _produce_row(index):
    return {"index": index, "error_code": TOPIC_AUTHORIZATION_FAILED, "base_offset": -1}


def _fetch_row(index):
    return {
        "partition_index": index,
        "error_code": TOPIC_AUTHORIZATION_FAILED,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": b"",
    }


def _list_offsets_row(index):
    return {
        "partition_index": index,
        "error_code": TOPIC_AUTHORIZATION_FAILED,
        "timestamp": -1,
        "offset": -1,
        "old_style_offsets": [],
        "leader_epoch": -1,
    }


def _commit_row(index):
    return {"partition_index": index, "error_code": TOPIC_AUTHORIZATION_FAILED}


# api key -> (request's topics, topic's name, topic's partitions, partition's index,
#             action, answer's topics, answer topic's name, answer topic's partitions, refused row)
_PER_TOPIC = {
    0: ("topic_data", "name", "partition_data", "index", PUBLISH, "responses", "name", "partition_responses",
        _produce_row),
    1: ("topics", "topic", "partitions", "partition", SUBSCRIBE, "responses", "topic", "partitions",
        _fetch_row),
    2: ("topics", "name", "partitions", "partition_index", SUBSCRIBE, "topics", "name", "partitions",
        _list_offsets_row),
    8: ("topics", "name", "partitions", "partition_index", SUBSCRIBE, "topics", "name", "partitions",
        _commit_row),
}  # fmt: skip


def guarded(api_key: int, handler, principal, hub):
    """`handler` (version, request, peer) as `principal` may call it."""
    if api_key in _PER_TOPIC:
        return partial(_per_topic, _PER_TOPIC[api_key], api_key, handler, principal, hub)
    if api_key in _GROUP_APIS:
        return partial(handler, principal=principal)
    if api_key == 3:
        return partial(_metadata, handler, principal)
    if api_key == 19:
        return partial(_create_topics, handler, principal)
    if api_key == 20:
        return partial(_delete_topics, handler, principal)
    return handler


def _may_use(principal, name) -> bool:
    return principal.may(PUBLISH, name) or principal.may(SUBSCRIBE, name)


def _per_topic(spec, api_key, handler, principal, hub, version, request, peer):
    field, name, partitions, index, action, answers, answer_name, answer_partitions, row = spec
    topics = getattr(request, field)
    names = {getattr(t, name) for t in topics}
    allowed = {n for n in names if principal.may(action, n)}
    if api_key == 0:  # (a publish creates its topic: unless the user may create it, it must exist)
        checks = [_exists_or_creatable(hub, principal, n) for n in sorted(allowed)]
        found = gatherResults(checks, consumeErrors=True).addCallback(
            lambda results: {n for n, ok in results if ok}
        )
    else:
        found = succeed(allowed)

    def serve(allowed):
        if allowed == names:
            return maybeDeferred(_call, handler, version, request, peer, api_key, principal)
        kept = tuple(t for t in topics if getattr(t, name) in allowed)
        served = maybeDeferred(
            _call, handler, version, replace(request, **{field: kept}), peer, api_key, principal
        )
        refused = [t for t in topics if getattr(t, name) not in allowed]

        def add_refusals(answer):
            if answer is None:  # (acks=0: no answer)
                return None
            answer[answers] = list(answer[answers]) + [
                {
                    answer_name: getattr(t, name),
                    answer_partitions: [row(getattr(p, index)) for p in getattr(t, partitions)],
                }
                for t in refused
            ]
            return answer

        return served.addCallback(add_refusals)

    return found.addCallback(serve)


def _call(handler, version, request, peer, api_key, principal):
    if api_key in _GROUP_APIS:
        return handler(version, request, peer, principal=principal)
    return handler(version, request, peer)


def _exists_or_creatable(hub, principal, name):
    if principal.may(CREATE, name) or hub.topics.get(name) is not None:
        return succeed((name, True))
    return hub.topics.exists(name).addCallback(lambda exists: (name, bool(exists)))


def _metadata(handler, principal, version, request, peer):
    if request.topics is None:
        return maybeDeferred(handler, version, request, peer).addCallback(
            lambda answer: {
                **answer,
                "topics": [t for t in answer["topics"] if _may_use(principal, t["name"])],
            }
        )
    refused = [t.name for t in request.topics if t.name is None or not _may_use(principal, t.name)]
    kept = tuple(t for t in request.topics if t.name not in refused)
    if version >= 4 and not all(principal.may(CREATE, t.name) for t in kept):
        request = replace(request, allow_auto_topic_creation=False)
    request = replace(request, topics=kept)

    def add_refusals(answer):
        rows = [
            {"error_code": TOPIC_AUTHORIZATION_FAILED, "name": name, "is_internal": False, "partitions": []}
            for name in refused
        ]
        return {**answer, "topics": list(answer["topics"]) + rows}

    return maybeDeferred(handler, version, request, peer).addCallback(add_refusals)


def _create_topics(handler, principal, version, request, peer):
    refused = [t.name for t in request.topics if not principal.may(CREATE, t.name)]
    kept = tuple(t for t in request.topics if t.name not in refused)

    def add_refusals(answer):
        rows = [
            {
                "name": name,
                "error_code": TOPIC_AUTHORIZATION_FAILED,
                "error_message": f"user {principal.name} may not create topic {name}",
                "num_partitions": -1,
                "replication_factor": -1,
                "configs": [],
            }
            for name in refused
        ]
        return {**answer, "topics": list(answer["topics"]) + rows}

    return maybeDeferred(handler, version, replace(request, topics=kept), peer).addCallback(add_refusals)


def _delete_topics(handler, principal, version, request, peer):
    if principal.admin:
        return handler(version, request, peer)
    names = [t.name for t in request.topics] if version >= 6 else list(request.topic_names)
    message = f"user {principal.name} may not delete topics (admins only)"
    rows = [{"name": n, "error_code": TOPIC_AUTHORIZATION_FAILED, "error_message": message} for n in names]
    return {"throttle_time": 0, "responses": rows}
