"""Frame splitting across arbitrary chunk boundaries, and its limits."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hedwig.protocol import (
    FrameDecoder,
    FrameError,
    FrameTooLarge,
    Op,
    delivery_header,
    encode_event,
    encode_frame,
)
from hedwig.protocol.framing import DELIVERY_HEAD, EVENT_HEAD, LARGE_FRAME_BYTES
from hedwig.protocol.names import InvalidName, check_subscriber_id, check_topic


@given(st.lists(st.binary(max_size=50), max_size=10), st.lists(st.integers(1, 40), max_size=20))
def test_frames_survive_any_chunking(bodies, cuts):
    stream = b"".join(encode_frame(Op.PUBLISH, i + 1, body) for i, body in enumerate(bodies))
    decoder = FrameDecoder(max_frame_bytes=100)
    frames, position = [], 0
    for cut in cuts:
        frames += decoder.feed(stream[position : position + cut])
        position += cut
        assert decoder.partial == (decoder.frame_in_progress > 0)
    frames += decoder.feed(stream[position:])
    assert frames == [(Op.PUBLISH, i + 1, body) for i, body in enumerate(bodies)]
    assert all(type(body) is bytes for _op, _id, body in frames)
    assert decoder.buffered == 0 and not decoder.partial


@pytest.mark.parametrize("read", [bytes, bytearray, memoryview])
def test_a_read_of_one_whole_frame_decodes_as_any_other(read):
    """(A whole frame read as bytes into an empty decoder is taken without the buffer.)"""
    decoder = FrameDecoder(max_frame_bytes=100)
    assert decoder.feed(read(encode_frame(Op.PUBLISH, 7, b"body"))) == [(Op.PUBLISH, 7, b"body")]
    assert not decoder.partial and decoder.frame_in_progress == 0
    assert decoder.feed(read(encode_frame(Op.PUBLISH, 8, b"")[:6])) == [] and decoder.partial
    assert decoder.feed(read(encode_frame(Op.PUBLISH, 8, b"")[6:])) == [(Op.PUBLISH, 8, b"")]
    with pytest.raises(FrameTooLarge):
        decoder.feed(read(encode_frame(Op.PUBLISH, 9, b"x" * 100)))


def test_oversized_frame_is_refused_before_its_body_arrives():
    decoder = FrameDecoder(max_frame_bytes=64)
    with pytest.raises(FrameTooLarge):
        decoder.feed(encode_frame(Op.PUBLISH, 1, b"x" * 100)[:9])


def test_length_shorter_than_a_header_is_an_error():
    with pytest.raises(FrameError):
        FrameDecoder().feed(b"\x00\x00\x00\x02ab")


@pytest.mark.parametrize("name", ["", "a b", "x" * 256, "tópic", "a/b"])
def test_bad_topic_names(name):
    with pytest.raises(InvalidName):
        check_topic(name)


def test_good_names_and_reserved_subscribers():
    assert check_topic("logs.web-01_x") == "logs.web-01_x"
    assert check_topic("x" * 255) == "x" * 255
    with pytest.raises(InvalidName, match="reserved"):
        check_subscriber_id("__region__eu")
    assert check_subscriber_id("__region__eu", allow_reserved=True) == "__region__eu"


def test_a_framing_error_carries_the_whole_frames_before_it():
    good = encode_frame(Op.PUBLISH, 3, b"body")
    with pytest.raises(FrameTooLarge) as caught:
        FrameDecoder(max_frame_bytes=64).feed(good + encode_frame(Op.PUBLISH, 4, b"x" * 100))
    assert caught.value.frames == [(Op.PUBLISH, 3, b"body")]


HEADS = {Op.DELIVERY: DELIVERY_HEAD, Op.EVENT: EVENT_HEAD}


@given(st.lists(st.integers(0, 3000), min_size=1, max_size=6), st.lists(st.integers(1, 4000), max_size=20))
def test_a_decoder_with_heads_cuts_them_off_whatever_the_reads(sizes, cuts):
    """(The client's: a DELIVERY's entry comes out copied once, behind its unpacked head.)"""
    frames = [delivery_header(7, 0, i, size) + bytes([i]) * size for i, size in enumerate(sizes)]
    stream = b"".join(frames) + encode_event(7, 2) + encode_frame(Op.RESPONSE, 3, b"r")
    decoder = FrameDecoder(max_frame_bytes=4096, heads=HEADS)
    out, position = [], 0
    for cut in cuts:
        out += decoder.feed(stream[position : position + cut])
        position += cut
    out += decoder.feed(stream[position:])
    assert out == [
        *((Op.DELIVERY, 0, ((7, 0, i), bytes([i]) * size)) for i, size in enumerate(sizes)),
        (Op.EVENT, 0, ((7, 2), b"")),
        (Op.RESPONSE, 3, b"r"),
    ]
    assert all(type(body[1]) is bytes for op, _id, body in out if op == Op.DELIVERY)


def test_a_large_frame_is_cut_by_its_head_too():
    entry = b"e" * (LARGE_FRAME_BYTES + 10)
    frame = delivery_header(3, 1, 2, len(entry)) + entry
    decoder = FrameDecoder(max_frame_bytes=2 * LARGE_FRAME_BYTES, heads=HEADS)
    assert decoder.feed(frame[:1000]) == [] and decoder.partial
    [(op, request_id, (head, rest))] = decoder.feed(frame[1000:])
    assert (op, request_id, head, rest == entry) == (Op.DELIVERY, 0, (3, 1, 2), True)


def test_a_body_shorter_than_its_head_is_a_framing_error_after_the_frames_before_it():
    good = encode_frame(Op.RESPONSE, 1, b"ok")
    with pytest.raises(FrameError, match="DELIVERY shorter") as caught:
        FrameDecoder(heads=HEADS).feed(good + encode_frame(Op.DELIVERY, 0, b"\x00" * 11))
    assert caught.value.frames == [(Op.RESPONSE, 1, b"ok")]


class Subscriber:
    def __init__(self):
        self.deliveries = []

    def on_delivery(self, start, stop, entry):
        self.deliveries.append((start, stop, entry))


def test_the_deliveries_reader_takes_a_read_of_one_whole_delivery_and_leaves_the_rest():
    decoder = FrameDecoder(heads=HEADS)
    subscriber, others = Subscriber(), []
    subscribers = {7: subscriber}
    read = decoder.deliveries_reader(subscribers, others.append, None)
    read(delivery_header(7, 2, 5, 3) + b"abc")
    read(delivery_header(8, 0, 1, 1) + b"x")  # (a handle nobody holds: to nobody)
    two = delivery_header(7, 0, 1, 1) + b"y" + delivery_header(7, 1, 2, 1) + b"z"
    read(two)  # (two frames: the decoder's loop, through `otherwise`)
    assert subscriber.deliveries == [(2, 5, b"abc")]
    assert others == [two]
    decoder.feed(two[:5])  # (half a frame held: the next read goes to `otherwise` too)
    read(delivery_header(7, 0, 1, 1) + b"w")
    assert len(others) == 2 and len(subscriber.deliveries) == 1


def test_the_deliveries_reader_takes_a_read_of_one_whole_response_to_its_request_id():
    decoder = FrameDecoder(heads=HEADS)
    responses, others = [], []
    read = decoder.deliveries_reader(
        {}, others.append, lambda request_id, body: responses.append((request_id, body))
    )
    published = encode_frame(Op.RESPONSE, 9, b"p" * 21)
    read(published)
    short = encode_frame(Op.RESPONSE, 10, b"s")  # (shorter than a DELIVERY's head: the loop)
    read(short)
    event = encode_frame(Op.EVENT, 0, b"e" * 21)  # (a whole frame of another op: the loop)
    read(event)
    read(published + published)  # (two frames: the loop)
    assert responses == [(9, b"p" * 21)]
    assert others == [short, event, published + published]


def test_frames_one_at_a_time_come_before_the_error_they_precede():
    """(A client's session hands each frame on as it is cut: FrameDecoder.frames.)"""
    decoder = FrameDecoder(max_frame_bytes=64)
    stream = (
        encode_frame(Op.RESPONSE, 1, b"a")
        + encode_frame(Op.RESPONSE, 2, b"b")
        + encode_frame(Op.RESPONSE, 3, b"x" * 100)
    )
    taken = []
    with pytest.raises(FrameTooLarge):
        for frame in decoder.frames(stream):
            taken.append(frame)
    assert taken == [(Op.RESPONSE, 1, b"a"), (Op.RESPONSE, 2, b"b")]


def test_a_frame_split_across_reads_is_joined_once_with_what_follows_it_cut_in_place():
    first, second = encode_frame(Op.PUBLISH, 1, b"x" * 300), encode_frame(Op.PUBLISH, 2, b"y" * 10)
    decoder = FrameDecoder()
    assert decoder.feed(first[:100]) == [] and decoder.frame_in_progress == len(first)
    assert decoder.feed(first[100:] + second + second[:3]) == [
        (Op.PUBLISH, 1, b"x" * 300),
        (Op.PUBLISH, 2, b"y" * 10),
    ]
    assert decoder.partial and decoder.buffered == 3 and decoder.frame_in_progress == 3
    assert decoder.feed(second[3:]) == [(Op.PUBLISH, 2, b"y" * 10)] and not decoder.partial
