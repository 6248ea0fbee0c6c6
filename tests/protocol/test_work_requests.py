"""The requests of shared and pull subscriptions on the wire, and the session's part:
SUBSCRIBE's options block, ACK / NACK ranges, FETCH, REDELIVERY frames and the events
that do not end a subscription; each decoded from bytes, each malformed body refused."""

import struct

import pytest
from zope.interface import implementer

from hedwig.protocol import (
    Op,
    Status,
    SubscriptionEvent,
    encode_entry_header,
    encode_frame,
    encode_message_set,
)
from hedwig.protocol.framing import encode_event
from hedwig.protocol.layouts import HELLO_REPLY, RequestRefused, str8
from hedwig.protocol.ops import HUB_FEATURE_SUBSETS
from hedwig.protocol.requests import (
    Subscribe,
    decode_hello_reply,
    decode_subscribe,
    encode_hello,
    encode_hello_reply,
    encode_subscribe,
    encode_subscribe_request,
)
from hedwig.protocol.responses import response_frame
from hedwig.protocol.session import HubSession, ISharedSubscriber, ProtocolViolation
from hedwig.protocol.shared_position import SharedPosition
from hedwig.protocol.work_requests import (
    MAX_RANGES,
    SubscribeOptions,
    check_fetch,
    decode_fetch,
    decode_ranges,
    encode_fetch,
    encode_ranges,
    redelivery_header,
    selected_indexes,
    selection_of,
    subset_header,
)
from tests.client.hubscript import HubScript
from tests.protocol.test_session import Recorder, Subscriber, attach

OLD_TAIL = struct.pack("!BBQBI", 3, 0, 0, 0, 0)  # create_or_attach, default start, no flags


def test_a_subscribe_without_options_is_the_body_of_old():
    assert encode_subscribe("t", "s") == b"\x01t\x01s" + OLD_TAIL
    assert encode_subscribe("t", "s", message_bound=None, kind="exclusive") == b"\x01t\x01s" + OLD_TAIL


@pytest.mark.parametrize(
    "request_",
    [
        Subscribe("t", "s", kind="shared"),
        Subscribe("t", "s", kind="key_shared", max_deliveries=3),
        Subscribe("t", "s", kind="shared", pull=True, window=5, ack_timeout_ms=1500, max_deliveries=4),
        Subscribe("t", "s", pull=True, dead_letter_topic="dead.letters", max_deliveries=1),
        Subscribe("t", "s", message_bound=1000),
        Subscribe("t", "s", deliver=False, message_bound=7),
    ],
)
def test_subscribe_options_round_trip(request_):
    assert decode_subscribe(encode_subscribe_request(request_)) == request_


def options_body(kind=1, delivery=0, ack_timeout=0, max_deliveries=0, bound=0, dlq=b"", flags=0x08):
    head = b"\x01t\x01s" + struct.pack("!BBQBI", 3, 0, 0, flags, 0)
    return (
        head
        + struct.pack("!BBIIQ", kind, delivery, ack_timeout, max_deliveries, bound)
        + bytes([len(dlq)])
        + dlq
    )


@pytest.mark.parametrize(
    "body, status, match",
    [
        (options_body(kind=3), Status.MALFORMED_REQUEST, "kind"),
        (options_body(delivery=2), Status.MALFORMED_REQUEST, "delivery"),
        (options_body(dlq=b"bad topic"), Status.INVALID_TOPIC, "dead-letter topic"),
        (options_body(kind=0, ack_timeout=10), Status.MALFORMED_REQUEST, "shared or pull"),
        (options_body(flags=0x0C), Status.MALFORMED_REQUEST, "acknowledgement-only"),
        (options_body() + b"x", Status.MALFORMED_REQUEST, "unexpected bytes"),
        (options_body()[:-5], Status.MALFORMED_REQUEST, "needs"),
        (options_body(bound=2**63), Status.MALFORMED_REQUEST, "message_bound"),
    ],
)
def test_malformed_subscribe_options_are_refused(body, status, match):
    with pytest.raises(RequestRefused, match=match) as refused:
        decode_subscribe(body)
    assert refused.value.status == status


def test_ack_and_nack_bodies_carry_ranges():
    body = encode_ranges(9, [(1, 1), (5, 9)])
    assert body == struct.pack("!IHQQQQ", 9, 2, 1, 1, 5, 9)
    assert decode_ranges(body, "ACK") == (9, [(1, 1), (5, 9)])


@pytest.mark.parametrize(
    "body, match",
    [
        (struct.pack("!IH", 1, 0), "no seq-id range"),
        (struct.pack("!IHQQ", 1, 1, 5, 4), "not a range"),
        (struct.pack("!IHQQ", 1, 1, 0, 4), "not a range"),
        (struct.pack("!IHQQ", 1, 1, 1, 2**63), "not a range"),
        (struct.pack("!IHQQ", 1, 2, 1, 2), "ACK body"),
        (struct.pack("!IHQQ", 1, 1, 1, 2) + b"\x00", "unexpected bytes"),
        (b"\x00\x00", "needs 6 bytes"),
    ],
)
def test_malformed_ranges_are_refused(body, match):
    with pytest.raises(RequestRefused, match=match) as refused:
        decode_ranges(body, "ACK")
    assert refused.value.status == Status.MALFORMED_REQUEST


def test_fetch_asks_for_at_least_one_message():
    assert decode_fetch(encode_fetch(3, 10, 2500)) == (3, 10, 2500)
    with pytest.raises(RequestRefused, match="at least 1"):
        decode_fetch(encode_fetch(3, 0, 2500))
    with pytest.raises(RequestRefused):
        decode_fetch(encode_fetch(3, 1, 1) + b"\x00")


# -- the session ------------------------------------------------------------------------------


@implementer(ISharedSubscriber)
class SharedSubscriber(Subscriber):
    def on_redelivery(self, start, stop, entry, count):
        self.frames.append(("redelivery", self.handle, start, stop, count))

    def on_subset(self, start, stop, selection, entry):
        self.frames.append(("subset", self.handle, start, stop, bytes(selection), bytes(entry)))


def entry_bytes(first_seq, payloads):
    return encode_entry_header(first_seq, len(payloads), 0, b"", first_seq) + encode_message_set(payloads)


def redelivery(handle, first_seq, payloads, start, stop, count):
    entry = entry_bytes(first_seq, payloads)
    return redelivery_header(handle, start, stop, count, len(entry)) + entry


def test_a_redelivery_reaches_a_shared_subscriber_with_its_count():
    recorder = Recorder()
    session = HubSession(recorder)
    subscriber = SharedSubscriber(recorder)
    request_id, _ = session.subscribe(
        SharedPosition("t", "s", "create_or_attach", None, 0, False, SubscribeOptions("shared")), subscriber
    )
    session.data_received(HubScript.subscribed(request_id, 4, 0, 1))
    recorder.frames.clear()
    session.data_received(redelivery(4, 10, [b"a", b"b", b"c"], 1, 3, 5))
    assert recorder.frames == [("redelivery", 4, 1, 3, 5)]


def test_a_redelivery_for_an_exclusive_subscription_is_a_protocol_violation():
    recorder = Recorder()
    session = HubSession(recorder)
    attach(session, recorder, 2)
    with pytest.raises(ProtocolViolation, match="exclusive"):
        session.data_received(redelivery(2, 1, [b"a"], 0, 1, 2))
    with pytest.raises(ProtocolViolation, match="shorter"):
        HubSession(recorder).data_received(encode_frame(Op.REDELIVERY, 0, b"\x00" * 12))


def test_fetch_done_leaves_the_subscription_attached_and_other_events_end_it():
    recorder = Recorder()
    session = HubSession(recorder)
    attach(session, recorder, 3)
    session.data_received(encode_event(3, SubscriptionEvent.FETCH_DONE) + HubScript.delivery(3, 1, [b"x"]))
    assert [frame[0] for frame in recorder.frames] == ["event", "delivery"]
    session.data_received(encode_event(3, SubscriptionEvent.TOPIC_MOVED) + HubScript.delivery(3, 2, [b"y"]))
    assert [frame[0] for frame in recorder.frames] == ["event", "delivery", "event"], "the handle is free"
    assert session.subscriber(3) is None


def test_acks_are_sent_as_ranges_in_as_many_frames_as_they_need():
    session = HubSession(Recorder())
    many = [(2 * i + 1, 2 * i + 1) for i in range(MAX_RANGES + 3)]
    frames = HubScript().requests(session.ack(7, many))
    assert [op for op, _, _ in frames] == [Op.ACK, Op.ACK]
    decoded = [decode_ranges(body, "ACK") for _, _, body in frames]
    assert [len(d.ranges) for d in decoded] == [MAX_RANGES, 3]
    assert decoded[0].handle == decoded[1].handle == 7
    [(op, _, body)] = HubScript().requests(session.nack(7, [(4, 4)]))
    assert (op, decode_ranges(body, "NACK").ranges) == (Op.NACK, [(4, 4)])


# -- the client's position ------------------------------------------------------------------------


def shared_position(**kw):
    options = SubscribeOptions(kw.pop("kind", "shared"), kw.pop("pull", False))
    return SharedPosition(
        "t", "s", kw.pop("mode", "create"), ("seq", 3), kw.pop("window", 0), False, options, **kw
    )


def test_acks_batch_as_ranges_and_go_out_every_ack_every():
    position = shared_position(ack_every=5)
    assert [position.ack(seq) for seq in (1, 2, 3, 7)] == [None] * 4
    assert position.ack_due
    assert position.ack(8) == [[1, 3], [7, 8]]
    assert not position.ack_due and position.unsent_ack() is None
    position.ack(4)
    ranges = position.unsent_ack()
    position.not_sent(ranges)
    assert position.unsent_ack() == [[4, 4]], "what could not be sent is due again"
    assert position.acked_count == 6


def test_a_shared_position_attaches_again_as_it_is_and_never_drops_a_redelivery():
    position = shared_position(window=10)
    assert position.ack_every == 5, "before the window closes"
    first = position.subscribe_request()
    assert (first.mode, first.start, first.kind) == ("create", ("seq", 3), "shared")
    position.on_subscribed(None)
    again = position.subscribe_request()
    assert (again.mode, again.start) == ("attach", None), "a start applies when it is created"
    entry = entry_bytes(5, [b"a", b"b"])
    assert [(m.seq, m.delivery_count) for m in position.messages(0, 2, entry)] == [(5, 1), (6, 1)]
    assert [(m.seq, m.delivery_count) for m in position.messages(0, 2, entry, 3)] == [(5, 3), (6, 3)]


@pytest.mark.parametrize(
    "max_messages, timeout", [(0, 1.0), (2**32, 1.0), (1.5, 1.0), (1, -1), (1, None), (1, "1")]
)
def test_a_fetch_the_wire_cannot_carry_is_refused_before_it_is_sent(max_messages, timeout):
    with pytest.raises(ValueError):
        check_fetch(max_messages, timeout)


# -- SUBSET_DELIVERY: a key_shared member's keys of an entry in one frame -------------------------


def test_a_selection_is_a_bit_per_message_from_start_made_per_run():
    selection = selection_of([(3, 4), (7, 7), (10, 12)], 2, 14)
    assert selection == bytes([0b00100110, 0b00000111])  # (bit i: message 2 + i)
    assert selected_indexes(2, 14, selection) == [3, 4, 7, 10, 11, 12]
    everything = selection_of([(0, 999)], 0, 1000)
    assert selected_indexes(0, 1000, everything) == list(range(1000))


@pytest.mark.parametrize(
    ("start", "stop", "selection", "match"),
    [
        (0, 9, b"\x01", "selection of 1 bytes"),  # (9 messages need 2 bytes)
        (0, 8, b"\x00", "picking nothing"),
        (0, 3, b"\x08", "past its stop"),
        (5, 4, b"", "selection of 0 bytes"),
    ],
)
def test_a_selection_that_does_not_fit_its_messages_is_refused(start, stop, selection, match):
    with pytest.raises(RequestRefused, match=match):
        selected_indexes(start, stop, selection)


def subset_frame(handle, first_seq, payloads, start, stop, selection, keys=None):
    entry = encode_entry_header(first_seq, len(payloads), 0, b"", first_seq) + encode_message_set(
        payloads, keys=keys
    )
    return subset_header(handle, start, stop, selection, len(entry)) + entry, entry


def greeted(session, reply=None):
    """`session` after the hub answered its HELLO with `reply` (this hub's, by default)."""
    request_id, _frame = session.request(Op.HELLO, encode_hello("test"))
    if reply is None:
        reply = encode_hello_reply("standalone", "127.0.0.1:4080", 16 << 20, 1 << 20)
    session.data_received(response_frame(request_id, Op.HELLO, payload=reply))
    return session


# A HELLO reply as a hub older than its features field sends it: ending at hub_name.
OLDER_HELLO_REPLY = HELLO_REPLY.pack(1, 16 << 20, 1 << 20) + str8("standalone") + str8("127.0.0.1:4080")


def key_shared_session(recorder, handle, hello_reply=None):
    session = greeted(HubSession(recorder), hello_reply)
    subscriber = SharedSubscriber(recorder)
    options = SubscribeOptions("key_shared")
    position = SharedPosition("t", "s", "create_or_attach", None, 0, False, options)
    request_id, frame = session.subscribe(position, subscriber)
    session.data_received(HubScript.subscribed(request_id, handle, 0, 1))
    recorder.frames.clear()
    return session, position, frame


def test_a_subset_delivery_reaches_its_subscriber_with_its_selection_and_entry():
    recorder = Recorder()
    session, _position, _ = key_shared_session(recorder, 6)
    selection = selection_of([(1, 1), (3, 4)], 1, 5)
    frame, entry = subset_frame(6, 20, [b"a", b"b", b"c", b"d", b"e"], 1, 5, selection)
    session.data_received(frame + frame[:10])  # (and the start of the next: the frame loop)
    session.data_received(frame[10:])
    assert recorder.frames == [("subset", 6, 1, 5, selection, entry)] * 2


def test_a_key_shared_position_decodes_only_the_messages_a_subset_picks():
    _session, position, _ = key_shared_session(Recorder(), 6)
    payloads = [b"p%d" % i for i in range(8)]
    keys = [b"k%d" % i for i in range(8)]
    selection = selection_of([(2, 2), (5, 6)], 2, 7)
    _frame, entry = subset_frame(6, 100, payloads, 2, 7, selection, keys=keys)
    messages = position.subset_messages(2, 7, selection, entry)
    assert [(m.seq, m.payload, m.key) for m in messages] == [
        (102, b"p2", b"k2"),
        (105, b"p5", b"k5"),
        (106, b"p6", b"k6"),
    ]
    assert position.received_through == 106
    with pytest.raises(ProtocolViolation, match="SUBSET_DELIVERY"):
        position.subset_messages(2, 9, selection_of([(8, 8)], 2, 9), entry)  # (no message 8)


def test_a_subset_delivery_for_an_exclusive_subscription_or_short_of_its_selection_is_a_violation():
    recorder = Recorder()
    session = HubSession(recorder)
    attach(session, recorder, 2)
    frame, _entry = subset_frame(2, 1, [b"a", b"b"], 0, 2, b"\x01")
    with pytest.raises(ProtocolViolation, match="exclusive"):
        session.data_received(frame)
    session, _position, _ = key_shared_session(recorder, 6)
    short = encode_frame(Op.SUBSET_DELIVERY, 0, struct.pack("!IIII", 6, 0, 80, 10) + b"\x01")
    with pytest.raises(ProtocolViolation, match="shorter than its selection"):
        session.data_received(short)


def test_only_a_key_shared_subscribe_asks_for_subsets_and_the_hub_reads_the_flag():
    _session, _position, frame = key_shared_session(Recorder(), 6)
    [(op, _, request)] = HubScript().requests(frame)
    assert op == Op.SUBSCRIBE and request.subsets
    shared = SharedPosition("t", "s", "create_or_attach", None, 0, False, SubscribeOptions("shared"))
    assert not shared.subscribe_request().subsets, "an older hub refuses the flag: others do not send it"
    body = encode_subscribe_request(Subscribe("t", "s", kind="key_shared", subsets=True))
    assert body[len(b"\x01t\x01s") + 10] & 0x40, "flag bit 6"
    assert decode_subscribe(body) == Subscribe("t", "s", kind="key_shared", subsets=True)
    assert decode_subscribe(encode_subscribe_request(Subscribe("t", "s", kind="key_shared"))).subsets is False


def test_a_key_shared_subscribe_asks_for_subsets_only_of_a_hub_whose_hello_offers_them():
    """A hub older than SUBSET_DELIVERY refuses the flag (unknown subscribe flags): its
    HELLO reply ends at hub_name, and a key_shared member then asks for runs."""
    assert decode_hello_reply(OLDER_HELLO_REPLY).features == 0
    assert decode_hello_reply(encode_hello_reply("r", "h:1", 1, 1)).features & HUB_FEATURE_SUBSETS
    assert decode_hello_reply(encode_hello_reply("r", "h:1", 1, 1) + b"later").hub_name == "h:1"
    for reply in (OLDER_HELLO_REPLY, encode_hello_reply("r", "h:1", 1, 1, features=0)):
        _session, _position, frame = key_shared_session(Recorder(), 6, reply)
        [(op, _, request)] = HubScript().requests(frame)
        assert op == Op.SUBSCRIBE and request.kind == "key_shared" and not request.subsets
        assert decode_subscribe(encode_subscribe_request(request)).subsets is False
