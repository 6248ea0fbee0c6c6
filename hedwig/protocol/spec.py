"""Every wire op declared once: its codecs, whether it is answered, the statuses it may
answer with, and the permission it needs.

The code of an op is its member of `Op` (ops.py); everything else about it is its
OpSpec here, and whoever needs to know reads it from `OPS`: the hub's handlers decode
with `decode` and answer with `encode_reply` (hedwig/hub/handlers.py), the clients
build requests with `encode` and resend after a lost connection only what is
`idempotent` (hedwig/client/operations.py), replies are decoded by `decode_reply`
(responses.py), the authorizer checks `permission` (hedwig/auth/gate.py), and
tests/protocol/test_op_docs.py checks that docs/protocol.md's table of ops says what
these specs say. Adding an op is its code in `Op`, its OpSpec here, its handler (a
class of hedwig/hub/handlers.py, registered there by op) and its section of the docs.

Codecs: `encode(*fields)` makes a request body and `decode(body)` reads it back, raising
RequestRefused with the status to answer; `encode_reply(*fields)` makes a SUCCESS
payload and `decode_reply(payload)` reads it (a memoryview, not copied). The region
link's ops keep their codecs in hedwig/region/wire.py, beside the entries they carry:
their specs here name no codec.

Statuses: `statuses` are the op's own; any request may also be answered
MALFORMED_REQUEST (a body that does not parse) or UNEXPECTED_CONDITION (a bug), and on a
hub with [auth] on AUTHENTICATION_FAILED (no AUTH yet) and, when it needs a permission,
NOT_AUTHORIZED (`answers` gives them all).
"""

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from hedwig.protocol.admin_requests import (
    decode_compact,
    decode_create_topic,
    decode_delete_topic,
    decode_group_offset,
    decode_list_subscriptions,
    decode_reset_subscription,
    encode_compact,
    encode_create_topic,
    encode_delete_topic,
    encode_group_offset,
    encode_list_subscriptions,
    encode_reset_subscription,
)
from hedwig.protocol.auth_request import decode_auth, decode_auth_reply, encode_auth, encode_auth_reply
from hedwig.protocol.ops import Op
from hedwig.protocol.producer_requests import (
    decode_idempotent_publish,
    decode_producer_id,
    encode_idempotent_publish,
    encode_producer_id,
)
from hedwig.protocol.requests import (
    decode_close_subscription,
    decode_consume,
    decode_describe_topic,
    decode_empty,
    decode_hello,
    decode_hello_reply,
    decode_json,
    decode_publish,
    decode_published,
    decode_read_range,
    decode_read_range_reply,
    decode_subscribe,
    decode_subscribed,
    decode_unsubscribe,
    encode_close_subscription,
    encode_consume,
    encode_describe_topic,
    encode_hello,
    encode_hello_reply,
    encode_json,
    encode_publish,
    encode_published,
    encode_read_range,
    encode_subscribe,
    encode_subscribed,
    encode_unsubscribe,
    read_range_reply_parts,
)
from hedwig.protocol.status import Status
from hedwig.protocol.work_requests import decode_fetch, decode_ranges, encode_fetch, encode_ranges


class Direction(Enum):
    CLIENT_TO_HUB = "client -> hub"
    HUB_TO_CLIENT = "hub -> client"  # pushed with request id 0 (RESPONSE: the request's)
    HUB_TO_HUB = "hub -> hub"  # a region link's


class Reply(Enum):
    """Whether a request is answered."""

    ALWAYS = "always"  # one RESPONSE, whether it succeeds or fails
    ON_FAILURE = "on failure"  # a RESPONSE only when it fails (CONSUME, ACK, NACK)
    NONE = "none"  # never: what the hub pushes, and REGION_INTEREST


class Permission(Enum):
    """What a request needs of its user on a hub with [auth] on (hedwig/auth/gate.py
    checks it; docs/protocol.md, "AUTH", says it in words)."""

    NONE = "none"  # nothing more: its handle was attached under the checks, or it grants nothing
    PUBLISH = "publish"  # publish on the topic; and create, unless it exists
    SUBSCRIBE = "subscribe"  # as PUBLISH, with subscribe (and publish and create on its dead letters')
    READ = "read"  # subscribe on the topic
    CREATE = "create"  # create on the topic
    READ_OR_ADMIN = "read or admin"  # subscribe on the topic it names; admin when it names none
    REGION = "region"  # a region's user
    HUB = "hub"  # [auth] hub_user: another hub of the ZooKeeper region, acting on behalf of a user
    ADMIN = "admin"


# What any request may be answered; and on a hub with [auth] on.
COMMON_STATUSES = frozenset({Status.MALFORMED_REQUEST, Status.UNEXPECTED_CONDITION})
AUTH_STATUSES = frozenset({Status.AUTHENTICATION_FAILED})
# What a request that reads or writes a topic's records may meet: another hub owns it,
# this one cannot reach its metadata or is stopping, storage failed or is full, a
# compare-and-set lost a race.
_STORED = frozenset(
    {
        Status.NOT_RESPONSIBLE_FOR_TOPIC,
        Status.SERVICE_DOWN,
        Status.STORAGE_FULL,
        Status.STORAGE_ERROR,
        Status.BAD_VERSION,
    }
)
# What a request that lists records may meet (a region's metadata out of reach).
_LISTED = frozenset({Status.SERVICE_DOWN, Status.STORAGE_ERROR})
# ... and one that may create the topic: the hub's cap on topics.
_CREATES = _STORED | {Status.TOO_MANY_TOPICS, Status.INVALID_TOPIC}
_EXISTING = _STORED | {Status.NO_SUCH_TOPIC, Status.INVALID_TOPIC}
# (what moving a named subscription's position may answer: RESET_SUBSCRIPTION, GROUP_OFFSET)
_REPOSITIONS = _EXISTING | {
    Status.INVALID_SUBSCRIBER_ID,
    Status.CLIENT_NOT_SUBSCRIBED,
    Status.TOPIC_BUSY,
    Status.SEQ_OUT_OF_RANGE,
}


@dataclass(frozen=True)
class OpSpec:
    op: Op
    direction: Direction
    reply: Reply
    permission: Permission | None = None  # None: not a request (hub -> client frames)
    statuses: frozenset = frozenset()  # the op's own (see COMMON_STATUSES)
    idempotent: bool = False  # sent twice it does what once does: a client may resend it
    encode: Callable | None = None  # request body from its fields
    decode: Callable | None = None  # request body -> its request; RequestRefused to refuse
    encode_reply: Callable | None = None  # SUCCESS payload from its fields
    decode_reply: Callable | None = None  # SUCCESS payload (a memoryview) -> its value

    @property
    def name(self) -> str:
        """The op's name in STATS and the hub's counters: "publish", "read_range", ..."""
        return self.op.name.lower()

    @property
    def answers(self) -> frozenset:
        """Every status a hub may answer it with ([auth] on included)."""
        statuses = self.statuses | COMMON_STATUSES | AUTH_STATUSES
        if self.permission not in (None, Permission.NONE):
            statuses |= {Status.NOT_AUTHORIZED}
        return statuses


def _empty(op: Op) -> tuple[Callable, Callable]:
    """(encode, decode) of a request without a body."""

    def decode(body) -> None:
        decode_empty(body, op.name)

    return (lambda: b""), decode


def _nothing(*_fields) -> bytes:
    """The payload of a SUCCESS that says nothing more."""
    return b""


def _request(op, reply=Reply.ALWAYS, permission=Permission.NONE, statuses=(), **fields) -> OpSpec:
    return OpSpec(op, Direction.CLIENT_TO_HUB, reply, permission, frozenset(statuses), **fields)


def _pushed(op) -> OpSpec:
    return OpSpec(op, Direction.HUB_TO_CLIENT, Reply.NONE)


def _empty_request(op, permission, reply_codecs, statuses=()) -> OpSpec:
    encode, decode = _empty(op)
    encode_reply, decode_reply = reply_codecs
    return _request(
        op,
        permission=permission,
        statuses=statuses,
        idempotent=True,
        encode=encode,
        decode=decode,
        encode_reply=encode_reply,
        decode_reply=decode_reply,
    )


_JSON = (encode_json, decode_json)

_SPECS = (
    _request(
        Op.HELLO,
        # (COULD_NOT_CONNECT: from a hub's HTTP listener, hedwig/observe/resources.py)
        statuses={Status.UNSUPPORTED_VERSION, Status.COULD_NOT_CONNECT},
        idempotent=True,
        encode=encode_hello,
        decode=decode_hello,
        encode_reply=encode_hello_reply,
        decode_reply=decode_hello_reply,
    ),
    _request(
        Op.AUTH,
        # (a hub with [auth] off does not serve it)
        statuses={Status.AUTHENTICATION_FAILED, Status.UNKNOWN_OPERATION},
        idempotent=True,
        encode=encode_auth,
        decode=decode_auth,
        encode_reply=encode_auth_reply,
        decode_reply=decode_auth_reply,
    ),
    _request(
        Op.PUBLISH,
        permission=Permission.PUBLISH,
        statuses=_CREATES | {Status.MESSAGE_TOO_LARGE, Status.KEY_REQUIRED},
        encode=encode_publish,
        decode=decode_publish,
        encode_reply=encode_published,
        decode_reply=decode_published,
    ),
    _request(
        Op.IDEMPOTENT_PUBLISH,
        permission=Permission.PUBLISH,
        statuses=_CREATES
        | {Status.MESSAGE_TOO_LARGE, Status.KEY_REQUIRED}
        | {Status.PRODUCER_SEQUENCE_GAP, Status.DUPLICATE_SEQUENCE},
        idempotent=True,
        encode=encode_idempotent_publish,
        decode=decode_idempotent_publish,
        encode_reply=encode_published,
        decode_reply=decode_published,
    ),
    _empty_request(Op.INIT_PRODUCER, Permission.NONE, (encode_producer_id, decode_producer_id)),
    _request(
        Op.SUBSCRIBE,
        permission=Permission.SUBSCRIBE,
        statuses=_CREATES
        | {
            Status.INVALID_SUBSCRIBER_ID,
            Status.CLIENT_ALREADY_SUBSCRIBED,
            Status.CLIENT_NOT_SUBSCRIBED,
            Status.TOPIC_BUSY,
            Status.TOO_MANY_SUBSCRIPTIONS,
            Status.SEQ_OUT_OF_RANGE,
            Status.WRONG_SUBSCRIPTION_KIND,
            Status.INVALID_MESSAGE_FILTER,
            Status.RESUBSCRIBE_EXCEPTION,
        },
        idempotent=True,
        encode=encode_subscribe,
        decode=decode_subscribe,
        encode_reply=encode_subscribed,
        decode_reply=decode_subscribed,
    ),
    _request(
        Op.CONSUME,
        reply=Reply.ON_FAILURE,
        statuses={Status.CLIENT_NOT_SUBSCRIBED, Status.WRONG_SUBSCRIPTION_KIND},
        idempotent=True,
        encode=encode_consume,
        decode=decode_consume,
    ),
    _request(
        Op.CLOSE_SUBSCRIPTION,
        statuses=_STORED | {Status.CLIENT_NOT_SUBSCRIBED},
        encode=encode_close_subscription,
        decode=decode_close_subscription,
        encode_reply=_nothing,
    ),
    _request(
        Op.UNSUBSCRIBE,
        permission=Permission.READ,
        statuses=_STORED
        | {Status.INVALID_TOPIC, Status.INVALID_SUBSCRIBER_ID}
        | {Status.CLIENT_NOT_SUBSCRIBED, Status.TOPIC_BUSY},
        encode=encode_unsubscribe,
        decode=decode_unsubscribe,
        encode_reply=_nothing,
    ),
    _request(
        Op.READ_RANGE,
        permission=Permission.READ,
        statuses=_EXISTING | {Status.SEQ_OUT_OF_RANGE},
        idempotent=True,
        encode=encode_read_range,
        decode=decode_read_range,
        encode_reply=read_range_reply_parts,
        decode_reply=decode_read_range_reply,
    ),
    _empty_request(Op.LIST_TOPICS, Permission.ADMIN, _JSON, _LISTED),
    _request(
        Op.DESCRIBE_TOPIC,
        permission=Permission.READ,
        statuses=_EXISTING,
        idempotent=True,
        encode=encode_describe_topic,
        decode=decode_describe_topic,
        encode_reply=encode_json,
        decode_reply=decode_json,
    ),
    _empty_request(Op.STATS, Permission.ADMIN, _JSON),
    _empty_request(Op.LIST_HUBS, Permission.ADMIN, _JSON, _LISTED),
    _empty_request(Op.LIST_OWNERS, Permission.ADMIN, _JSON, _LISTED),
    _request(
        Op.CREATE_TOPIC,
        permission=Permission.CREATE,
        statuses=_CREATES | {Status.TOPIC_EXISTS},
        idempotent=True,
        encode=encode_create_topic,
        decode=decode_create_topic,
        encode_reply=encode_json,
        decode_reply=decode_json,
    ),
    _request(
        Op.DELETE_TOPIC,
        permission=Permission.ADMIN,
        statuses=_EXISTING | {Status.TOPIC_BUSY},
        encode=encode_delete_topic,
        decode=decode_delete_topic,
        encode_reply=encode_json,
        decode_reply=decode_json,
    ),
    _request(
        Op.COMPACT,
        permission=Permission.ADMIN,
        statuses=_EXISTING | {Status.NOT_COMPACTED},
        idempotent=True,
        encode=encode_compact,
        decode=decode_compact,
        encode_reply=encode_json,
        decode_reply=decode_json,
    ),
    _request(
        Op.LIST_SUBSCRIPTIONS,
        permission=Permission.READ_OR_ADMIN,
        statuses=_EXISTING,
        idempotent=True,
        encode=encode_list_subscriptions,
        decode=decode_list_subscriptions,
        encode_reply=encode_json,
        decode_reply=decode_json,
    ),
    _request(
        Op.RESET_SUBSCRIPTION,
        permission=Permission.ADMIN,
        statuses=_REPOSITIONS,
        idempotent=True,
        encode=encode_reset_subscription,
        decode=decode_reset_subscription,
        encode_reply=encode_json,
        decode_reply=decode_json,
    ),
    _request(
        Op.GROUP_OFFSET,
        permission=Permission.HUB,
        # (NOT_AUTHORIZED, too, when the user it acts on behalf of may not subscribe to the
        # topic or does not own the subscription: hedwig/kafka/offsets.py)
        statuses=_REPOSITIONS,
        encode=encode_group_offset,
        decode=decode_group_offset,
        encode_reply=encode_json,
        decode_reply=decode_json,
    ),
    _request(
        Op.ACK,
        reply=Reply.ON_FAILURE,
        statuses={Status.CLIENT_NOT_SUBSCRIBED, Status.WRONG_SUBSCRIPTION_KIND},
        idempotent=True,
        encode=encode_ranges,
        decode=lambda body: decode_ranges(body, "ACK"),
    ),
    _request(
        Op.NACK,
        reply=Reply.ON_FAILURE,
        statuses={Status.CLIENT_NOT_SUBSCRIBED, Status.WRONG_SUBSCRIPTION_KIND},
        encode=encode_ranges,
        decode=lambda body: decode_ranges(body, "NACK"),
    ),
    _request(
        Op.FETCH,
        statuses={Status.CLIENT_NOT_SUBSCRIBED, Status.WRONG_SUBSCRIPTION_KIND, Status.FETCH_IN_PROGRESS},
        encode=encode_fetch,
        decode=decode_fetch,
        encode_reply=_nothing,
    ),
    # A region link's (codecs: hedwig/region/wire.py).
    OpSpec(
        Op.REGION_LINK,
        Direction.HUB_TO_HUB,
        Reply.ALWAYS,
        Permission.REGION,
        frozenset({Status.REGION_REFUSED, Status.UNKNOWN_OPERATION}),  # (served with relays only)
    ),
    OpSpec(
        Op.RELAY_PUBLISH,
        Direction.HUB_TO_HUB,
        Reply.ALWAYS,
        Permission.REGION,
        _CREATES | {Status.REGION_REFUSED, Status.MESSAGE_TOO_LARGE, Status.UNKNOWN_OPERATION},
        idempotent=True,
    ),
    OpSpec(
        Op.TOPIC_OPTIONS,
        Direction.HUB_TO_HUB,
        Reply.ALWAYS,  # (child -> parent; the parent's own to a child go with request id 0)
        Permission.REGION,
        _CREATES | {Status.REGION_REFUSED, Status.UNKNOWN_OPERATION},
        idempotent=True,
    ),
    OpSpec(Op.REGION_INTEREST, Direction.HUB_TO_HUB, Reply.NONE),
    _pushed(Op.RESPONSE),
    _pushed(Op.DELIVERY),
    _pushed(Op.REDELIVERY),
    _pushed(Op.SUBSET_DELIVERY),
    _pushed(Op.EVENT),
)

# Op -> its OpSpec: every member of Op has one (tests/protocol/test_op_spec.py).
OPS = {spec.op: spec for spec in _SPECS}
