"""The hub's check of a message set before it stores it: whatever it accepts every reader
decodes, whatever a reader could not decode it refuses with MessageSetError (and nothing
else), naming the message at fault."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hedwig.protocol import (
    MessageSetError,
    Status,
    decode_entry,
    encode_entry_header,
    encode_message_set,
    validate_message_set,
)
from hedwig.protocol.messageset import decode_properties, encode_properties

_KV = b"\x00\x01k\x00\x00\x00\x01v"  # one well-formed property: k -> v


def raw_set(payloads, blobs=None, count=None, flags=None) -> bytes:
    """A message set built by hand, properties blobs as given (well-formed or not)."""
    count = len(payloads) if count is None else count
    if flags is None:
        flags = 0 if blobs is None else 1
    parts = [struct.pack("!BBI", 1, flags, count)]
    parts += [struct.pack("!I", len(p)) for p in payloads]
    if blobs is not None:
        parts += [struct.pack("!I", len(b)) for b in blobs]
    parts += payloads
    if blobs is not None:
        parts += blobs
    return b"".join(parts)


def readable(message_set: bytes) -> bool:
    """Whether a subscriber could decode every message of this set, stored as an entry."""
    entry = encode_entry_header(1, 1, 0, b"here", 1) + message_set
    try:
        decode_entry("t", entry)
    except (MessageSetError, UnicodeDecodeError):
        return False
    return True


def test_well_formed_properties_pass_and_decode():
    message_set = raw_set([b"a", b"bc", b""], [_KV, b"", _KV + b"\x00\x00\x00\x00\x00\x00"])
    assert validate_message_set(message_set) == 3
    assert readable(message_set)


@pytest.mark.parametrize(
    ("payloads", "blobs", "reason"),
    [
        ([b"a"], [b"\x00\x09k\x00\x00\x00\x01v"], "message 0: truncated property key"),  # key length
        ([b"a"], [b"\x00\x01k\x00\x00\x00\x09v"], "message 0: truncated property value"),  # value length
        ([b"a"], [b"\x00\x02\xff\xfe\x00\x00\x00\x01v"], "message 0: a property key is not UTF-8"),
        ([b"a"], [_KV + b"\x00"], "message 0: truncated property key length"),
        ([b"a", b"b"], [_KV, b"\x00\x01\xc3\x00\x00\x00\x00"], "message 1: a property key is not UTF-8"),
        # A key length running into the next message's blob: the walk over all blobs
        # together must still see that blob 0 does not end on a property.
        ([b"a", b"b"], [b"\x00\x05k", b"\x00\x00\x00\x00" + _KV], "message 0: truncated property key"),
        # Two keys whose halves would make one character if they were joined.
        ([b"a"], [b"\x00\x01\xc3\x00\x00\x00\x00\x00\x01\xa9\x00\x00\x00\x00"], "not UTF-8"),
    ],
)
def test_properties_a_reader_cannot_decode_are_refused_naming_the_message(payloads, blobs, reason):
    message_set = raw_set(payloads, blobs)
    assert not readable(message_set)  # what the hub stored before it checked properties
    with pytest.raises(MessageSetError, match=reason) as refused:
        validate_message_set(message_set)
    assert refused.value.status is Status.MALFORMED_REQUEST


@pytest.mark.parametrize(
    ("message_set", "reason"),
    [
        (raw_set([b"abc", b"de"])[:9], "truncated in its length arrays"),  # length table cut short
        (raw_set([b"abc", b"de"], [_KV, _KV])[:15], "truncated in its length arrays"),
        (raw_set([b"abc", b"de"], count=1), "lengths add up"),  # the header counts too few
        (raw_set([b"abc", b"de"], count=3), "truncated in its length arrays|lengths add up"),
        (raw_set([b"abc", b"de"], [_KV, _KV], count=1), "lengths add up"),
        (raw_set([b"abc"], flags=0x02), "unknown message set flags"),
    ],
)
def test_length_tables_and_counts_that_do_not_match_are_refused(message_set, reason):
    with pytest.raises(MessageSetError, match=reason) as refused:
        validate_message_set(message_set)
    assert refused.value.status is Status.MALFORMED_REQUEST


def test_a_set_checked_inside_a_larger_buffer_is_checked_from_its_offset():
    good = encode_message_set([b"a", b"b"], [{"k": b"v"}, {"\u00e9": "x"}])
    assert validate_message_set(memoryview(b"head" + good), 4) == 2
    bad = raw_set([b"a"], [b"\x00\x02\xff\xfe\x00\x00\x00\x00"])
    with pytest.raises(MessageSetError, match="not UTF-8"):
        validate_message_set(memoryview(b"head" + bad), 4)


# -- properties: the check agrees with the reader, whatever the bytes -----------------------------


property_maps = st.dictionaries(st.text(max_size=6), st.binary(max_size=8), max_size=3)


@given(st.lists(st.binary(max_size=24), min_size=1, max_size=6))
def test_any_blobs_pass_exactly_when_every_reader_decodes_them(blobs):
    message_set = raw_set([b"p"] * len(blobs), blobs)
    try:
        validate_message_set(message_set)
    except MessageSetError:
        assert not readable(message_set)
    else:
        assert readable(message_set)


@given(
    st.lists(property_maps, min_size=1, max_size=6),
    st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_a_mangled_set_is_refused_or_readable_never_stored_unreadable(properties, changes):
    encoded = bytearray(encode_message_set([b"x%d" % i for i in range(len(properties))], properties))
    if not any(properties):
        encoded[1] = 1  # a properties array of empty blobs, for the changes to hit
        at = 6 + 4 * len(properties)
        encoded[at:at] = bytes(4 * len(properties))
    for at, value in changes:
        encoded[at % len(encoded)] = value
    try:
        validate_message_set(bytes(encoded))
    except MessageSetError:
        return
    assert readable(bytes(encoded))


@given(property_maps)
def test_encoded_properties_always_pass(mapping):
    blob = encode_properties(mapping)
    assert decode_properties(blob) == {k: v for k, v in mapping.items()}
    assert validate_message_set(raw_set([b"p"], [blob])) == 1


@given(st.binary(max_size=40), st.lists(st.tuples(st.integers(0, 60), st.integers(0, 255)), max_size=3))
def test_a_one_message_set_is_judged_alike_by_the_publish_check_and_the_general_one(payload, changes):
    """validate_published_set takes one plain message with one unpack; whatever it says,
    validate_message_set says the same (count, or the same status)."""
    from hedwig.protocol.compression import validate_published_set

    encoded = bytearray(encode_message_set([payload]))
    for at, value in changes:
        if at < len(encoded):
            encoded[at] = value & 0xF1  # (no codec bits: a plain set)
        else:
            encoded.append(value)  # a byte too many

    def outcome(check):
        try:
            return check(bytes(encoded), 0, 20)
        except MessageSetError as e:
            return e.status

    assert outcome(validate_published_set) == outcome(validate_message_set)
