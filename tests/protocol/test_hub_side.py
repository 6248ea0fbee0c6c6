"""The hub's side of a connection without a reactor: bytes in, frames out (HubSideSession,
hedwig/protocol/hub_side.py), the handshake's deadline on a task.Clock."""

import pytest
from twisted.internet.task import Clock

from hedwig.protocol import FrameDecoder, Op, Status, encode_frame
from hedwig.protocol.auth_request import encode_auth
from hedwig.protocol.framing import frame_header
from hedwig.protocol.hub_side import AUTH, CHECKING, CLOSED, GATED, HELLO, OPEN, HubSideSession
from hedwig.protocol.layouts import RequestRefused
from hedwig.protocol.requests import decode_hello_reply, encode_hello, encode_hello_reply
from hedwig.protocol.responses import Response, response_frame, split_response

HELLO_REPLY = encode_hello_reply("standalone", "127.0.0.1:4080", 4096, 1024)


class Driver:
    """What a HubConnection is to the session, recorded: the frames written, the calls."""

    def __init__(self):
        self.written = []
        self.calls = []
        self.closing = False
        self._frames = FrameDecoder(1 << 20)

    def write(self, data):
        self.written.append(data)

    def write_sequence(self, chunks):
        self.written.append(b"".join(chunks))

    def close_when_sent(self):
        self.closing = True

    def greeted(self, client_name):
        self.calls.append(("greeted", client_name))

    def refused(self, request_id, op, status, message, closing):
        self.calls.append(("refused", request_id, op, status, closing))

    def request_failed(self, error, request_id, op, started):
        self.calls.append(("failed", request_id, op, error))

    def reading_changed(self):
        self.calls.append(("reading_changed",))

    def replies_idle(self):
        self.calls.append(("idle",))

    def hello_overdue(self, timeout):
        self.calls.append(("hello_overdue", timeout))

    def admitted(self):
        self.calls.append(("admitted",))

    def auth_overdue(self, timeout):
        self.calls.append(("auth_overdue", timeout))

    def responses(self) -> list:
        """(request id, Response with the payload undecoded) of every frame written since
        the last call."""
        data, self.written = b"".join(self.written), []
        out = []
        for _op, request_id, body in self._frames.feed(data):
            op, status, message, payload = split_response(body)
            out.append((request_id, Response(op, status, message, bytes(payload))))
        return out


class Gate:
    """An IHubSideGate that knows nobody until told, and refuses op 8 (LIST_TOPICS)."""

    def __init__(self, known: bool = False):
        self.known = known
        self.checks = []

    def identify(self):
        return self.known

    def authenticate(self, request_id, body):
        if body == b"bad":
            raise RequestRefused(Status.MALFORMED_REQUEST, "not an AUTH body")
        self.checks.append(request_id)

    def check(self, op, body):
        if op == Op.LIST_TOPICS:
            raise RequestRefused(Status.NOT_AUTHORIZED, "admins only")


def echo(driver, request_id, body, started):
    """A handler answering at once with its body as payload."""
    driver.session.replies.send(response_frame(request_id, Op.STATS, payload=body))


def make(handlers=None, gate=None, clock=None, **limits):
    driver = Driver()
    session = HubSideSession(
        driver,
        {Op.STATS: echo} if handlers is None else handlers,
        clock=clock or Clock(),
        hello_reply=HELLO_REPLY,
        hello_timeout_s=3.0,
        max_frame_bytes=4096,
        max_requests=limits.get("max_requests", 100),
        max_bytes=limits.get("max_bytes", 1 << 20),
        gate=gate,
        auth_timeout_s=5.0,
    )
    driver.session = session  # (what the handlers are given is the driver)
    session.start()
    return session, driver


def hello(request_id: int = 1, version: int = 1) -> bytes:
    return encode_frame(Op.HELLO, request_id, encode_hello("test", version))


def greeted(**kwargs):
    session, driver = make(**kwargs)
    session.data_received(hello())
    [(answered_id, response)] = driver.responses()
    assert answered_id == 1
    assert response.status is Status.SUCCESS
    return session, driver


def test_hello_is_answered_with_the_hubs_facts_and_opens_the_session():
    session, driver = make()
    session.data_received(hello())
    [(request_id, response)] = driver.responses()
    assert request_id == 1 and response.status is Status.SUCCESS
    assert decode_hello_reply(response.value) == decode_hello_reply(HELLO_REPLY)
    assert session.stage is OPEN and ("greeted", "test") in driver.calls


@pytest.mark.parametrize(
    ("first", "status"),
    [
        (encode_frame(Op.STATS, 7), Status.MALFORMED_REQUEST),  # not HELLO
        (hello(7, version=2), Status.UNSUPPORTED_VERSION),
        (encode_frame(Op.HELLO, 7, b"\x00"), Status.MALFORMED_REQUEST),  # a HELLO that does not parse
    ],
)
def test_a_first_request_that_is_not_a_good_hello_is_refused_and_closes(first, status):
    session, driver = make()
    session.data_received(first + hello(8))  # (what follows in the same read is not taken)
    [(request_id, response)] = driver.responses()
    assert (request_id, response.status) == (7, status)
    assert session.stage is CLOSED and driver.closing and not session.reading
    assert ("refused", 7, response.op, status, True) in driver.calls


def test_requests_go_to_their_handler_and_an_unknown_op_is_refused_and_the_session_goes_on():
    session, driver = greeted()
    session.data_received(encode_frame(99, 2) + encode_frame(Op.STATS, 3, b"payload"))
    [(first_id, unknown), (second_id, answered)] = driver.responses()
    assert (first_id, second_id) == (2, 3)
    assert unknown.status is Status.UNKNOWN_OPERATION and unknown.op == 99
    assert answered.status is Status.SUCCESS and answered.op == Op.STATS
    assert session.stage is OPEN and not driver.closing


def test_a_second_hello_goes_to_the_handlers_not_the_handshake():
    seen = []
    session, driver = greeted(handlers={Op.HELLO: lambda d, rid, body, started: seen.append(rid)})
    session.data_received(hello(2))
    assert seen == [2] and driver.responses() == []


def test_a_handlers_failure_is_the_drivers_to_answer():
    def broken(driver, request_id, body, started):
        raise ValueError("a bug")

    session, driver = greeted(handlers={Op.STATS: broken})
    session.data_received(encode_frame(Op.STATS, 2))
    [(_kind, request_id, op, error)] = [c for c in driver.calls if c[0] == "failed"]
    assert (request_id, op) == (2, Op.STATS) and isinstance(error, ValueError)
    assert session.stage is OPEN


def test_replies_leave_in_request_order_whatever_order_they_are_made_in():
    slots = []

    def later(driver, request_id, body, started):
        slots.append((request_id, driver.session.replies.reserve()))

    session, driver = greeted(handlers={Op.STATS: echo, Op.LIST_TOPICS: later})
    session.data_received(encode_frame(Op.LIST_TOPICS, 2) + encode_frame(Op.STATS, 3))
    assert driver.responses() == []  # (3 waits for 2)
    [(request_id, slot)] = slots
    session.replies.fill(slot, response_frame(request_id, Op.LIST_TOPICS))
    assert [request_id for request_id, _response in driver.responses()] == [2, 3]


def test_whole_frames_before_a_bad_length_are_handled_then_the_stream_is_refused():
    session, driver = greeted()
    session.data_received(encode_frame(Op.STATS, 2, b"a") + frame_header(Op.STATS, 3, 8000))
    [(first_id, answered), (second_id, refused)] = driver.responses()
    assert (first_id, second_id) == (2, 0)
    assert answered.status is Status.SUCCESS
    assert (refused.op, refused.status) == (0, Status.FRAME_TOO_LARGE)
    assert session.stage is CLOSED and driver.closing


def test_a_length_shorter_than_a_frame_header_is_malformed():
    session, driver = greeted()
    session.data_received(b"\x00\x00\x00\x02\x01\x02")
    [(answered_id, refused)] = driver.responses()
    assert answered_id == 0
    assert refused.status is Status.MALFORMED_REQUEST and driver.closing


def test_hello_is_due_within_its_deadline():
    clock = Clock()
    _late, late_driver = make(clock=clock)
    on_time, on_time_driver = make(clock=clock)
    clock.advance(2.9)
    on_time.data_received(hello())
    clock.advance(0.1)
    assert late_driver.calls == [("hello_overdue", 3.0)]
    assert ("hello_overdue", 3.0) not in on_time_driver.calls and clock.getDelayedCalls() == []


def test_a_lost_connection_stops_the_deadline_and_frees_everything():
    clock = Clock()
    session, _driver = make(clock=clock)
    session.data_received(hello()[:5])
    session.connection_lost()
    assert clock.getDelayedCalls() == [] and session.decoder.buffered == 0 and session.stage is CLOSED


def test_too_many_requests_waiting_stop_reading_until_half_are_answered():
    slots = []

    def later(driver, request_id, body, started):
        slots.append((request_id, driver.session.replies.reserve(len(body))))

    session, driver = greeted(handlers={Op.PUBLISH: later}, max_requests=4)
    session.data_received(b"".join(encode_frame(Op.PUBLISH, i, b"x") for i in range(2, 6)))
    assert not session.reading and ("reading_changed",) in driver.calls
    driver.calls.clear()
    for request_id, slot in slots[:1]:
        session.replies.fill(slot, response_frame(request_id, Op.PUBLISH))
    assert not session.reading  # (3 still wait: more than half)
    request_id, slot = slots[1]
    session.replies.fill(slot, response_frame(request_id, Op.PUBLISH))
    assert session.reading and driver.calls == [("reading_changed",)]


def test_bytes_waiting_stop_reading_too():
    session, _driver = greeted(
        handlers={Op.PUBLISH: lambda driver, rid, body, started: driver.session.replies.reserve(len(body))},
        max_bytes=100,
    )
    session.data_received(encode_frame(Op.PUBLISH, 2, bytes(60)))
    assert session.reading
    session.data_received(encode_frame(Op.PUBLISH, 3, bytes(60)))
    assert not session.reading


# -- the handshake with a gate ([auth] on) ----------------------------------------------------


def test_with_a_gate_that_knows_nobody_auth_comes_first():
    session, driver = greeted(gate=Gate())
    assert session.stage is AUTH
    session.data_received(encode_frame(Op.STATS, 2))
    [(answered_id, refused)] = driver.responses()
    assert answered_id == 2
    assert refused.status is Status.AUTHENTICATION_FAILED and driver.closing and session.stage is CLOSED


def test_an_auth_being_checked_takes_nothing_else():
    gate = Gate()
    session, driver = greeted(gate=gate)
    session.data_received(encode_frame(Op.AUTH, 2, encode_auth("u", "p")) + encode_frame(Op.STATS, 3))
    assert gate.checks == [2]
    [(answered_id, refused)] = driver.responses()
    assert answered_id == 3
    assert refused.status is Status.AUTHENTICATION_FAILED and session.stage is CLOSED


def test_a_taken_auth_is_answered_and_the_gate_checks_every_request_after_it():
    gate = Gate()
    session, driver = greeted(gate=gate, handlers={Op.STATS: echo, Op.LIST_TOPICS: echo})
    session.data_received(encode_frame(Op.AUTH, 2, encode_auth("u", "p")))
    assert session.stage is CHECKING and driver.responses() == []
    session.authenticated(2, b"\x01u")
    assert session.stage is GATED
    session.data_received(encode_frame(Op.STATS, 3) + encode_frame(Op.LIST_TOPICS, 4))
    [(first_id, authenticated), (second_id, answered)] = driver.responses()
    assert (first_id, second_id) == (2, 3)
    assert authenticated.op == Op.AUTH and authenticated.status is Status.SUCCESS
    assert answered.status is Status.SUCCESS
    [(_kind, failed_id, op, error)] = [c for c in driver.calls if c[0] == "failed"]
    assert failed_id == 4
    assert op == Op.LIST_TOPICS and error.status is Status.NOT_AUTHORIZED and session.stage is GATED


def test_an_auth_refused_at_once_leaves_the_stage_as_it_was():
    session, driver = greeted(gate=Gate())
    session.data_received(encode_frame(Op.AUTH, 2, b"bad"))
    assert session.stage is AUTH
    [(_kind, failed_id, op, error)] = [c for c in driver.calls if c[0] == "failed"]
    assert failed_id == 2
    assert op == Op.AUTH and error.status is Status.MALFORMED_REQUEST


def test_a_gate_that_knows_the_connection_lets_requests_through_at_once():
    session, driver = greeted(gate=Gate(known=True))
    assert session.stage is GATED
    session.data_received(encode_frame(Op.STATS, 2))
    [(answered_id, answered)] = driver.responses()
    assert answered_id == 2
    assert answered.status is Status.SUCCESS


def test_a_failed_auth_closes_after_its_answer():
    session, driver = greeted(gate=Gate())
    session.data_received(encode_frame(Op.AUTH, 2, encode_auth("u", "wrong")))
    session.stop_reading()  # (the gate: at once; the answer after its delay)
    session.data_received(encode_frame(Op.STATS, 3))  # (nothing more is taken)
    session.refuse_and_close(2, Op.AUTH, Status.AUTHENTICATION_FAILED, "wrong user name or password")
    [(answered_id, refused)] = driver.responses()
    assert answered_id == 2
    assert refused.status is Status.AUTHENTICATION_FAILED and driver.closing


def test_the_stages_start_at_hello():
    session, _driver = make()
    assert session.stage is HELLO and session.reading


def test_auth_is_due_within_its_deadline_after_hello():
    """Issue 28, finding 8: a connection that said HELLO on a hub with [auth] on and sent
    no AUTH is the driver's to end once auth_timeout_s passed."""
    clock = Clock()
    _session, driver = greeted(gate=Gate(), clock=clock)
    clock.advance(4.9)
    assert ("auth_overdue", 5.0) not in driver.calls
    clock.advance(0.1)
    assert ("auth_overdue", 5.0) in driver.calls and ("admitted",) not in driver.calls


def test_a_taken_auth_stops_the_deadline_and_admits_the_connection():
    clock = Clock()
    session, driver = greeted(gate=Gate(), clock=clock)
    session.data_received(encode_frame(Op.AUTH, 2, encode_auth("u", "p")))
    session.authenticated(2, b"\x01u")
    assert ("admitted",) in driver.calls
    clock.advance(60)
    assert not [c for c in driver.calls if c[0] == "auth_overdue"] and not clock.getDelayedCalls()


def test_an_auth_being_checked_at_the_deadline_waits_for_its_check():
    """The check is paid for and bounded by the hub's queue: its outcome decides."""
    clock = Clock()
    session, driver = greeted(gate=Gate(), clock=clock)
    session.data_received(encode_frame(Op.AUTH, 2, encode_auth("u", "p")))
    clock.advance(60)
    assert session.stage is CHECKING and not [c for c in driver.calls if c[0] == "auth_overdue"]


def test_a_connection_the_gate_knows_is_admitted_at_hello_with_no_deadline():
    clock = Clock()
    _session, driver = greeted(gate=Gate(known=True), clock=clock)
    assert ("admitted",) in driver.calls and not clock.getDelayedCalls()
