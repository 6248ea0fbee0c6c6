"""Large frames (LARGE_FRAME_BYTES and up) are gathered in a memory map of their own: the
decoder yields the same frames whatever the reads' boundaries, reports the frame in
progress for the hub's intake budget, and gives a dropped frame's memory back."""

import random

from hypothesis import given
from hypothesis import strategies as st

from hedwig.protocol.framing import LARGE_FRAME_BYTES, FrameDecoder, FrameError, encode_frame
from hedwig.protocol.ops import Op

_SIZES = st.sampled_from([0, 1, 100, LARGE_FRAME_BYTES - 9, LARGE_FRAME_BYTES - 5, LARGE_FRAME_BYTES + 17])


@given(sizes=st.lists(_SIZES, min_size=1, max_size=5), seed=st.integers(0, 2**32))
def test_frames_come_out_whole_whatever_the_reads(sizes, seed):
    rng = random.Random(seed)
    frames = [(Op.PUBLISH, i, rng.randbytes(size)) for i, size in enumerate(sizes)]
    stream = b"".join(encode_frame(*frame) for frame in frames)
    decoder = FrameDecoder(4 * LARGE_FRAME_BYTES)
    got, position = [], 0
    while position < len(stream):
        step = rng.choice([1, 3, 4, 9, 1000, 65536, 3 * LARGE_FRAME_BYTES])
        got += decoder.feed(stream[position : position + step])
        position += step
    assert [(op, request_id, bytes(body)) for op, request_id, body in got] == frames
    assert decoder.buffered == decoder.frame_in_progress == 0


def test_a_large_frame_in_progress_is_reported_and_dropped():
    decoder = FrameDecoder(4 * LARGE_FRAME_BYTES)
    frame = encode_frame(Op.PUBLISH, 7, bytes(2 * LARGE_FRAME_BYTES))
    assert decoder.feed(frame[:1000]) == []
    assert (decoder.buffered, decoder.frame_in_progress) == (1000, len(frame))
    decoder.clear()
    assert (decoder.buffered, decoder.frame_in_progress) == (0, 0)
    assert decoder.feed(encode_frame(Op.STATS, 8)) == [(Op.STATS, 8, b"")]


def test_a_bad_header_after_a_large_frame_keeps_the_large_frame():
    decoder = FrameDecoder(4 * LARGE_FRAME_BYTES)
    frame = encode_frame(Op.PUBLISH, 7, bytes(LARGE_FRAME_BYTES))
    decoder.feed(frame[:10])
    try:
        decoder.feed(frame[10:] + b"\x00\x00\x00\x01")
    except FrameError as e:
        assert [(op, request_id, len(body)) for op, request_id, body in e.frames] == [
            (Op.PUBLISH, 7, LARGE_FRAME_BYTES)
        ]
    else:
        raise AssertionError("a frame length of 1 was taken")
