"""A reply leaves in the reactor turn that stored its publish (hedwig/hub/sending.py):
over a real TCP socket, a PUBLISH acknowledged at once is answered before dataReceived
returns, with no Deferred and no help from the reactor (no writer registered); the
replies of one read leave in one send; and the order of replies holds when a publish
answered at once follows one still waiting. A subscriber's delivery of what the read's
last request published leaves before that request's reply is even made."""

import socket

import pytest
from twisted.internet import tcp
from twisted.internet.address import IPv4Address
from twisted.internet.testing import MemoryReactor, StringTransport

from hedwig.hub.sending import SMALL_SEND_BYTES, HubWrites, send
from hedwig.protocol import FrameDecoder, Op, encode_frame, encode_message_set
from hedwig.protocol.requests import Published, encode_hello, encode_publish, encode_subscribe
from hedwig.protocol.responses import decode_response
from hedwig.testing.deferreds import fired
from hedwig.topiclog.entry import LogEntry
from tests.hub.harness import HubHarness


class CountedSocket:
    """A socket that counts its sends (send and sendmsg: the system calls that write)."""

    def __init__(self, sock):
        self._socket = sock
        self.sends = 0
        self.vectored = []  # the chunk lists given to sendmsg

    def send(self, data):
        self.sends += 1
        return self._socket.send(data)

    def sendmsg(self, chunks):
        self.sends += 1
        self.vectored.append(list(chunks))
        return self._socket.sendmsg(chunks)

    def __getattr__(self, name):
        return getattr(self._socket, name)


class SocketPeer:
    """A HubConnection over a real TCP socket of 127.0.0.1 (a tcp.Server transport whose
    poller is a MemoryReactor: it records the writers registered and never runs them),
    and the client's end of the socket, read without waiting."""

    def __init__(self, harness):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        self.client = socket.create_connection(listener.getsockname())
        self.client.setblocking(False)
        server_socket, address = listener.accept()
        listener.close()
        server_socket.setblocking(False)
        self.poller = MemoryReactor()
        self.connection = harness.factory.buildProtocol(IPv4Address("TCP", *address))
        self.transport = tcp.Server(server_socket, self.connection, address, None, 1, self.poller)
        self.transport.repstr = "<test transport>"
        self.transport.socket = self.counted = CountedSocket(server_socket)
        self.connection.makeConnection(self.transport)
        self._decoder = FrameDecoder(1 << 20)
        self._ids = iter(range(1, 1 << 20))
        self.send(Op.HELLO, encode_hello("test"))
        assert [r.status for _, r in self.responses()] == [0]

    def send(self, op, body=b"") -> int:
        request_id = next(self._ids)
        self.connection.dataReceived(encode_frame(op, request_id, body))
        return request_id

    @property
    def sends(self) -> int:
        return self.counted.sends

    def publish_frame(self, topic, payload) -> bytes:
        return encode_frame(Op.PUBLISH, next(self._ids), encode_publish(topic, encode_message_set([payload])))

    def frames(self) -> list:
        """Every frame the socket holds now: [(op, request id, body)]."""
        received = b""
        while True:
            try:
                chunk = self.client.recv(65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            received += chunk
        return self._decoder.feed(received)

    def responses(self) -> list:
        """Every RESPONSE the socket holds now: [(request id, Response)]."""
        return [(rid, decode_response(body)) for _op, rid, body in self.frames()]

    def close(self):
        self.client.close()
        self.transport.socket.close()


@pytest.fixture
def peer(tmp_path):
    peer = SocketPeer(HubHarness(tmp_path))
    yield peer
    peer.close()


def test_a_publish_stored_at_once_is_answered_before_its_read_returns(peer):
    request_id = peer.send(Op.PUBLISH, encode_publish("t", encode_message_set([b"x"])))
    assert peer.responses() == [(request_id, (Op.PUBLISH, 0, "", Published(1, 1)))]
    assert peer.poller.writers == set(), "sent by the read's own turn, not left for the reactor"
    assert peer.transport.dataBuffer == b"" and not peer.transport._tempDataBuffer


def test_the_replies_of_one_read_leave_in_one_send(peer):
    frames = [peer.publish_frame("t", b"%d" % i) for i in range(5)]
    sends = peer.sends
    peer.connection.dataReceived(b"".join(frames))
    assert peer.sends == sends + 1
    assert peer.counted.vectored == [], "small replies are joined, not sent as so many pieces"
    assert [r.value for _, r in peer.responses()] == [Published(i, i) for i in range(1, 6)]


def test_a_publish_answered_at_once_waits_behind_one_still_waiting(tmp_path):
    """Replies leave in request order: a publish stored at once (to another topic, and to
    the same topic) is answered only after the publish before it, whose acknowledgement
    the store holds."""
    harness = HubHarness(tmp_path)
    peer = SocketPeer(harness)
    peer.send(Op.PUBLISH, encode_publish("slow", encode_message_set([b"1"])))
    peer.responses()
    harness.ledgers.hold_acks()
    waiting = peer.send(Op.PUBLISH, encode_publish("slow", encode_message_set([b"2"])))
    harness.ledgers.hold_no_more()
    other_topic = peer.send(Op.PUBLISH, encode_publish("fast", encode_message_set([b"a"])))
    same_topic = peer.send(Op.PUBLISH, encode_publish("slow", encode_message_set([b"3"])))
    assert harness.logs.get("fast").last_seq == 1, "stored and acknowledged at once"
    assert peer.responses() == []
    harness.ledgers.release_acks()  # (outside a read: the replies wait for the reactor's turn)
    assert peer.responses() == [] and peer.transport in peer.poller.writers
    peer.transport.doWrite()
    replies = peer.responses()
    assert [request_id for request_id, _ in replies] == [waiting, other_topic, same_topic]
    assert [r.value for _, r in replies] == [Published(2, 2), Published(1, 1), Published(3, 3)]
    peer.close()


# -- HubWrites and send, on their own ----------------------------------------------------------


def test_writes_are_held_while_a_read_is_handled_and_sent_at_its_end():
    writes = HubWrites()
    first, second = StringTransport(), StringTransport()
    writes.write(first, b"now")  # (no read being handled: to the transport at once)
    assert first.value() == b"now"
    writes.begin()
    writes.write(first, b"a")
    writes.write_sequence(second, [b"b", b"c"])
    writes.write(first, b"d")
    assert first.value() == b"now" and second.value() == b""
    writes.end()
    assert first.value() == b"nowad" and second.value() == b"bc"


def test_flush_sends_one_transports_bytes_before_the_read_ends():
    writes = HubWrites()
    transport = StringTransport()
    writes.begin()
    writes.write(transport, b"reply")
    writes.flush(transport)
    assert transport.value() == b"reply"
    writes.end()
    assert transport.value() == b"reply", "nothing sent twice"


def test_send_goes_behind_what_the_transport_still_holds(peer):
    transport = peer.transport
    peer.responses()
    transport.write(b"earlier")  # (buffered, waiting for the reactor)
    send(transport, [b"-later"])
    with pytest.raises(BlockingIOError):  # nothing sent yet
        peer.client.recv(100)
    assert transport in peer.poller.writers
    transport.doWrite()  # what the reactor does when the socket is writable
    assert peer.client.recv(100) == b"earlier-later"


def test_a_publish_to_an_open_topic_is_stored_cached_and_answered_without_a_deferred(tmp_path):
    harness = HubHarness(tmp_path)
    message_set = encode_message_set([b"x"])
    fired(harness.hub.publish("t", message_set))  # (opens the topic)
    entry = harness.hub.publish_now("t", message_set)
    assert type(entry) is LogEntry and (entry.first_seq, entry.last_seq) == (2, 2)
    assert harness.topics.get("t").get(2) is entry, "in the cache already"


def test_at_the_end_of_a_read_small_writes_go_before_large_ones():
    """A publisher's reply is not held back behind the copies of a large entry to its
    subscribers: what is small goes first, then the rest, each in the order written."""
    sent = []

    class Recording(StringTransport):
        def write(self, data):
            sent.append((self.name, data))

    writes = HubWrites()
    subscriber, publisher, other = Recording(), Recording(), Recording()
    subscriber.name, publisher.name, other.name = "subscriber", "publisher", "other"
    large = b"e" * (SMALL_SEND_BYTES + 1)
    writes.begin()
    writes.write(subscriber, large)
    writes.write(publisher, b"reply")
    writes.write(other, b"small")
    writes.end()
    assert sent == [("publisher", b"reply"), ("other", b"small"), ("subscriber", large)]


# -- the read's last request: its subscribers' deliveries leave at once ----------------------


def subscribed(harness, topic, name="s") -> "SocketPeer":
    """A SocketPeer attached to `topic` (which must exist) as `name`, its cursor started."""
    subscriber = SocketPeer(harness)
    subscriber.send(Op.SUBSCRIBE, encode_subscribe(topic, name))
    harness.clock.advance(0)  # (the cursor begins on the next reactor turn)
    assert [op for op, _, _ in subscriber.frames()] == [Op.RESPONSE]
    return subscriber


def test_a_delivery_leaves_before_the_reply_of_the_publish_is_made(tmp_path):
    """The subscriber's delivery of the entry a read's last request published is on the
    end-to-end path, the publisher's reply is not: it is in the subscriber's socket by
    the time the publish is counted (just before its reply is made)."""
    harness = HubHarness(tmp_path)
    publisher = SocketPeer(harness)
    publisher.send(Op.PUBLISH, encode_publish("t", encode_message_set([b"0"])))  # (makes the topic)
    publisher.responses()
    subscriber = subscribed(harness, "t")
    seen_when_counted = []
    count = harness.hub.stats.publish_stored
    harness.hub.stats.publish_stored = lambda *a: seen_when_counted.append(subscriber.frames()) or count(*a)
    request_id = publisher.send(Op.PUBLISH, encode_publish("t", encode_message_set([b"1"])))
    [frames] = seen_when_counted
    assert [op for op, _, _ in frames] == [Op.DELIVERY]
    assert publisher.responses() == [(request_id, (Op.PUBLISH, 0, "", Published(2, 2)))]
    publisher.close()
    subscriber.close()


def test_the_deliveries_of_a_read_of_many_publishes_still_leave_in_one_send(tmp_path):
    harness = HubHarness(tmp_path)
    publisher = SocketPeer(harness)
    publisher.send(Op.PUBLISH, encode_publish("t", encode_message_set([b"0"])))
    publisher.responses()
    subscriber = subscribed(harness, "t")
    sends = subscriber.sends, publisher.sends
    publisher.connection.dataReceived(b"".join(publisher.publish_frame("t", b"%d" % i) for i in range(5)))
    assert (subscriber.sends, publisher.sends) == (sends[0] + 1, sends[1] + 1)
    assert [op for op, _, _ in subscriber.frames()] == [Op.DELIVERY] * 5
    assert [r.value for _, r in publisher.responses()] == [Published(i, i) for i in range(2, 7)]
    publisher.close()
    subscriber.close()


def test_during_a_reads_last_request_small_writes_to_others_leave_at_once():
    """Behind what was held for them; the reader's own and large writes wait for the end."""
    writes = HubWrites()
    reader, other, big = StringTransport(), StringTransport(), StringTransport()
    large = b"e" * (SMALL_SEND_BYTES + 1)
    writes.begin()
    writes.write(other, b"held-")
    writes.last_request(reader)
    writes.write(reader, b"reply")
    writes.write_sequence(other, [b"header-", b"entry"])
    writes.write(big, large)
    assert (reader.value(), other.value(), big.value()) == (b"", b"held-header-entry", b"")
    writes.end()
    assert (reader.value(), other.value(), big.value()) == (b"reply", b"held-header-entry", large)
    writes.begin()  # (the next read holds again until its last request)
    writes.write(other, b"later")
    assert other.value() == b"held-header-entry"
    writes.end()
    assert other.value() == b"held-header-entrylater"


def _deliveries(subscriber) -> list:
    """The messages of the DELIVERY frames the subscriber's socket holds now."""
    from hedwig.protocol import decode_entry
    from hedwig.protocol.framing import parse_delivery

    messages = []
    for op, _, body in subscriber.frames():
        assert op == Op.DELIVERY
        _handle, start, stop, entry = parse_delivery(body)
        messages += decode_entry("t", entry, start, stop)
    return messages


def test_a_large_delivery_leaves_as_its_header_and_the_stored_entry_unjoined(tmp_path):
    """Fan-out: every subscriber of an entry is sent its header and the one stored bytes
    object in one sendmsg, not a copy of the entry joined to the header per subscriber."""
    harness = HubHarness(tmp_path)
    publisher = SocketPeer(harness)
    publisher.send(Op.PUBLISH, encode_publish("t", encode_message_set([b"0"])))
    publisher.responses()
    subscribers = [subscribed(harness, "t", f"s{i}") for i in range(3)]
    payloads = [b"%03d" % i + b"x" * 97 for i in range(1000)]
    publisher.send(Op.PUBLISH, encode_publish("t", encode_message_set(payloads)))
    assert [r.value for _, r in publisher.responses()] == [Published(2, 1001)]
    entries = []
    for subscriber in subscribers:
        [(header, entry)] = subscriber.counted.vectored
        assert len(header) < 32 < SMALL_SEND_BYTES < len(entry)
        entries.append(entry)
        assert [m.payload for m in _deliveries(subscriber)] == payloads
        subscriber.close()
    assert entries[0] is entries[1] is entries[2], "one stored entry, shared"
    publisher.close()


def test_what_a_vectored_send_leaves_goes_out_behind_it_in_order(peer):
    """A socket that takes part of the chunks: the rest goes to the transport, which sends
    it when the reactor finds the socket writable, after what was sent."""
    sock = peer.counted
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    peer.responses()
    chunks = [b"head:", bytes(range(256)) * 400, b":tail"]  # (under DIRECT_SEND_BYTES)
    send(peer.transport, chunks)
    assert len(sock.vectored) == 1
    assert peer.transport in peer.poller.writers, "the socket took only part"
    received = b""
    expected = b"".join(chunks)
    while len(received) < len(expected):
        try:
            received += peer.client.recv(1 << 20)
        except BlockingIOError:
            peer.transport.doWrite()  # what the reactor does when the socket is writable
    assert received == expected
