"""The pure parts of relaying: an entry's via read in place, a message set's tail cut out,
the parts of a relayed entry, and the region link bodies (round trips and refusals)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hedwig.protocol import decode_entry, encode_entry_header, encode_message_set, parse_message_set
from hedwig.protocol.compression import compress_message_set
from hedwig.protocol.framing import FrameDecoder
from hedwig.protocol.messageset import MessageSetError, validate_message_set
from hedwig.protocol.ops import Op
from hedwig.protocol.requests import RequestRefused
from hedwig.protocol.responses import response_frame, split_response
from hedwig.protocol.status import Status
from hedwig.region import wire
from hedwig.region.entries import RelayedPart, entry_via, slice_message_set, via_filter
from hedwig.topiclog.entry import LogEntry
from tests.region.harness import entry


def as_log_entry(data, first=1, count=1):
    return LogEntry(first, first + count - 1, data, 0)


@pytest.mark.parametrize("origin", ["", "a", "asia-east"])
def test_the_via_filter_reads_the_neighbour_an_entry_came_from(origin):
    from_europe = entry(1, [b"x"], origin=origin or "o", via=b"europe")
    here = entry(1, [b"x"], origin=origin or "o")
    came_from_europe = via_filter("europe")
    assert came_from_europe(as_log_entry(from_europe))
    assert came_from_europe(as_log_entry(memoryview(from_europe)))
    assert not came_from_europe(as_log_entry(here))
    assert not via_filter("euro")(as_log_entry(from_europe))
    assert not via_filter("europe-west")(as_log_entry(from_europe))
    assert entry_via(from_europe) == "europe" and entry_via(here) == ""


payloads = st.lists(st.binary(max_size=40), min_size=1, max_size=30)
maybe_properties = st.one_of(
    st.none(),
    st.just("each"),
)


@given(payloads, maybe_properties, st.data())
def test_a_slice_of_a_message_set_is_the_set_of_those_messages(items, with_properties, data):
    properties = None
    if with_properties:
        properties = [{"k": b"%d" % i} if i % 3 else {} for i in range(len(items))]
    message_set = encode_message_set(items, properties)
    start = data.draw(st.integers(0, len(items) - 1))
    stop = data.draw(st.integers(start + 1, len(items)))
    sliced = slice_message_set(message_set, start, stop)
    expected_properties = properties[start:stop] if properties else None
    if expected_properties is not None and not any(expected_properties):
        expected_properties = None
    assert validate_message_set(sliced) == stop - start
    header = encode_entry_header(1, stop - start, 0, b"o", 1)
    got = decode_entry("t", header + sliced)
    assert [bytes(m.payload) for m in got] == items[start:stop]
    if properties:
        assert [m.properties for m in got] == [dict(p) for p in properties[start:stop]]
    if start == 0 and stop == len(items):
        assert sliced == message_set  # whole: the same bytes


def test_a_slice_outside_the_set_is_refused():
    with pytest.raises(ValueError):
        slice_message_set(encode_message_set([b"a", b"b"]), 1, 3)
    with pytest.raises(ValueError):
        slice_message_set(encode_message_set([b"a", b"b"]), 1, 1)


def test_a_relayed_part_knows_its_origin_seq_ids_and_cuts_what_is_held():
    data = entry(40, [b"a", b"b", b"c", b"d"], origin="asia", origin_seq=100)
    part = RelayedPart(data, 1, 4)  # messages 1..3: origin seq-ids 101..103
    assert (part.origin, part.origin_first, part.origin_last, part.count) == ("asia", 101, 103, 4)
    part.drop_through(101)
    assert (part.start, part.origin_first, part.origin_last) == (2, 102, 103)
    part.drop_through(50)  # nothing held in range: unchanged
    assert (part.start, part.origin_first) == (2, 102)
    layout = parse_message_set(data, part.body_offset)
    assert layout.count == 4


@pytest.mark.parametrize(
    ("data", "start", "stop"),
    [
        (entry(1, [b"a"]), 0, 2),
        (entry(1, [b"a"]), 1, 1),
        (entry(1, [b"a"], origin="o")[:20], 0, 1),
    ],
)
def test_a_relayed_part_outside_its_entry_is_malformed(data, start, stop):
    with pytest.raises(MessageSetError) as refused:
        RelayedPart(data, start, stop)
    assert refused.value.status is Status.MALFORMED_REQUEST


def test_an_entry_without_an_origin_cannot_be_relayed():
    data = encode_entry_header(1, 1, 0, b"", 1) + encode_message_set([b"a"])
    with pytest.raises(MessageSetError, match="names no origin"):
        RelayedPart(data, 0, 1)


# -- the link bodies -------------------------------------------------------------------------


def test_region_link_round_trips():
    assert wire.decode_region_link(wire.encode_region_link("paris")) == ("paris", "")
    assert wire.decode_region_link(wire.encode_region_link("paris", "h1:4080")) == ("paris", "h1:4080")
    with pytest.raises(RequestRefused, match="after the hub name"):
        wire.decode_region_link(wire.encode_region_link("paris", "h1:4080") + b"x")
    payload = wire.encode_region_link_reply("europe", ["europe", "world"], True)
    assert wire.decode_region_link_reply(payload) == ("europe", ["europe", "world"], True)
    payload = wire.encode_region_link_reply("b", ["b", "a"], False)
    assert wire.decode_region_link_reply(payload) == ("b", ["b", "a"], False)


@pytest.mark.parametrize(
    "payload",
    [b"", b"\x05eu", b"\x02eu", b"\x02eu\x01", b"\x02eu\x01\x02\x01a", b"\x02eu\x01\x01\x01ab"],
)
def test_a_bad_region_link_reply_is_malformed(payload):
    with pytest.raises(RequestRefused) as refused:
        wire.decode_region_link_reply(payload)
    assert refused.value.status is Status.MALFORMED_REQUEST


def test_relay_publish_carries_a_stored_entry_unchanged():
    data = entry(7, [b"a", b"b"], origin="asia", origin_seq=3)
    parts = wire.relay_publish_parts(9, "orders", 1, 2, data)
    assert parts[-1] is data  # passed through, not copied
    [(op, request_id, body)] = FrameDecoder().feed(b"".join(parts))
    assert (op, request_id) == (Op.RELAY_PUBLISH, 9)
    topic, start, stop, got = wire.decode_relay_publish(body)
    assert (topic, start, stop, bytes(got)) == ("orders", 1, 2, data)


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"\x06orders\x00\x00\x00\x01\x00\x00\x00\x01", Status.MALFORMED_REQUEST),  # empty range
        (b"\x06orders\x00\x00", Status.MALFORMED_REQUEST),
        (b"\x03a b\x00\x00\x00\x00\x00\x00\x00\x01", Status.INVALID_TOPIC),
    ],
)
def test_a_bad_relay_publish_is_refused(body, status):
    with pytest.raises(RequestRefused) as refused:
        wire.decode_relay_publish(body)
    assert refused.value.status is status


def test_interest_frames_split_many_topics_and_round_trip():
    topics = [(f"topic-{i}", 1_700_000_000_000_000 + i) for i in range(wire.INTEREST_TOPICS_PER_FRAME + 5)]
    frames = wire.interest_frames(wire.InterestKind.WANT, topics)
    assert len(frames) == 2
    decoded = FrameDecoder().feed(b"".join(frames))
    got = []
    for op, request_id, body in decoded:
        assert (op, request_id) == (Op.REGION_INTEREST, 0)
        kind, names = wire.decode_interest(body)
        assert kind is wire.InterestKind.WANT
        got += names
    assert got == topics
    [(_op, _id, body)] = FrameDecoder().feed(wire.interest_frames(wire.InterestKind.END, [])[0])
    assert wire.decode_interest(body) == (wire.InterestKind.END, [])
    [(_op, _id, body)] = FrameDecoder().feed(wire.interest_frames(wire.InterestKind.DROP, ["t"])[0])
    assert wire.decode_interest(body) == (wire.InterestKind.DROP, [("t", 0)])


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x09\x00\x00\x00\x00",  # an unknown kind
        b"\x04\x00\x00\x00\x02\x01a" + bytes(8),  # two topics announced, one there
        b"\x04\x00\x00\x00\x00x",  # bytes after the topics
        b"\x04\x00\x00\x00\x01\x01a\x00\x00",  # a topic without its whole time
    ],
)
def test_a_bad_interest_frame_is_malformed(body):
    with pytest.raises(RequestRefused):
        wire.decode_interest(body)


def test_responses_split_into_status_message_and_payload():
    frame = response_frame(3, Op.REGION_LINK, Status.REGION_REFUSED, "cycle: a -> b -> a")
    [(_op, _id, body)] = FrameDecoder().feed(frame)
    op, status, message, payload = split_response(body)
    assert (op, status, message, bytes(payload)) == (
        Op.REGION_LINK,
        Status.REGION_REFUSED,
        "cycle: a -> b -> a",
        b"",
    )
    frame = response_frame(4, Op.RELAY_PUBLISH, payload=b"\x01\x02")
    [(_op, _id, body)] = FrameDecoder().feed(frame)
    assert bytes(split_response(body)[3]) == b"\x01\x02"
    with pytest.raises(RequestRefused):
        split_response(b"\x0b\x00")


@given(payloads, st.data())
def test_a_slice_keeps_keys_and_typed_properties(items, data):
    """A relay cutting the head off an entry keeps each message's key and typed values."""
    count = len(items)
    keys = data.draw(
        st.lists(st.one_of(st.none(), st.binary(min_size=1, max_size=6)), min_size=count, max_size=count)
    )
    typed = data.draw(st.booleans())
    properties = [{"n": i, "s": f"v{i}"} if typed and i % 2 else None for i in range(count)]
    message_set = encode_message_set(items, properties, keys)
    start = data.draw(st.integers(0, count - 1))
    stop = data.draw(st.integers(start + 1, count))
    sliced = slice_message_set(message_set, start, stop)
    assert validate_message_set(sliced) == stop - start
    for codec in (None, "gzip"):
        cut = (
            sliced
            if codec is None
            else slice_message_set(compress_message_set(message_set, codec), start, stop)
        )
        got = decode_entry("t", encode_entry_header(1, stop - start, 0, b"o", 1) + cut)
        assert [bytes(m.payload) for m in got] == items[start:stop]
        assert [m.key for m in got] == keys[start:stop]
        assert [m.properties for m in got] == [p or {} for p in properties[start:stop]]


def test_a_relayed_compressed_set_is_held_to_the_hubs_own_frame_limit():
    """A compressed set's plain size is held to the hub's frame limit at RELAY_PUBLISH as
    at PUBLISH: a hub configured with larger frames than the default takes the relay of
    what its publishers may publish there (held to the default, the link stalled on it)."""
    count = 20
    message_set = compress_message_set(encode_message_set([bytes(1 << 20)] * count), "zstd")
    data = encode_entry_header(1, count, 0, b"leaf", 1) + message_set
    body = wire._str8("big") + wire._RANGE.pack(0, count) + data
    with pytest.raises(RequestRefused) as refused:
        wire.decode_relay_publish(body)  # (the default: 16 MiB)
    assert refused.value.status is Status.MESSAGE_TOO_LARGE
    assert wire.decode_relay_publish(body, 32 << 20)[:3] == ("big", 0, count)
    part = RelayedPart(data, 0, count, 1 << 20, 32 << 20)
    assert (part.count, part.origin_last) == (count, count)
    with pytest.raises(MessageSetError):
        RelayedPart(data, 0, count, 1 << 20, 16 << 20)
