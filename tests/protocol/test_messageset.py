"""Message sets and entries: round trips, limits and malformed input."""

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

payloads = st.lists(st.binary(max_size=64), min_size=1, max_size=30)
property_maps = st.dictionaries(st.text(min_size=1, max_size=8), st.binary(max_size=16), max_size=3)


@given(payloads, st.data())
def test_round_trip_with_and_without_properties(messages, data):
    with_properties = data.draw(st.booleans())
    props = (
        data.draw(st.lists(property_maps, min_size=len(messages), max_size=len(messages)))
        if with_properties
        else None
    )
    encoded = encode_message_set(messages, props)
    assert validate_message_set(encoded) == len(messages)
    entry = encode_entry_header(41, len(messages), 1_700_000_000_000_000, b"eu", 7) + encoded
    start = data.draw(st.integers(0, len(messages) - 1))
    stop = data.draw(st.integers(start + 1, len(messages)))
    decoded = decode_entry("t", entry, start, stop)
    assert [m.payload for m in decoded] == messages[start:stop]
    assert [m.seq for m in decoded] == list(range(41 + start, 41 + stop))
    assert [m.origin_seq for m in decoded] == list(range(7 + start, 7 + stop))
    assert {m.origin_region for m in decoded} == {"eu"}
    expected_props = [p or {} for p in props[start:stop]] if props else [{}] * (stop - start)
    assert [m.properties for m in decoded] == expected_props


def test_oversized_message_is_refused_with_its_status():
    encoded = encode_message_set([b"x" * 10, b"y" * 101])
    with pytest.raises(MessageSetError) as caught:
        validate_message_set(encoded, max_message_bytes=100)
    assert caught.value.status is Status.MESSAGE_TOO_LARGE


@pytest.mark.parametrize(
    "mangle",
    [
        lambda b: b[:-1],  # truncated payload
        lambda b: b + b"z",  # trailing bytes
        lambda b: b[:4],  # truncated header
        lambda b: bytes([9]) + b[1:],  # unknown version
        lambda b: b[:2] + struct.pack("!I", 0) + b[6:],  # empty set
        lambda b: b[:2] + struct.pack("!I", 1000) + b[6:],  # count beyond the arrays
    ],
)
def test_malformed_sets_are_refused(mangle):
    encoded = encode_message_set([b"abc", b"de"])
    with pytest.raises(MessageSetError) as caught:
        validate_message_set(mangle(encoded))
    assert caught.value.status is Status.MALFORMED_REQUEST


def test_entry_header_carries_origin_and_via():
    from hedwig.protocol import decode_entry_header

    relayed = encode_entry_header(9, 2, 5, b"eu-west", 120, via=b"eu")
    header = decode_entry_header(relayed + encode_message_set([b"a", b"b"]))
    assert (header.first_seq, header.last_seq, header.origin_region, header.origin_seq, header.via) == (
        9,
        10,
        "eu-west",
        120,
        "eu",
    )
    assert header.body_offset == len(relayed)
    local = encode_entry_header(9, 2, 5, b"eu-west", 9)
    assert decode_entry_header(local + encode_message_set([b"a", b"b"])).via == ""
    with pytest.raises(MessageSetError):
        decode_entry_header(relayed[:-3])


@pytest.mark.parametrize("mangle", [lambda b: b[:-1], lambda b: b + b"z"])
def test_a_one_message_entry_whose_length_is_wrong_is_refused_when_decoded(mangle):
    """(decode_entry reads a set of one plain message with one unpack: it checks its
    length as the general path does.)"""
    entry = encode_entry_header(1, 1, 1_700_000_000_000_000, b"eu", 1) + encode_message_set([b"payload"])
    assert [m.payload for m in decode_entry("t", entry)] == [b"payload"]
    with pytest.raises(MessageSetError, match="do not match"):
        decode_entry("t", mangle(entry))


@given(
    st.lists(st.binary(max_size=40), min_size=1, max_size=4),
    st.booleans(),
    st.sampled_from([b"", b"eu", b"\xff\xfe", "région".encode()]),
    st.sampled_from([b"", b"us"]),
    st.sampled_from([None, (7, 3)]),
    st.integers(0, 4),
    st.integers(0, 4),
)
def test_the_plain_entry_decoding_gives_what_the_general_one_gives_or_leaves_it(
    messages, with_properties, region, via, producer, start, stop
):
    """decode_plain_entry decodes only an entry of plain messages, without a via region
    or a producer, and then exactly as decode_entry does, for any [start, stop) a
    delivery names; any other entry it leaves (None) to the general path, which also
    says what is wrong with a bad one."""
    from hedwig.protocol.entry import decode_plain_entry

    stop = min(stop, len(messages))
    properties = [{"k": b"v"}] * len(messages) if with_properties else None
    entry = encode_entry_header(41, len(messages), 1_700_000_000_000_000, region, 7, via, producer)
    entry += encode_message_set(messages, properties)
    quick = decode_plain_entry("t", entry, start, stop)
    plain = not with_properties and not via and producer is None
    try:
        general = decode_entry("t", entry, start, stop)
    except MessageSetError:
        assert quick is None  # (a region name that is not UTF-8)
        return
    if plain:
        assert quick == general
    else:
        assert quick is None
    for mangled in (entry[:-1], entry + b"z", entry[:30], entry[:-4]):
        assert decode_plain_entry("t", mangled, 0, 1) is None


def test_a_plain_entry_past_its_count_is_left_to_the_general_path():
    from hedwig.protocol.entry import decode_plain_entry

    entry = encode_entry_header(1, 2, 1_700_000_000_000_000, b"eu", 1) + encode_message_set([b"a", b"b"])
    assert [m.payload for m in decode_plain_entry("t", entry, 0, 2)] == [b"a", b"b"]
    assert decode_plain_entry("t", entry, 0, 3) is None


def test_a_plain_entry_not_in_bytes_is_left_to_the_general_path():
    from hedwig.protocol.entry import decode_plain_entry

    entry = encode_entry_header(1, 1, 1_700_000_000_000_000, b"eu", 1) + encode_message_set([b"payload"])
    assert decode_plain_entry("t", entry, 0, 1)[0].payload == b"payload"
    assert decode_plain_entry("t", memoryview(bytearray(entry)), 0, 1) is None


def test_a_plain_entry_makes_only_what_is_each_message_s_own():
    """A subscriber's per-message objects are its Message, its payload and its seq-id: the
    messages of a plain entry share one empty properties dict, which is read-only so that
    no message's properties change another's, and a local entry's seq and origin seq-id
    are one int."""
    from hedwig.protocol.entry import decode_plain_entry

    entry = encode_entry_header(1001, 3, 1_700_000_000_000_000, b"eu", 1001)
    entry += encode_message_set([b"a", b"b", b"c"])
    messages = decode_plain_entry("t", entry, 0, 3)
    assert [m.payload for m in messages] == [b"a", b"b", b"c"]
    assert messages[0].properties is messages[1].properties is messages[2].properties
    assert messages[0].properties == {} and dict(messages[0].properties) == {}
    for change in (
        lambda p: p.__setitem__("k", b"v"),
        lambda p: p.update(k=b"v"),
        lambda p: p.setdefault("k", b"v"),
    ):
        with pytest.raises(TypeError):
            change(messages[0].properties)
    assert messages[1].properties == {}
    assert all(m.seq is m.origin_seq for m in messages)
    relayed = encode_entry_header(1001, 2, 1_700_000_000_000_000, b"eu", 7) + encode_message_set([b"a", b"b"])
    assert [(m.seq, m.origin_seq) for m in decode_plain_entry("t", relayed, 1, 2)] == [(1002, 8)]
