"""Message keys and typed property values in message sets: they round-trip with their
Python types, a set without them is byte for byte the set of before, an old publisher's
set is read as it always was, and whatever the hub accepts every reader decodes."""

import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hedwig.protocol import MessageSetError, Status, decode_entry, encode_entry_header, validate_message_set
from hedwig.protocol.compression import (
    CODECS_BY_NAME,
    compress_message_set,
    decompress_message_set,
    validate_published_set,
)
from hedwig.protocol.entry import decode_plain_entry
from hedwig.protocol.message import KeyedMessage, Message, RedeliveredMessage
from hedwig.protocol.messageset import (
    FLAG_KEYS,
    FLAG_PROPERTIES,
    FLAG_TYPED,
    ExtendedSetLayout,
    MessageSetLayout,
    encode_message_set,
    encode_typed_properties,
    parse_message_set,
    properties_and_keys,
)

MIB = 1 << 20
payload_lists = st.lists(st.binary(max_size=40), min_size=1, max_size=12)
typed_values = st.one_of(
    st.binary(max_size=12),
    st.text(max_size=12),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),
    st.booleans(),
)
typed_maps = st.one_of(st.none(), st.dictionaries(st.text(max_size=6), typed_values, max_size=4))
bytes_maps = st.one_of(st.none(), st.dictionaries(st.text(max_size=6), st.binary(max_size=12), max_size=4))
message_keys = st.one_of(st.none(), st.binary(min_size=1, max_size=16), st.text(min_size=1, max_size=8))


def as_entry(message_set: bytes, first_seq: int = 7) -> bytes:
    count = struct.unpack_from("!I", message_set, 2)[0]
    return encode_entry_header(first_seq, count, 1_700_000_000_000_000, b"here", first_seq) + message_set


def same_value(a, b) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b and type(a) is type(b)


def same_properties(decoded: dict, sent) -> bool:
    sent = sent or {}
    return decoded.keys() == sent.keys() and all(same_value(decoded[k], sent[k]) for k in sent)


def expected_key(key):
    return key.encode("utf-8") if isinstance(key, str) else key


@settings(max_examples=300)
@given(payload_lists, st.data())
def test_typed_properties_and_keys_round_trip_with_their_types(payloads, data):
    count = len(payloads)
    properties = data.draw(st.one_of(st.none(), st.lists(typed_maps, min_size=count, max_size=count)))
    keys = data.draw(st.one_of(st.none(), st.lists(message_keys, min_size=count, max_size=count)))
    message_set = encode_message_set(payloads, properties, keys)
    assert validate_message_set(message_set, 0, MIB) == count
    assert validate_published_set(message_set, 0, MIB) == count
    start = data.draw(st.integers(0, count - 1))
    stop = data.draw(st.integers(start + 1, count))
    decoded = decode_entry("t", as_entry(message_set), start, stop)
    assert [m.payload for m in decoded] == payloads[start:stop]
    assert [m.seq for m in decoded] == list(range(7 + start, 7 + stop))
    for message, i in zip(decoded, range(start, stop), strict=True):
        assert same_properties(message.properties, properties[i] if properties else None)
        key = expected_key(keys[i]) if keys else None
        assert message.key == key
        assert type(message) is (Message if key is None else KeyedMessage)
    expected_keys = [expected_key(k) for k in keys] if keys else [None] * count
    assert properties_and_keys(message_set)[1] == expected_keys


@given(payload_lists, st.data())
def test_a_set_without_keys_or_typed_values_is_the_set_of_before_byte_for_byte(payloads, data):
    """What the encoder wrote before keys and types, written here from the documented
    layout, for bytes-valued properties (or none) and no keys."""
    count = len(payloads)
    properties = data.draw(st.one_of(st.none(), st.lists(bytes_maps, min_size=count, max_size=count)))
    keys = data.draw(st.sampled_from([None, [None] * count]))
    blobs = None
    if properties is not None and any(properties):
        blobs = [
            b"".join(
                struct.pack("!H", len(k.encode())) + k.encode() + struct.pack("!I", len(v)) + v
                for k, v in (p or {}).items()
            )
            for p in properties
        ]
    old = struct.pack("!BBI", 1, 0 if blobs is None else 1, count)
    old += b"".join(struct.pack("!I", len(p)) for p in payloads)
    if blobs is not None:
        old += b"".join(struct.pack("!I", len(b)) for b in blobs)
    old += b"".join(payloads) + b"".join(blobs or [])
    assert encode_message_set(payloads, properties, keys) == old
    assert type(parse_message_set(old)) is MessageSetLayout


# Sets the encoder wrote before keys and typed values existed (its output, kept as hex).
OLD_SETS = [
    ("0100000000010000000161", [b"a"], [{}]),
    ("01000000000300000005000000000000000568656c6c6f776f726c64", [b"hello", b"", b"world"], [{}, {}, {}]),
    (
        "01010000000200000001000000010000001500000000787900016b00000001760005636166c3a900000002ff00",
        [b"x", b"y"],
        [{"k": b"v", "caf\u00e9": b"\xff\x00"}, {}],
    ),
    # (an old publisher's str values: sent as UTF-8 in the untyped blob, read as bytes)
    (
        "0101000000010000000100000018700005636f6c6f720000000372656400016e00000003313530",
        [b"p"],
        [{"color": b"red", "n": b"150"}],
    ),
    (
        "0101000000030000000300000003000000050000000000000007000000086f6e6574776f746872656500016100000000000162000000017a",
        [b"one", b"two", b"three"],
        [{}, {"a": b""}, {"b": b"z"}],
    ),
]


@pytest.mark.parametrize(("hex_set", "payloads", "properties"), OLD_SETS)
def test_an_old_publishers_set_is_accepted_and_read_as_before(hex_set, payloads, properties):
    old = bytes.fromhex(hex_set)
    assert validate_published_set(old, 0, MIB) == len(payloads)
    decoded = decode_entry("t", as_entry(old))
    assert [(m.payload, m.properties, m.key) for m in decoded] == list(
        zip(payloads, properties, [None] * len(payloads), strict=True)
    )
    assert encode_message_set(payloads, [p or None for p in properties]) == old  # what was read, sent again


def test_the_flags_say_what_a_set_holds():
    assert encode_message_set([b"a"], [{"s": b"bytes"}])[1] == FLAG_PROPERTIES
    assert encode_message_set([b"a"], [{"s": "text"}])[1] == FLAG_PROPERTIES | FLAG_TYPED
    assert encode_message_set([b"a"], [{"n": 1}], [b"k"])[1] == FLAG_PROPERTIES | FLAG_TYPED | FLAG_KEYS
    assert encode_message_set([b"a"], None, [b"k"])[1] == FLAG_KEYS
    assert encode_message_set([b"a", b"b"], [None, {"x": b"y"}], [None, None])[1] == FLAG_PROPERTIES
    layout = parse_message_set(encode_message_set([b"a", b"b"], [{"n": 1}, None], [None, "k"]))
    assert type(layout) is ExtendedSetLayout and layout.typed and layout.key_offsets is not None


def test_the_issues_example_round_trips():
    properties = {"n": 150, "price": 9.5, "ok": True, "color": "red", "raw": b"\x00\xff"}
    (message,) = decode_entry("t", as_entry(encode_message_set([b"payload"], [properties], ["user-1"])))
    assert message.properties == properties
    assert [type(v) for v in message.properties.values()] == [int, float, bool, str, bytes]
    assert message.key == b"user-1"


@pytest.mark.parametrize(
    ("properties", "keys", "error", "says"),
    [
        ([{"n": 2**63}], None, ValueError, "signed 64-bit"),
        ([{"n": -(2**63) - 1}], None, ValueError, "signed 64-bit"),
        ([{"x": None}], None, TypeError, "not NoneType"),
        ([{"x": [1]}], None, TypeError, "not list"),
        (None, [b""], ValueError, "at least one byte"),
        (None, [""], ValueError, "at least one byte"),
        (None, [5], TypeError, "bytes or str"),
        (None, [b"a", b"b"], ValueError, "one key"),
    ],
)
def test_what_cannot_be_sent_is_refused_when_encoding(properties, keys, error, says):
    with pytest.raises(error, match=says):
        encode_message_set([b"a"], properties, keys)


def test_the_message_limit_counts_the_key():
    message_set = encode_message_set([b"12345"], [{"k": 1}], [b"abc"])
    size = 5 + len(encode_typed_properties({"k": 1})) + 3
    assert validate_message_set(message_set, 0, size) == 1
    with pytest.raises(MessageSetError) as caught:
        validate_message_set(message_set, 0, size - 1)
    assert caught.value.status is Status.MESSAGE_TOO_LARGE


def _typed_pair(key: bytes, kind: int, value: bytes) -> bytes:
    return struct.pack("!H", len(key)) + key + struct.pack("!BI", kind, len(value)) + value


def _extended(payloads, blobs=None, keys=None, flags=None) -> bytes:
    count = len(payloads)
    if flags is None:
        flags = (FLAG_PROPERTIES | FLAG_TYPED if blobs is not None else 0) | (FLAG_KEYS if keys else 0)
    parts = [struct.pack("!BBI", 1, flags, count), *(struct.pack("!I", len(p)) for p in payloads)]
    for column in (blobs, keys):
        if column is not None:
            parts += [struct.pack("!I", len(x)) for x in column]
    parts += payloads
    for column in (blobs, keys):
        if column is not None:
            parts += column
    return b"".join(parts)


@pytest.mark.parametrize(
    ("message_set", "says"),
    [
        (_extended([b"a"], [_typed_pair(b"k", 9, b"")]), "message 0: unknown property value type 9"),
        (_extended([b"a"], [_typed_pair(b"k", 2, b"1234")]), "message 0: a property value of type 2 has 4"),
        (_extended([b"a"], [_typed_pair(b"k", 3, b"")]), "message 0: a property value of type 3 has 0"),
        (_extended([b"a"], [_typed_pair(b"k", 4, b"\x02")]), "message 0: a boolean property value is 2"),
        (
            _extended([b"a"], [_typed_pair(b"k", 1, b"\xff")]),
            "message 0: a property's string value is not UTF-8",
        ),
        (_extended([b"a"], [_typed_pair(b"\xc3", 1, b"\xa9")]), "not UTF-8"),  # (halves of one character)
        (_extended([b"a", b"b"], [b"", _typed_pair(b"k", 0, b"v")[:-1]]), "message 1: truncated"),
        (_extended([b"a"], [_typed_pair(b"k", 4, b"")]), "message 0: a property value of type 4 has 0"),
        (_extended([b"a"], None, [b"k"], flags=FLAG_KEYS | FLAG_TYPED), "typed properties but no properties"),
        (_extended([b"a"], None, [b"k"], flags=FLAG_KEYS | 0x40), "unknown message set flags 0x50"),
        (_extended([b"a"], None, [b"k"])[:-1], "lengths add up"),
        (_extended([b"a"], None, [b"k"]) + b"z", "lengths add up"),
        (_extended([b"a", b"b"], None, [b"k", b""])[:14], "truncated in its length arrays"),
    ],
)
def test_extended_sets_a_reader_cannot_decode_are_refused(message_set, says):
    with pytest.raises(MessageSetError, match=says) as caught:
        validate_message_set(message_set)
    assert caught.value.status is Status.MALFORMED_REQUEST
    assert caught.value.__suppress_context__  # (no "During handling of KeyError" in a log)


def readable(message_set: bytes) -> bool:
    try:
        decode_entry("t", as_entry(message_set))
    except MessageSetError:
        return False
    return True


@settings(max_examples=300)
@given(
    st.lists(st.tuples(typed_maps, message_keys), min_size=1, max_size=5),
    st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_a_mangled_extended_set_is_refused_or_readable_never_accepted_unreadable(messages, changes):
    properties = [{**(p or {}), "t": 1} for p, _ in messages]  # (typed, always)
    keys = [k for _, k in messages]
    encoded = bytearray(encode_message_set([b"x%d" % i for i in range(len(messages))], properties, keys))
    for at, value in changes:
        encoded[at % len(encoded)] = value
    try:
        validate_message_set(bytes(encoded))
    except MessageSetError:
        return
    assert readable(bytes(encoded))


@given(
    st.lists(st.binary(max_size=30), min_size=1, max_size=4), st.lists(message_keys, min_size=1, max_size=4)
)
def test_any_typed_blobs_pass_exactly_when_a_reader_decodes_them(blobs, keys):
    keys = (keys * len(blobs))[: len(blobs)]
    message_set = _extended([b"p"] * len(blobs), blobs, [expected_key(k) or b"" for k in keys])
    try:
        validate_message_set(message_set)
    except MessageSetError:
        assert not readable(message_set)
    else:
        assert readable(message_set)


@pytest.mark.parametrize("codec", sorted(CODECS_BY_NAME))
def test_compression_keeps_keys_and_typed_values(codec):
    properties = [{"n": 150, "s": "x"}, None, {"raw": b"\xff"}]
    plain = encode_message_set([b"a" * 50, b"b" * 50, b"c"], properties, [b"k1", None, "k3"])
    packed = compress_message_set(plain, codec)
    assert packed[1] & (FLAG_PROPERTIES | FLAG_TYPED | FLAG_KEYS) == plain[1]
    assert decompress_message_set(packed) == plain
    assert validate_published_set(packed, 0, MIB, 16 * MIB) == 3
    decoded = decode_entry("t", as_entry(packed))
    assert [(m.properties, m.key) for m in decoded] == [
        (properties[0], b"k1"),
        ({}, None),
        (properties[2], b"k3"),
    ]


def test_a_compressed_keyed_set_may_hold_its_keys_lengths_within_the_message_limit():
    """The bound a compressed set's plain size is checked against before decompressing
    counts 12 bytes of lengths per keyed message (8 without keys)."""
    plain = encode_message_set([b"p" * 10] * 4, None, [b"k" * 10] * 4)
    packed = compress_message_set(plain, "gzip")
    assert validate_published_set(packed, 0, 20, MIB) == 4  # each message 20 bytes: payload and key
    with pytest.raises(MessageSetError) as caught:
        validate_published_set(packed, 0, 19, MIB)
    assert caught.value.status is Status.MESSAGE_TOO_LARGE


def test_the_plain_entry_decoder_leaves_extended_sets_to_the_general_one():
    for message_set in (
        encode_message_set([b"a", b"b"], None, [b"k", None]),
        encode_message_set([b"a"], [{"n": 1}]),
    ):
        entry = as_entry(message_set)
        assert decode_plain_entry("t", entry, 0, 1) is None
        assert decode_entry("t", entry)[0].payload == b"a"


def test_a_redelivered_message_keeps_its_key():
    (keyed,) = decode_entry("t", as_entry(encode_message_set([b"a"], None, [b"k"])))
    again = RedeliveredMessage.again(keyed, 3)
    assert (again.key, again.delivery_count, again.payload) == (b"k", 3, b"a")
    assert RedeliveredMessage.again(Message("t", 1, b"p", 0, {}, "", 1), 2).key is None
    assert "key=b'k'" in repr(keyed) and "key=" not in repr(Message("t", 1, b"p", 0, {}, "", 1))


@given(payload_lists, st.data(), st.sets(st.text(max_size=6), max_size=4))
def test_decoding_only_some_properties_gives_those_of_the_whole(payloads, data, names):
    """properties_and_keys with `names` (what a selector reads) steps over the rest."""
    count = len(payloads)
    kinds = st.sampled_from([typed_maps, bytes_maps])
    properties = data.draw(kinds.flatmap(lambda maps: st.lists(maps, min_size=count, max_size=count)))
    message_set = encode_message_set(payloads, properties)
    whole, _ = properties_and_keys(message_set)
    some, _ = properties_and_keys(message_set, 0, names)
    assert len(some) == count
    for part, full in zip(some, whole, strict=True):
        expected = {name: value for name, value in full.items() if name in names}
        assert part.keys() == expected.keys()
        assert all(same_value(part[name], expected[name]) for name in expected)
