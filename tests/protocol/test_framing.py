"""Frame splitting across arbitrary chunk boundaries, and its limits."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hedwig.protocol import FrameDecoder, FrameError, FrameTooLarge, Op, encode_frame
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
