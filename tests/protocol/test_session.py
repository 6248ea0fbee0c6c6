"""HubSession, the sans-IO protocol session: request ids, pending replies matched to the
driver's context, subscriptions by handle with their positions, frames out, and every
kind of frame in, fed as bytes."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from zope.interface import implementer
from zope.interface.verify import verifyObject

from hedwig.protocol import Op, Status, SubscriptionEvent, decode_entry, encode_frame
from hedwig.protocol.position import SubscriptionPosition
from hedwig.protocol.requests import Published
from hedwig.protocol.responses import decode_response, published_response, response_frame
from hedwig.protocol.session import HubSession, ISubscriber, ProtocolViolation
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


@implementer(ISubscriber)
class Subscriber:
    """An ISubscriber recording its frames in a Recorder's list, named by the handle the
    hub gave it."""

    def __init__(self, recorder):
        self.frames = recorder.frames
        self.handle = None

    def on_attached(self, driver, subscribed):
        self.handle = subscribed.handle
        self.frames.append(("attached", driver, subscribed.handle))

    def on_delivery(self, start, stop, entry):
        self.frames.append(("delivery", self.handle, start, stop, bytes(entry)))

    def on_event(self, event):
        self.frames.append(("event", self.handle, event))

    def on_detached(self):
        self.frames.append(("detached", self.handle))


def position(topic="t", mode="create_or_attach", start="earliest", window=0):
    return SubscriptionPosition(topic, "s", mode, start, window, False, ack_every=10)


def attach(session, recorder, handle, consumed=0, next_seq=1, topic="t"):
    """A subscriber attached with `handle`, as the hub answers its SUBSCRIBE; the frames
    recorded so far are cleared."""
    subscriber = Subscriber(recorder)
    request_id, _frame = session.subscribe(position(topic), subscriber)
    session.data_received(HubScript.subscribed(request_id, handle, consumed, next_seq))
    recorder.frames.clear()
    recorder.contexts.clear()
    return subscriber


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
        attach(channel, recorder, 2)
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
    attach(channel, recorder, 7)
    offset = 0
    for cut in cuts:
        channel.data_received(stream[offset : offset + cut])
        offset += cut
    channel.data_received(stream[offset:])
    deliveries = [f for f in recorder.frames if f[0] == "delivery"]
    assert [decode_entry("t", f[4])[0].payload for f in deliveries] == [
        bytes([i % 256]) * size for i, size in enumerate(sizes)
    ]
    assert recorder.frames[-1][0] == "response"


def test_a_read_of_one_whole_delivery_gives_what_any_other_read_gives():
    """A read that is exactly one DELIVERY frame (a subscriber keeping up with a stream)
    is handed over without the frame loop: the same on_delivery, in the same order, as
    the frames read together; one for a released handle reaches nobody."""
    hub = HubScript()
    frames = [hub.delivery(7, 1 + i, [bytes([i]) * i] * (1 + i % 3)) for i in range(5)]
    together, apart = Recorder(), Recorder()
    for recorder, reads in ((together, [b"".join(frames)]), (apart, frames)):
        channel = HubSession(recorder)
        attach(channel, recorder, 7)
        for read in reads:
            channel.data_received(read)
        channel.data_received(hub.delivery(8, 9, [b"nobody's"]))  # (no subscriber has handle 8)
    assert len(apart.frames) == 5
    assert apart.frames == together.frames


def test_a_whole_delivery_over_the_limit_is_a_violation():
    channel = HubSession(Recorder(), max_frame_bytes=1000)
    with pytest.raises(ProtocolViolation):
        channel.data_received(HubScript.delivery(1, 1, [b"x" * 10_000]))


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


# -- subscriptions ---------------------------------------------------------------------------


def test_subscribe_sends_what_the_position_asks_and_attaches_before_the_reply():
    recorder = Recorder()
    session = HubSession(recorder)
    asked = position("orders", mode="create", start=("seq", 5), window=7)
    subscriber = Subscriber(recorder)
    verifyObject(ISubscriber, subscriber)
    request_id, frame = session.subscribe(asked, subscriber, context="caller")
    [(op, rid, subscribe)] = HubScript().requests(frame)
    assert (op, rid) == (Op.SUBSCRIBE, request_id)
    assert (subscribe.topic, subscribe.subscriber_id, subscribe.mode, subscribe.window) == (
        "orders",
        "s",
        "create",
        7,
    )
    hub = HubScript()
    # The reply and a delivery of its handle in one read: the delivery is the subscriber's.
    session.data_received(hub.subscribed(request_id, 9, 4, 5) + hub.delivery(9, 5, [b"m"]))
    assert [f[0] for f in recorder.frames] == ["attached", "response", "delivery"]
    assert recorder.frames[0] == ("attached", recorder, 9) and recorder.contexts == ["caller"]
    assert (asked.subscribed, asked.acked, asked.received_through) == (True, 4, 4)
    assert session.subscriber(9) is subscriber
    # Resuming asks for the first seq-id not acknowledged.
    asked.ack(6)
    _rid, again = session.subscribe(asked, Subscriber(recorder))
    [(_op, _rid2, resubscribe)] = hub.requests(again)
    assert resubscribe.mode == "attach" and resubscribe.start == ("seq", 7)


def test_a_refused_or_forgotten_subscribe_attaches_nothing():
    recorder = Recorder()
    session = HubSession(recorder)
    refused, forgotten = position(), position()
    refused_id, _ = session.subscribe(refused, Subscriber(recorder), context="a")
    forgotten_id, _ = session.subscribe(forgotten, Subscriber(recorder), context="b")
    assert session.forget(forgotten_id) == "b"
    hub = HubScript()
    session.data_received(
        HubScript.error(refused_id, Op.SUBSCRIBE, Status.TOPIC_BUSY, "busy")
        + hub.subscribed(forgotten_id, 3, 0, 1)  # answered after its caller gave up
        + hub.delivery(3, 1, [b"for nobody"])
    )
    assert [f[0] for f in recorder.frames] == ["response", "response"]
    assert recorder.contexts == ["a", None]
    assert not refused.subscribed and not forgotten.subscribed and session.subscriber(3) is None


def test_events_release_and_a_lost_connection_end_what_reaches_a_subscriber():
    recorder = Recorder()
    session = HubSession(recorder)
    moved = attach(session, recorder, 1)
    released = attach(session, recorder, 2)
    attach(session, recorder, 3)
    hub = HubScript()
    session.release(released.handle)
    session.data_received(
        hub.event(1, SubscriptionEvent.TOPIC_MOVED)
        + hub.delivery(1, 1, [b"after the event"])  # the handle is free: nobody's
        + hub.delivery(2, 1, [b"after release"])
        + hub.delivery(3, 1, [b"x"])
    )
    assert [f[:4] for f in recorder.frames] == [
        ("event", 1, SubscriptionEvent.TOPIC_MOVED),
        ("delivery", 3, 0, 1),
    ]
    assert [m.payload for m in decode_entry("t", recorder.frames[1][4])] == [b"x"]
    recorder.frames.clear()
    session.detach_all()
    session.detach_all()  # (once only)
    assert recorder.frames == [("detached", 3)]
    assert moved.handle == 1 and session.subscriber(3) is None


def test_raw_responses_attach_too_and_a_bad_subscribe_reply_is_a_violation():
    recorder = Recorder()
    session = HubSession(recorder, raw_responses=True)
    subscriber = Subscriber(recorder)
    request_id, _ = session.subscribe(position(), subscriber, context="link")
    session.data_received(HubScript.subscribed(request_id, 4, 0, 1))
    assert recorder.frames[0] == ("attached", recorder, 4) and recorder.frames[1][0] == "response"
    bad_id, _ = session.subscribe(position(), Subscriber(recorder))
    with pytest.raises(ProtocolViolation, match="SUBSCRIBE reply"):
        session.data_received(HubScript.ok(bad_id, Op.SUBSCRIBE, b"short"))


def test_consume_frames_name_the_handle_and_seq():
    session = HubSession(Recorder())
    [(op, _rid, consume)] = HubScript().requests(session.consume(5, 42))
    assert (op, consume.handle, consume.seq) == (Op.CONSUME, 5, 42)


def test_a_published_reply_reaches_the_driver_as_any_response_would():
    """PUBLISHED, the one-message path's reply, is decoded with one unpack: the same
    Response decode_response makes, with the context given; a refusal of a PUBLISH is
    decoded the general way."""
    recorder = Recorder()
    channel = HubSession(recorder)
    stored, _frame = channel.publish_one("t", b"x", "stored")
    refused, _frame = channel.publish_one("t", b"x", "refused")
    replies = [published_response(stored, 7, 7), response_frame(refused, Op.PUBLISH, Status.TOPIC_BUSY, "x")]
    channel.data_received(b"".join(replies))
    assert recorder.frames == [
        ("response", stored, decode_response(replies[0][9:])),
        ("response", refused, decode_response(replies[1][9:])),
    ]
    assert recorder.frames[0][2].value == Published(7, 7) and recorder.frames[0][2].status is Status.SUCCESS
    assert recorder.contexts == ["stored", "refused"]
