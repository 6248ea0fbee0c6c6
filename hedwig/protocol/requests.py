"""Request and response bodies: what follows the frame header (framing.py) for each op.

Every body is a fixed struct layout plus length-prefixed strings, so the hub decodes a
request with one or two `struct.unpack_from` calls and never a Python loop per message.
docs/protocol.md gives the same layouts byte by byte. All integers are big-endian.

Strings: `str8` is u8 length + utf-8 bytes (topics, subscriber ids, names); `str16` is
u16 length + utf-8 bytes (status messages). Message sets travel as the publisher
encoded them (messageset.py) and are never re-encoded by the hub.

Every request frame gets at most one RESPONSE frame carrying the same request id
(CONSUME is answered only when it fails). A RESPONSE body is:

    u8  op        the op of the request it answers
    u16 status    hedwig.protocol.Status
    str16 message empty on success; on failure it says why (NOT_RESPONSIBLE_FOR_TOPIC: the
                  owner's "host:port")
    payload       op-specific, present only when status is SUCCESS

Decoders raise RequestRefused carrying the Status to send back: MALFORMED_REQUEST for a body
that does not parse, INVALID_TOPIC / INVALID_SUBSCRIBER_ID for names outside the rules.
Encoders do not check names: that is the hub's word, so a client sees the hub's status.
"""

import json
from typing import NamedTuple

from hedwig.protocol.layouts import (
    CONSUME,
    HELLO,
    HELLO_REPLY,
    MODE_NAMES,
    MODES_BY_NAME,
    RANGE_ENTRY,
    RANGE_HEAD,
    READ_RANGE_TAIL,
    SUBSCRIBE_FLAG_FILTER,
    SUBSCRIBE_FLAG_FORCE_ATTACH,
    SUBSCRIBE_FLAG_NO_DELIVERY,
    SUBSCRIBE_FLAG_OPTIONS,
    SUBSCRIBE_FLAG_REPLACE_FILTER,
    SUBSCRIBE_FLAG_SUBSETS,
    SUBSCRIBE_FLAG_WINDOW,
    SUBSCRIBE_FLAGS,
    SUBSCRIBE_TAIL,
    SUBSCRIBED,
    TWO_U64,
    U32,
    RequestRefused,
    StartKind,
    SubscribeMode,
    expect_end,
    read_str8,
    read_str16,
    read_subscriber,
    read_topic,
    str8,
    str16,
    unpack_field,
)
from hedwig.protocol.ops import HUB_FEATURES, PROTOCOL_VERSION
from hedwig.protocol.status import Status
from hedwig.protocol.work_requests import (
    SubscribeOptions,
    check_filter,
    decode_options,
    encode_options,
    per_message,
)

# -- HELLO ------------------------------------------------------------------------------------


class Hello(NamedTuple):
    version: int
    client_name: str


class HelloReply(NamedTuple):
    version: int
    max_frame_bytes: int
    max_message_bytes: int
    region: str
    hub_name: str  # host:port as the hub knows itself
    features: int = 0  # ops.HUB_FEATURE_* bits (none from a hub older than them)


def encode_hello(client_name: str = "", version: int = PROTOCOL_VERSION) -> bytes:
    return HELLO.pack(version) + str8(client_name)


def decode_hello(body) -> Hello:
    (version,) = unpack_field(HELLO, body, 0, "HELLO")
    raw, offset = read_str8(body, HELLO.size, "client name")
    expect_end(body, offset, "HELLO")
    return Hello(version, raw.decode("utf-8", "replace"))


def encode_hello_reply(
    region: str,
    hub_name: str,
    max_frame_bytes: int,
    max_message_bytes: int,
    version: int = PROTOCOL_VERSION,
    features: int = HUB_FEATURES,
) -> bytes:
    return (
        HELLO_REPLY.pack(version, max_frame_bytes, max_message_bytes)
        + str8(region)
        + str8(hub_name)
        + U32.pack(features)
    )


def decode_hello_reply(payload) -> HelloReply:
    """The reply; what follows its fields is ignored (a later hub may say more), and a
    reply ending at hub_name (an older hub's) offers no features."""
    version, max_frame, max_message = unpack_field(HELLO_REPLY, payload, 0, "HELLO reply")
    region, offset = read_str8(payload, HELLO_REPLY.size, "region")
    hub_name, offset = read_str8(payload, offset, "hub name")
    features = U32.unpack_from(payload, offset)[0] if len(payload) >= offset + U32.size else 0
    return HelloReply(
        version, max_frame, max_message, region.decode("utf-8"), hub_name.decode("utf-8"), features
    )


# -- PUBLISH ----------------------------------------------------------------------------------


class Publish(NamedTuple):
    topic: str
    message_set: bytes  # exactly as the publisher encoded it


class Published(NamedTuple):
    first_seq: int
    last_seq: int


def publish_prefix(topic: str) -> bytes:
    """The PUBLISH body before the message set: send it and the message set with
    writeSequence (frame_header(Op.PUBLISH, id, len(prefix) + len(message_set)) first)."""
    return str8(topic)


def encode_publish(topic: str, message_set: bytes) -> bytes:
    return str8(topic) + message_set


# Topics already checked, by their str8 as sent: a PUBLISH to one of them is decoded with
# a slice and a dict lookup. Bounded (emptied when full): names are up to 256 bytes each.
_CHECKED_TOPICS = {}
_new_tuple = tuple.__new__
_CHECKED_TOPICS_MAX = 4096


def decode_publish(body) -> Publish:
    if body.__class__ is bytes and body:  # (what the frame decoder gives)
        offset = 1 + body[0]
        topic = _CHECKED_TOPICS.get(body[:offset])
        if topic is not None and offset < len(body):
            return _new_tuple(Publish, (topic, body[offset:]))  # (Publish(...) without its Python __new__)
    topic, offset = read_topic(body, 0)
    if offset == len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, "PUBLISH without a message set")
    if len(_CHECKED_TOPICS) >= _CHECKED_TOPICS_MAX:
        _CHECKED_TOPICS.clear()
    _CHECKED_TOPICS[bytes(body[:offset])] = topic
    return Publish(topic, bytes(body[offset:]))


def encode_published(first_seq: int, last_seq: int) -> bytes:
    return TWO_U64.pack(first_seq, last_seq)


def decode_published(payload) -> Published:
    return Published(*unpack_field(TWO_U64, payload, 0, "PUBLISH reply"))


# -- SUBSCRIBE --------------------------------------------------------------------------------


class Subscribe(NamedTuple):
    """What a SUBSCRIBE carries, with a client's defaults: the one declaration of its
    fields (encode_subscribe takes them, decode_subscribe gives them)."""

    topic: str
    subscriber_id: str
    mode: str = "create_or_attach"  # "create" | "attach" | "create_or_attach"
    start: object = None  # None | "earliest" | "latest" | ("seq", n) | ("time", time_us)
    window: int | None = None  # None: the hub's default; 0: unlimited
    force_attach: bool = False
    deliver: bool = True  # False: acknowledgement only (no deliveries; CONSUME up to the last seq-id)
    # Shared and pull subscriptions, and message bounds (work_requests.SubscribeOptions;
    # None: not given, the subscription's own or the hub's default).
    kind: str = "exclusive"  # "exclusive" | "shared" | "key_shared" (work_requests.KINDS)
    pull: bool = False  # True: nothing is pushed; FETCH asks for messages
    ack_timeout_ms: int | None = None  # a delivery not acknowledged this long goes out again
    max_deliveries: int | None = None  # deliveries of a message before it is dead-lettered
    message_bound: int | None = None  # unconsumed messages kept at most (the oldest are skipped)
    dead_letter_topic: str | None = None  # None: "<topic>.dlq"
    # The subscription's message selector (None: every message; the filter block), and
    # whether this SUBSCRIBE replaces the filter an existing subscription has.
    filter: str | None = None
    replace_filter: bool = False
    # The client takes SUBSET_DELIVERY frames (flag bit 6; work_requests.subset_header).
    subsets: bool = False

    @property
    def options(self) -> SubscribeOptions:
        return SubscribeOptions(*self[_OPTIONS_AT:_OPTIONS_END])

    @property
    def per_message(self) -> bool:
        """Shared, key_shared or pull: acknowledged message by message, delivered again when not."""
        return per_message(self.kind, self.pull)


_OPTIONS_AT = Subscribe._fields.index("kind")
_OPTIONS_END = Subscribe._fields.index("subsets")
_NO_OPTIONS = SubscribeOptions()


class Subscribed(NamedTuple):
    handle: int  # channel-local: deliveries and CONSUME name the subscription by it
    consumed_seq: int
    next_seq: int  # the first seq-id the hub will deliver
    warning: str = ""  # what the request's filter most likely did not mean (hedwig.selector.warnings)


def _start_fields(start):
    if start is None:
        return StartKind.DEFAULT, 0
    if start == "earliest":
        return StartKind.EARLIEST, 0
    if start == "latest":
        return StartKind.LATEST, 0
    if isinstance(start, tuple) and len(start) == 2 and start[0] in ("seq", "time"):
        kind = StartKind.SEQ if start[0] == "seq" else StartKind.TIME
        return kind, int(start[1])
    raise ValueError(f"start must be None, 'earliest', 'latest', ('seq', n) or ('time', us), not {start!r}")


def encode_subscribe(*fields, **named) -> bytes:
    """A SUBSCRIBE body from Subscribe's fields (positional or by name, with its defaults)."""
    return encode_subscribe_request(Subscribe(*fields, **named))


def encode_subscribe_request(request: Subscribe) -> bytes:
    topic, subscriber_id, mode, start, window, force_attach, deliver = request[:_OPTIONS_AT]
    try:
        mode_code = MODES_BY_NAME[mode]
    except KeyError:
        raise ValueError(f"mode must be one of {sorted(MODES_BY_NAME)}, not {mode!r}") from None
    kind, value = _start_fields(start)
    flags = SUBSCRIBE_FLAG_FORCE_ATTACH if force_attach else 0
    if window is not None:
        flags |= SUBSCRIBE_FLAG_WINDOW
    if not deliver:
        flags |= SUBSCRIBE_FLAG_NO_DELIVERY
    options = request.options
    parts = []
    if options.needed:
        flags |= SUBSCRIBE_FLAG_OPTIONS
        parts.append(encode_options(options))
    if request.filter is not None:
        check_filter(request.filter, request.replace_filter, deliver)
        flags |= SUBSCRIBE_FLAG_FILTER
        parts.append(str16(request.filter))
    if request.replace_filter:
        flags |= SUBSCRIBE_FLAG_REPLACE_FILTER
    if request.subsets:
        flags |= SUBSCRIBE_FLAG_SUBSETS
    body = str8(topic) + str8(subscriber_id) + SUBSCRIBE_TAIL.pack(mode_code, kind, value, flags, window or 0)
    return body + b"".join(parts) if parts else body


# The largest start a hub can act on: seq-ids and times (us) are signed 64-bit integers
# wherever they are stored, while the wire's field is a u64.
MAX_START = 2**63 - 1


def decode_subscribe(body) -> Subscribe:
    topic, offset = read_topic(body, 0)
    subscriber_id, offset = read_subscriber(body, offset)
    mode_code, kind, value, flags, window = unpack_field(SUBSCRIBE_TAIL, body, offset, "SUBSCRIBE")
    offset += SUBSCRIBE_TAIL.size
    if flags & ~SUBSCRIBE_FLAGS:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"unknown subscribe flags {flags:#x}")
    deliver = not flags & SUBSCRIBE_FLAG_NO_DELIVERY
    options = _NO_OPTIONS
    if flags & SUBSCRIBE_FLAG_OPTIONS:
        options, offset = decode_options(body, offset, deliver)
    if flags & SUBSCRIBE_FLAG_FILTER:
        raw, offset = read_str16(body, offset, "filter")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise RequestRefused(Status.MALFORMED_REQUEST, "the filter is not UTF-8") from None
        if not deliver:
            raise RequestRefused(Status.MALFORMED_REQUEST, "a filter is for subscriptions that deliver")
        options = options._replace(filter=text)
    if flags & SUBSCRIBE_FLAG_REPLACE_FILTER:
        options = options._replace(replace_filter=True)
    expect_end(body, offset, "SUBSCRIBE")
    try:
        mode = MODE_NAMES[SubscribeMode(mode_code)]
    except ValueError:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"unknown subscribe mode {mode_code}") from None
    if kind == StartKind.DEFAULT:
        start = None
    elif kind == StartKind.EARLIEST:
        start = "earliest"
    elif kind == StartKind.LATEST:
        start = "latest"
    elif kind == StartKind.SEQ:
        # Only the lower bound is the request's own: the upper one is the topic's last
        # seq-id + 1, known once the topic is acquired, and the refusal names it
        # (hedwig.delivery.start), for a u64 beyond any seq-id (> MAX_START) too.
        if value < 1:
            raise RequestRefused(Status.MALFORMED_REQUEST, "seq-ids start at 1")
        start = ("seq", value)
    elif kind == StartKind.TIME:
        if value > MAX_START:
            raise RequestRefused(
                Status.MALFORMED_REQUEST, f"start time {value} us is not a time (at most {MAX_START})"
            )
        start = ("time", value)
    else:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"unknown start kind {kind}")
    return Subscribe(
        topic,
        subscriber_id,
        mode,
        start,
        window if flags & SUBSCRIBE_FLAG_WINDOW else None,
        bool(flags & SUBSCRIBE_FLAG_FORCE_ATTACH),
        deliver,
        *options,
        bool(flags & SUBSCRIBE_FLAG_SUBSETS),
    )


def encode_subscribed(handle: int, consumed_seq: int, next_seq: int, warning: str = "") -> bytes:
    """The reply; a warning (if any) follows as a str16, which a client that knows none ignores."""
    reply = SUBSCRIBED.pack(handle, consumed_seq, next_seq)
    return reply + str16(warning) if warning else reply


def decode_subscribed(payload) -> Subscribed:
    fields = unpack_field(SUBSCRIBED, payload, 0, "SUBSCRIBE reply")
    if len(payload) == SUBSCRIBED.size:
        return Subscribed(*fields)
    raw, _ = read_str16(payload, SUBSCRIBED.size, "warning")
    return Subscribed(*fields, bytes(raw).decode("utf-8", "replace"))


# -- CONSUME, CLOSE_SUBSCRIPTION, UNSUBSCRIBE ---------------------------------------------------


class Consume(NamedTuple):
    handle: int
    seq: int  # cumulative: everything up to and including seq is consumed


class Unsubscribe(NamedTuple):
    topic: str
    subscriber_id: str


def encode_consume(handle: int, seq: int) -> bytes:
    return CONSUME.pack(handle, seq)


def decode_consume(body) -> Consume:
    handle, seq = unpack_field(CONSUME, body, 0, "CONSUME")
    expect_end(body, CONSUME.size, "CONSUME")
    return Consume(handle, seq)


def encode_close_subscription(handle: int) -> bytes:
    return U32.pack(handle)


def decode_close_subscription(body) -> int:
    (handle,) = unpack_field(U32, body, 0, "CLOSE_SUBSCRIPTION")
    expect_end(body, U32.size, "CLOSE_SUBSCRIPTION")
    return handle


def encode_unsubscribe(topic: str, subscriber_id: str) -> bytes:
    return str8(topic) + str8(subscriber_id)


def decode_unsubscribe(body) -> Unsubscribe:
    topic, offset = read_topic(body, 0)
    subscriber_id, offset = read_subscriber(body, offset)
    expect_end(body, offset, "UNSUBSCRIBE")
    return Unsubscribe(topic, subscriber_id)


# -- READ_RANGE -------------------------------------------------------------------------------


class ReadRange(NamedTuple):
    topic: str
    from_seq: int
    to_seq: int  # inclusive; 0: up to the topic's last seq-id
    max_bytes: int  # stop once this many entry bytes are in the reply (always at least one entry)


class ReadRangeReply(NamedTuple):
    first_seq: int  # the topic's earliest retained seq-id
    last_seq: int  # the topic's last acknowledged seq-id
    entries: list  # [(start, stop, entry bytes)]: messages [start, stop) of each stored entry


def encode_read_range(topic: str, from_seq: int, to_seq: int = 0, max_bytes: int = 4 << 20) -> bytes:
    return str8(topic) + READ_RANGE_TAIL.pack(from_seq, to_seq, max_bytes)


def decode_read_range(body) -> ReadRange:
    topic, offset = read_topic(body, 0)
    from_seq, to_seq, max_bytes = unpack_field(READ_RANGE_TAIL, body, offset, "READ_RANGE")
    expect_end(body, offset + READ_RANGE_TAIL.size, "READ_RANGE")
    if from_seq < 1:
        raise RequestRefused(Status.MALFORMED_REQUEST, "seq-ids start at 1")
    if to_seq and to_seq < from_seq:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"to_seq {to_seq} is before from_seq {from_seq}")
    return ReadRange(topic, from_seq, to_seq, max_bytes)


def read_range_reply_parts(first_seq: int, last_seq: int, entries) -> list:
    """The READ_RANGE payload as chunks for writeSequence: the stored entry bytes are
    passed through, never copied. `entries`: (start, stop, entry bytes) tuples."""
    parts = [RANGE_HEAD.pack(first_seq, last_seq, len(entries))]
    append = parts.append
    pack = RANGE_ENTRY.pack
    for start, stop, data in entries:
        append(pack(start, stop, len(data)))
        append(data)
    return parts


def decode_read_range_reply(payload) -> ReadRangeReply:
    """Entries come back as memoryviews into `payload` (no copy); bytes(view) keeps one."""
    first_seq, last_seq, count = unpack_field(RANGE_HEAD, payload, 0, "READ_RANGE reply")
    view = memoryview(payload)
    offset = RANGE_HEAD.size
    entries = []
    unpack_entry = RANGE_ENTRY.unpack_from
    end = len(payload)
    for _ in range(count):
        if end - offset < RANGE_ENTRY.size:
            raise RequestRefused(Status.MALFORMED_REQUEST, "READ_RANGE reply truncated")
        start, stop, length = unpack_entry(payload, offset)
        offset += RANGE_ENTRY.size
        if offset + length > end:
            raise RequestRefused(Status.MALFORMED_REQUEST, "READ_RANGE reply entry truncated")
        entries.append((start, stop, view[offset : offset + length]))
        offset += length
    return ReadRangeReply(first_seq, last_seq, entries)


# -- admin reads: LIST_TOPICS, DESCRIBE_TOPIC, STATS ------------------------------------------


def encode_topic_only(topic: str) -> bytes:
    """The body of a request that names one topic and nothing else."""
    return str8(topic)


def decode_topic_only(body, what: str) -> str:
    """The topic of such a body (`what`: the op, for the refusal)."""
    topic, offset = read_topic(body, 0)
    expect_end(body, offset, what)
    return topic


def encode_describe_topic(topic: str) -> bytes:
    return encode_topic_only(topic)


def decode_describe_topic(body) -> str:
    return decode_topic_only(body, "DESCRIBE_TOPIC")


def decode_empty(body, what: str) -> None:
    if len(body):
        raise RequestRefused(Status.MALFORMED_REQUEST, f"{what} takes no body, got {len(body)} bytes")


def encode_json(value) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-8")


def decode_json(payload):
    try:
        return json.loads(bytes(payload).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"reply is not JSON: {e}") from None
