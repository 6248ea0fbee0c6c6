"""The requests of shared and pull subscriptions (work queues): SUBSCRIBE's options block,
ACK, NACK, FETCH, and the REDELIVERY frame (docs/protocol.md "Shared and pull
subscriptions").

Acknowledgements travel as seq-id ranges, so a client acknowledging every message one
by one still sends one small frame per batch: a worker that takes messages in order
acknowledges one range per batch, whatever its size. Every integer is big-endian.
"""

import re
import struct
from typing import NamedTuple

from hedwig.protocol.layouts import (
    RequestRefused,
    expect_end,
    read_str8,
    str8,
    unpack_field,
)
from hedwig.protocol.names import InvalidName, check_topic
from hedwig.protocol.ops import Op
from hedwig.protocol.status import Status

# A subscription's kind, by its code in SUBSCRIBE's options block: exclusive (one attached
# subscriber), shared (any number of members, each message to one of them) and
# key_shared (shared, every message of a key to one member, in seq-id order).
KINDS = ("exclusive", "shared", "key_shared")
# kind, delivery (0 push, 1 pull), ack_timeout_ms, max_deliveries, message_bound; then
# str8 dead_letter_topic. 0 (or empty) means "not given".
SUBSCRIBE_OPTIONS = struct.Struct("!BBIIQ")
_RANGES_HEAD = struct.Struct("!IH")  # handle, number of ranges
_RANGE = struct.Struct("!QQ")
_FETCH = struct.Struct("!III")  # handle, max_messages, timeout_ms
# A REDELIVERY's head after the frame header: handle, start, stop, delivery count; then
# the stored entry (a client's FrameDecoder cuts it off: hedwig.protocol.framing).
REDELIVERY_HEAD = struct.Struct("!IIII")
_REDELIVERY_PREFIX = struct.Struct("!IBI" + REDELIVERY_HEAD.format[1:])
_REDELIVERY_LENGTH = _REDELIVERY_PREFIX.size - 4  # a REDELIVERY's length without its entry
MAX_RANGES = 0xFFFF  # ranges one ACK or NACK carries at most
MAX_SEQ = 2**63 - 1  # seq-ids are signed 64-bit wherever they are stored


class SubscribeOptions(NamedTuple):
    """What SUBSCRIBE's options block says (None: not given)."""

    kind: str = "exclusive"
    pull: bool = False
    ack_timeout_ms: int | None = None
    max_deliveries: int | None = None
    message_bound: int | None = None
    dead_letter_topic: str | None = None
    # The subscription's message selector (hedwig.selector; None: every message), and
    # whether this SUBSCRIBE replaces the one it has: SUBSCRIBE's filter block, not this
    # options block (hedwig.protocol.requests).
    filter: str | None = None
    replace_filter: bool = False

    @property
    def needed(self) -> bool:
        """Whether a SUBSCRIBE must carry the block (an exclusive push subscription
        without a message bound is the request of old; a filter has a block of its own)."""
        return self[:_BLOCK_FIELDS] != _NONE[:_BLOCK_FIELDS]


_NONE = SubscribeOptions()
_BLOCK_FIELDS = SubscribeOptions._fields.index("filter")  # the fields the options block carries
# A filter's length on the wire (u16); a hub refuses one longer than its selector
# limits allow (hedwig.selector.SelectorLimits.max_length) long before that.
MAX_FILTER_BYTES = 0xFFFF


def per_message(kind: str, pull: bool) -> bool:
    """Whether a subscription of `kind` and delivery is acknowledged message by message
    (shared, key_shared or pull), and delivered again when it is not."""
    return kind != "exclusive" or pull


def check_options(options: SubscribeOptions, deliver: bool) -> None:
    """Refuse options that mean nothing together (a client raises ValueError at once; the
    hub answers MALFORMED_REQUEST)."""
    if options.kind not in KINDS:
        raise ValueError(f"kind is one of {', '.join(KINDS)}, not {options.kind!r}")
    if per_message(options.kind, options.pull) and not deliver:
        raise ValueError("an acknowledgement-only attachment (deliver=False) is exclusive and pushed")
    if not per_message(options.kind, options.pull) and (
        options.ack_timeout_ms is not None
        or options.max_deliveries is not None
        or options.dead_letter_topic is not None
    ):
        raise ValueError(
            "ack_timeout, max_deliveries and dead_letter_topic are for shared or pull subscriptions"
        )
    for name, value, limit in (
        ("ack_timeout_ms", options.ack_timeout_ms, 0xFFFFFFFF),
        ("max_deliveries", options.max_deliveries, 0xFFFFFFFF),
        ("message_bound", options.message_bound, MAX_SEQ),
    ):
        if value is not None and (type(value) is not int or not 1 <= value <= limit):
            raise ValueError(f"{name} is a whole number in 1..{limit}, not {value!r}")
    if options.dead_letter_topic is not None:
        try:
            check_topic(options.dead_letter_topic.encode("utf-8"))
        except InvalidName as e:
            raise ValueError(f"dead_letter_topic: {e}") from None
    check_filter(options.filter, options.replace_filter, deliver)


def check_filter(text, replace: bool, deliver: bool) -> None:
    """Refuse a filter that cannot be sent or means nothing (its language is the hub's
    to check: INVALID_MESSAGE_FILTER)."""
    if text is not None:
        if not isinstance(text, str):
            raise ValueError(f"filter is a selector's text (str), not {type(text).__name__}")
        if len(text.encode("utf-8")) > MAX_FILTER_BYTES:
            raise ValueError(f"a filter is at most {MAX_FILTER_BYTES} bytes of UTF-8")
        if not deliver:
            raise ValueError("a filter is for subscriptions that deliver (not deliver=False)")
    if not isinstance(replace, bool):
        raise ValueError(f"replace_filter is True or False, not {replace!r}")


def encode_options(options: SubscribeOptions) -> bytes:
    return SUBSCRIBE_OPTIONS.pack(
        KINDS.index(options.kind),
        1 if options.pull else 0,
        options.ack_timeout_ms or 0,
        options.max_deliveries or 0,
        options.message_bound or 0,
    ) + str8(options.dead_letter_topic or "")


def decode_options(body, offset: int, deliver: bool) -> tuple:
    """(the options block at `offset`, the offset after it)."""
    kind, delivery, ack_timeout_ms, max_deliveries, bound = unpack_field(
        SUBSCRIBE_OPTIONS, body, offset, "SUBSCRIBE options"
    )
    raw, end = read_str8(body, offset + SUBSCRIBE_OPTIONS.size, "dead-letter topic")
    if kind >= len(KINDS) or delivery > 1:
        raise RequestRefused(
            Status.MALFORMED_REQUEST, f"unknown subscription kind {kind} or delivery {delivery}"
        )
    dead_letter_topic = None
    if raw:
        try:
            dead_letter_topic = check_topic(raw)
        except InvalidName as e:
            raise RequestRefused(Status.INVALID_TOPIC, f"dead-letter topic: {e}") from None
    options = SubscribeOptions(
        KINDS[kind],
        bool(delivery),
        ack_timeout_ms or None,
        max_deliveries or None,
        bound or None,
        dead_letter_topic,
    )
    try:
        check_options(options, deliver)
    except ValueError as e:
        raise RequestRefused(Status.MALFORMED_REQUEST, str(e)) from None
    return options, end


# -- ACK and NACK ------------------------------------------------------------------------------


class SeqRanges(NamedTuple):
    handle: int
    ranges: list  # [(first, last)], inclusive, each first <= last


def encode_ranges(handle: int, ranges) -> bytes:
    """An ACK or NACK body: the subscription `handle` and seq-id ranges (first, last)."""
    ranges = list(ranges)
    if not 1 <= len(ranges) <= MAX_RANGES:
        raise ValueError(f"an ACK or NACK carries 1..{MAX_RANGES} ranges, not {len(ranges)}")
    pack = _RANGE.pack
    return _RANGES_HEAD.pack(handle, len(ranges)) + b"".join(pack(first, last) for first, last in ranges)


def decode_ranges(body, what: str) -> SeqRanges:
    handle, count = unpack_field(_RANGES_HEAD, body, 0, what)
    if count == 0:
        raise RequestRefused(Status.MALFORMED_REQUEST, f"{what} names no seq-id range")
    expect_end(body, _RANGES_HEAD.size + count * _RANGE.size, what)
    values = struct.unpack_from(f"!{2 * count}Q", body, _RANGES_HEAD.size)
    ranges = list(zip(values[::2], values[1::2], strict=True))
    for first, last in ranges:
        if not 1 <= first <= last <= MAX_SEQ:
            raise RequestRefused(
                Status.MALFORMED_REQUEST,
                f"{what}: {first}..{last} is not a range of seq-ids (1 <= first <= last)",
            )
    return SeqRanges(handle, ranges)


# -- FETCH ------------------------------------------------------------------------------------


class Fetch(NamedTuple):
    handle: int
    max_messages: int  # at least 1
    timeout_ms: int  # how long to wait for the first message; 0: only what is there now


def encode_fetch(handle: int, max_messages: int, timeout_ms: int) -> bytes:
    return _FETCH.pack(handle, max_messages, timeout_ms)


def check_fetch(max_messages, timeout) -> None:
    """Refuse what a client's fetch(max_messages, timeout seconds) cannot ask for."""
    if type(max_messages) is not int or not 1 <= max_messages <= 0xFFFFFFFF:
        raise ValueError(f"fetch asks for 1..4294967295 messages, not {max_messages!r}")
    if not isinstance(timeout, int | float) or not 0 <= timeout <= 0xFFFFFFFF / 1000:
        raise ValueError(f"a fetch waits 0 or more seconds (0: only what is there now), not {timeout!r}")


def decode_fetch(body) -> Fetch:
    handle, max_messages, timeout_ms = unpack_field(_FETCH, body, 0, "FETCH")
    expect_end(body, _FETCH.size, "FETCH")
    if max_messages < 1:
        raise RequestRefused(Status.MALFORMED_REQUEST, "FETCH asks for at least 1 message")
    return Fetch(handle, max_messages, timeout_ms)


# -- REDELIVERY (hub -> client) ---------------------------------------------------------------


def redelivery_header(handle: int, start: int, stop: int, count: int, entry_length: int) -> bytes:
    """Frame header and prefix of a REDELIVERY of messages [start, stop) of one entry,
    delivered for the `count`th time; the entry's stored bytes follow unchanged."""
    return _REDELIVERY_PREFIX.pack(
        _REDELIVERY_LENGTH + entry_length, Op.REDELIVERY, 0, handle, start, stop, count
    )


# -- SUBSET_DELIVERY (hub -> client) ----------------------------------------------------------

# A SUBSET_DELIVERY's head after the frame header: handle, start, stop, the selection's
# length in bytes; then the selection, then the stored entry (a client's FrameDecoder cuts
# the head off: hedwig.protocol.framing).
SUBSET_HEAD = struct.Struct("!IIII")
_SUBSET_PREFIX = struct.Struct("!IBI" + SUBSET_HEAD.format[1:])
_SUBSET_LENGTH = _SUBSET_PREFIX.size - 4  # a SUBSET_DELIVERY's length without selection and entry
_ONE = re.compile("1")


def subset_header(handle: int, start: int, stop: int, selection: bytes, entry_length: int) -> bytes:
    """Frame header, head and selection of a SUBSET_DELIVERY of the messages of [start,
    stop) of one entry that `selection` (selection_of) picks; the entry's stored bytes
    follow unchanged."""
    return (
        _SUBSET_PREFIX.pack(
            _SUBSET_LENGTH + len(selection) + entry_length,
            Op.SUBSET_DELIVERY,
            0,
            handle,
            start,
            stop,
            len(selection),
        )
        + selection
    )


def selection_of(runs, start: int, stop: int) -> bytes:
    """The selection of runs [(first, last)] (indexes within the entry, sorted, disjoint,
    within [start, stop)): bit i (of byte i // 8, least significant first) set for
    message start + i; (stop - start + 7) // 8 bytes. Work per run, not per message."""
    bits = 0
    for first, last in runs:
        bits |= ((1 << (last - first + 1)) - 1) << (first - start)
    return bits.to_bytes((stop - start + 7) // 8, "little")


def selected_indexes(start: int, stop: int, selection) -> list:
    """The indexes (within the entry) a SUBSET_DELIVERY's selection picks, ascending;
    RequestRefused (MALFORMED_REQUEST) for one that does not fit [start, stop) or picks
    nothing (a hub never sends either)."""
    if stop < start or len(selection) != (stop - start + 7) // 8:
        raise RequestRefused(
            Status.MALFORMED_REQUEST, f"a selection of {len(selection)} bytes for messages [{start}, {stop})"
        )
    bits = int.from_bytes(selection, "little")
    if not bits or bits >> (stop - start):
        raise RequestRefused(Status.MALFORMED_REQUEST, "a selection picking nothing, or past its stop")
    text = format(bits, "b")[::-1]  # (message start + i at text[i])
    return [start + found.start() for found in _ONE.finditer(text)]
