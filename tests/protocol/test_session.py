"""HubSession, the sans-IO protocol session: request ids, pending replies matched to the
driver's context, frames out, and every kind of frame in, fed as bytes."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hedwig.protocol import Op, Status, SubscriptionEvent, decode_entry, encode_frame
from hedwig.protocol.requests import Published
from hedwig.protocol.session import HubSession, ProtocolViolation
from tests.client.hubscript import HubScript


class Recorder:
    def __init__(self):
        self.frames = []
        self.contexts = []

    def response_received(self, request_id, response, context=None):
        self.frames.append(("response", request_id, response))
        self.contexts.append(context)

    def request_received(self, op, request_id, body):
        self.frames.append(("request", op, request_id, bytes(body)))

    def delivery_received(self, handle, start, stop, entry):
        self.frames.append(("delivery", handle, start, stop, bytes(entry)))

    def event_received(self, handle, event):
        self.frames.append(("event", handle, event))


def test_request_ids_count_up_and_wrap_past_zero():
    channel = HubSession(Recorder())
    assert [channel.request(Op.STATS, b"")[0] for _ in range(3)] == [1, 2, 3]
    channel._ids.last = 0xFFFFFFFF  # (the counter hedwig.protocol.request_ids.RequestIds)
    assert channel.request(Op.STATS, b"")[0] == 1


def test_publish_frame_is_what_the_hub_decodes():
    channel = HubSession(Recorder())
    request_id, parts = channel.publish("orders", b"\x01\x00\x00\x00\x00\x01\x00\x00\x00\x02hi")
    [(op, rid, publish)] = HubScript().requests(b"".join(parts))
    assert (op, rid, publish.topic) == (Op.PUBLISH, request_id, "orders")
    assert publish.message_set.endswith(b"hi")


def test_frames_in_reach_the_receiver_in_order_whatever_the_chunking():
    hub = HubScript()
    stream = (
        hub.published(7, 1, 3)
        + hub.delivery(2, 10, [b"a", b"bb", b"ccc"], start=1)
        + hub.event(2, SubscriptionEvent.TOPIC_MOVED)
    )
    for cut in (1, 5, 13, len(stream)):
        recorder = Recorder()
        channel = HubSession(recorder)
        for i in range(0, len(stream), cut):
            channel.data_received(stream[i : i + cut])
        kinds = [frame[0] for frame in recorder.frames]
        assert kinds == ["response", "delivery", "event"]
        response = recorder.frames[0][2]
        assert (recorder.frames[0][1], response.status, response.value) == (
            7,
            Status.SUCCESS,
            Published(1, 3),
        )
        _, handle, start, stop, entry = recorder.frames[1]
        assert (handle, start, stop) == (2, 1, 3)
        assert [m.payload for m in decode_entry("t", entry, start, stop)] == [b"bb", b"ccc"]
        assert recorder.frames[2] == ("event", 2, SubscriptionEvent.TOPIC_MOVED)


def test_error_response_carries_status_and_message():
    recorder = Recorder()
    HubSession(recorder).data_received(
        HubScript.error(4, Op.SUBSCRIBE, Status.TOPIC_BUSY, "attached elsewhere")
    )
    [(_, request_id, response)] = recorder.frames
    assert (request_id, response.status, response.message, response.value) == (
        4,
        Status.TOPIC_BUSY,
        "attached elsewhere",
        None,
    )


@pytest.mark.parametrize(
    "data",
    [
        encode_frame(Op.PUBLISH, 1, b""),  # a request op: no hub sends one
        encode_frame(Op.DELIVERY, 0, b"\x00\x00\x00\x01"),  # shorter than a delivery header
        encode_frame(Op.RESPONSE, 1, b"\x02\x00"),  # shorter than a response header
        b"\x00\x00\x00\x01x",  # a length shorter than any frame
    ],
)
def test_bytes_no_hub_sends_are_a_protocol_violation(data):
    with pytest.raises(ProtocolViolation):
        HubSession(Recorder()).data_received(data)


@given(
    st.lists(st.integers(0, 3000), min_size=1, max_size=8),
    st.lists(st.integers(1, 5000), max_size=30),
)
def test_any_chunking_of_any_deliveries_gives_the_same_frames(sizes, cuts):
    hub = HubScript()
    frames = [hub.delivery(7, 1 + i, [bytes([i % 256]) * size]) for i, size in enumerate(sizes)]
    stream = b"".join(frames) + hub.published(3, 1, 1)
    recorder = Recorder()
    channel = HubSession(recorder)
    position = 0
    for cut in cuts:
        channel.data_received(stream[position : position + cut])
        position += cut
    channel.data_received(stream[position:])
    deliveries = [f for f in recorder.frames if f[0] == "delivery"]
    assert [decode_entry("t", f[4])[0].payload for f in deliveries] == [
        bytes([i % 256]) * size for i, size in enumerate(sizes)
    ]
    assert recorder.frames[-1][0] == "response"


def test_a_frame_over_the_limit_is_a_violation_before_it_arrives():
    channel = HubSession(Recorder(), max_frame_bytes=1000)
    with pytest.raises(ProtocolViolation):
        channel.data_received(HubScript.delivery(1, 1, [b"x" * 10_000])[:100])


def test_a_reply_reaches_the_context_its_request_was_sent_with_once():
    recorder = Recorder()
    session = HubSession(recorder)
    first, _frame = session.request(Op.STATS, b"", context="first")
    second, _parts = session.publish("t", b"\x01\x00\x00\x00\x00\x01\x00\x00\x00\x01x", context="second")
    assert session.pending_count == 2
    hub = HubScript()
    session.data_received(
        hub.published(second, 1, 1) + HubScript.error(first, Op.STATS, Status.TOPIC_BUSY, "no")
    )
    assert [f[1] for f in recorder.frames] == [second, first]  # in arrival order, not request order
    assert recorder.contexts == ["second", "first"]
    assert session.pending_count == 0
    session.data_received(hub.published(second, 1, 1))  # a reply twice: nobody waits for it
    assert recorder.contexts[-1] is None


def test_forgotten_and_unsent_replies_reach_no_context():
    recorder = Recorder()
    session = HubSession(recorder)
    request_id, _frame = session.request(Op.STATS, b"", context="waiting")
    assert session.forget(request_id) == "waiting" and session.forget(request_id) is None
    consume = session.send(Op.CONSUME, b"\x00" * 12)  # answered only when it fails
    [(_op, consume_id, _body)] = HubScript().requests(consume)
    session.data_received(HubScript.error(consume_id, Op.CONSUME, Status.CLIENT_NOT_SUBSCRIBED, "gone"))
    session.data_received(HubScript.error(request_id, Op.STATS, Status.TOPIC_BUSY, "late"))
    assert recorder.contexts == [None, None]


def test_take_pending_hands_back_every_waiting_context_once():
    session = HubSession(Recorder())
    for name in ("a", "b", "c"):
        session.request(Op.STATS, b"", context=name)
    assert sorted(session.take_pending()) == ["a", "b", "c"]
    assert session.take_pending() == [] and session.pending_count == 0


def test_raw_responses_keep_the_payload_for_the_driver_to_decode():
    recorder = Recorder()
    session = HubSession(recorder, raw_responses=True)
    request_id, _frame = session.request(Op.PUBLISH, b"", context="relay")
    session.data_received(HubScript().published(request_id, 5, 9))
    [(_kind, rid, (op, status, message, payload))] = recorder.frames
    assert (rid, op, status, message) == (request_id, Op.PUBLISH, Status.SUCCESS, "")
    assert bytes(payload) == (5).to_bytes(8, "big") + (9).to_bytes(8, "big")


def test_requests_from_the_peer_only_for_the_ops_the_session_accepts():
    recorder = Recorder()
    accepting = HubSession(recorder, accepts={Op.STATS})
    accepting.data_received(encode_frame(Op.STATS, 12, b"body"))
    assert recorder.frames == [("request", Op.STATS, 12, b"body")]
    with pytest.raises(ProtocolViolation, match="unexpected op"):
        HubSession(Recorder()).data_received(encode_frame(Op.STATS, 12, b"body"))
