"""KafkaConnection unit by unit, over StringTransport and handlers of the test's own:
answers leave in request order whatever order the work ends in; past MAX_IN_FLIGHT
requests it stops reading until answers leave; a request split across reads is
read whole."""

import struct

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from hedwig.hub.intake import RequestIntake
from hedwig.hub.peerlog import PeerLog
from hedwig.kafka.connection import MAX_IN_FLIGHT, KafkaConnection
from tests.kafka.wire import KafkaPeer

METADATA = 3


class _Apis:
    """Metadata answered by the test: each request's Deferred kept, in order."""

    def __init__(self):
        self.pending = []
        self.handlers = {METADATA: self.metadata}

    def metadata(self, _version, _request, _peer):
        d = Deferred()
        self.pending.append(d)
        return d

    def sasl_for(self, _connection):
        return None  # ([auth] off)


def _metadata_frame(correlation_id):
    peer = KafkaPeer.__new__(KafkaPeer)
    # Metadata v1: topics null (an int32 -1), no tagged fields.
    return peer.frame(METADATA, 1, struct.pack("!i", -1), correlation_id=correlation_id)


def _connection():
    apis = _Apis()
    connection = KafkaConnection(apis, 1 << 20, PeerLog(Clock(), 10))
    transport = StringTransport()
    connection.makeConnection(transport)
    return connection, transport, apis


def _answered(transport):
    data = transport.value()
    ids = []
    while data:
        (size,) = struct.unpack_from("!i", data)
        ids.append(struct.unpack_from("!i", data, 4)[0])
        data = data[4 + size :]
    return ids


def test_answers_leave_in_request_order():
    connection, transport, apis = _connection()
    connection.dataReceived(_metadata_frame(1) + _metadata_frame(2) + _metadata_frame(3))
    apis.pending[2].callback({"brokers": [], "topics": []})
    apis.pending[1].callback({"brokers": [], "topics": []})
    assert _answered(transport) == []  # 2 and 3 wait for 1
    apis.pending[0].callback({"brokers": [], "topics": []})
    assert _answered(transport) == [1, 2, 3]


def test_a_request_split_across_reads_is_read_whole():
    connection, transport, apis = _connection()
    frame = _metadata_frame(7)
    for i in range(len(frame)):
        connection.dataReceived(frame[i : i + 1])
    apis.pending[0].callback({"brokers": [], "topics": []})
    assert _answered(transport) == [7]


def test_past_max_in_flight_it_stops_reading_until_answers_leave():
    connection, transport, apis = _connection()
    connection.dataReceived(b"".join(_metadata_frame(i) for i in range(MAX_IN_FLIGHT + 10)))
    # It worked on MAX_IN_FLIGHT and paused; the rest wait in its buffer, unread.
    assert len(apis.pending) == MAX_IN_FLIGHT
    assert transport.producerState == "paused"
    for d in list(apis.pending):
        d.callback({"brokers": [], "topics": []})
    assert transport.producerState == "producing"
    for d in apis.pending[MAX_IN_FLIGHT:]:
        d.callback({"brokers": [], "topics": []})
    assert _answered(transport) == list(range(MAX_IN_FLIGHT + 10))


def test_requests_in_progress_share_the_hubs_partial_request_budget():
    intake = RequestIntake(1000)
    apis = _Apis()
    first, second = (KafkaConnection(apis, 1 << 20, PeerLog(Clock(), 10), intake) for _ in range(2))
    transports = [StringTransport(), StringTransport()]
    first.makeConnection(transports[0])
    second.makeConnection(transports[1])
    frame = _metadata_frame(1)
    big_head = struct.pack("!i", 800)  # a request of 800 bytes, only begun
    first.dataReceived(big_head + b"\0" * 10)
    assert intake.held_by(first) == 804
    second.dataReceived(big_head)
    # The budget holds one of them: the second stops reading until the first is done.
    assert transports[1].producerState == "paused" and intake.is_waiting(second)
    first.connectionLost()
    assert transports[1].producerState == "producing" and intake.held_by(second) == 804
    second.dataReceived(b"\0" * 800)  # (a request that does not decode: refused, closed)
    second.connectionLost()
    assert intake.reserved == 0
    third = KafkaConnection(apis, 1 << 20, PeerLog(Clock(), 10), intake)
    third.makeConnection(StringTransport())
    third.dataReceived(frame)
    assert intake.reserved == 0 and len(apis.pending) == 1


def test_a_request_that_stops_arriving_closes_the_connection_after_the_frame_timeout():
    clock = Clock()
    intake = RequestIntake(1 << 20)
    connection = KafkaConnection(_Apis(), 1 << 20, PeerLog(clock, 10), intake, clock, 30.0)
    transport = StringTransport()
    connection.makeConnection(transport)
    frame = _metadata_frame(1)
    connection.dataReceived(frame[:6])
    clock.advance(20)
    connection.dataReceived(frame[6:8])  # more of it: the wait starts again
    clock.advance(20)
    assert not transport.disconnecting
    clock.advance(10)
    assert transport.disconnecting
    # A whole request leaves no timer behind.
    other = KafkaConnection(_Apis(), 1 << 20, PeerLog(clock, 10), intake, clock, 30.0)
    other_transport = StringTransport()
    other.makeConnection(other_transport)
    other.dataReceived(frame)
    clock.advance(60)
    assert not other_transport.disconnecting
