"""The blocking client's one-message publish: one send and one read that is exactly its
SUCCESS reply, read with one unpack (BlockingConnection.publish_one_quick). Whatever else
a read brings goes through the session as every other frame does: a reply that comes
with a delivery, a reply split across reads, a reply to some other request, a read that
times out. Against a real hub, and against a scripted hub on a real socket where the
bytes and their split must be chosen."""

import socket
import socketserver
import threading
import time

import pytest

from hedwig.client import Client
from hedwig.client.errors import ConnectionLost, RequestTimeout, ServiceDown
from hedwig.protocol import FrameDecoder, Op, Status
from tests.client.hubscript import HubScript
from tests.receiving import receive_all

REPLY_BYTES = len(HubScript.published(1, 1, 1))  # a PUBLISH's whole SUCCESS reply frame


def _count_session_reads(connection) -> list:
    """Each read that goes through the session (not the quick path) appends its size."""
    seen = []
    received = connection._received

    def counting(size):
        seen.append(size)
        received(size)

    connection._received = counting
    return seen


def test_a_reply_that_comes_alone_is_taken_without_the_session(hub):
    with Client(hub.address) as client:
        assert client.publish("quick", b"first") == 1
        connection = client._connections.known(client._routes.default)
        session_reads = _count_session_reads(connection)
        assert [client.publish("quick", b"%d" % i) for i in range(100)] == list(range(2, 102))
        assert session_reads == []
        assert connection._session.pending_count == 0  # (every request forgotten once answered)
    with Client(hub.address) as reader:
        stored = receive_all(reader.subscribe("quick", "check", start="earliest"), 101)
        assert [m.payload for m in stored] == [b"first", *(b"%d" % i for i in range(100))]


def test_a_reply_read_with_a_delivery_reaches_both_owners(hub):
    with Client(hub.address) as client:
        subscription = client.subscribe("quick-own", "me", start="earliest")
        connection = client._connections.known(client._routes.default)
        session_reads = _count_session_reads(connection)
        # The delivery to this connection's own subscription is written in the read of the
        # publish, before its reply: one read brings both.
        assert client.publish("quick-own", b"mine") == 1
        assert session_reads and session_reads[0] > REPLY_BYTES
        message = subscription.receive(timeout=10)
        assert (message.seq, message.payload) == (1, b"mine")


class _ScriptedHub:
    """A hub on a real socket that answers HELLO, then hands each PUBLISH's request id to
    `answer(sock, script, request_id)`, run on the connection's thread."""

    def __init__(self, answer):
        script = HubScript()

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                decoder = FrameDecoder()
                while data := self.request.recv(65536):
                    for op, request_id, _body in decoder.feed(data):
                        if op == Op.HELLO:
                            self.request.sendall(script.hello(request_id))
                        elif op == Op.PUBLISH:
                            answer(self.request, script, request_id)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def scripted():
    hubs = []

    def start(answer):
        hubs.append(_ScriptedHub(answer))
        return hubs[-1]

    yield start
    for hub in hubs:
        hub.close()


def _publish_in_two_reads(scripted, first, second, topic: str):
    """Publish on a hub that answers with first(script, request_id), then, once the
    client has read that (the session had it), second(...): the seq-id and the sizes of
    the reads that went through the session."""
    first_read = threading.Event()

    def answer(sock, script, request_id):
        sock.sendall(first(script, request_id))
        if first_read.wait(10):
            sock.sendall(second(script, request_id))

    hub = scripted(answer)
    with Client(hub.address) as client:
        connection = client._connections.known(client._routes.default)
        session_reads = _count_session_reads(connection)
        connection._received = _then_set(connection._received, first_read)
        return client.publish(topic, b"x"), session_reads


def test_a_reply_split_across_reads_is_joined_by_the_session(scripted):
    seq, session_reads = _publish_in_two_reads(
        scripted,
        lambda script, request_id: script.published(request_id, 7, 7)[:10],
        lambda script, request_id: script.published(request_id, 7, 7)[10:],
        "split",
    )
    assert seq == 7
    assert session_reads == [10, REPLY_BYTES - 10]


def test_a_reply_to_another_request_is_not_taken_for_this_one(scripted):
    seq, session_reads = _publish_in_two_reads(
        scripted,
        # The size of the awaited reply, but for a request id never sent: it goes to nobody.
        lambda script, request_id: script.published(request_id + 1000, 99, 99),
        lambda script, request_id: script.published(request_id, 3, 3),
        "forged",
    )
    assert seq == 3
    assert session_reads == [REPLY_BYTES, REPLY_BYTES]


def test_a_failure_reply_raises_as_on_the_general_path(scripted):
    def answer(sock, script, request_id):
        sock.sendall(script.error(request_id, Op.PUBLISH, Status.SERVICE_DOWN, "disk full"))

    hub = scripted(answer)
    with Client(hub.address) as client, pytest.raises(ServiceDown) as error:
        client.publish("refused", b"x")
    assert error.value.status is Status.SERVICE_DOWN
    assert "disk full" in error.value.message


def test_a_read_that_times_out_leaves_the_rest_of_the_request_timeout_to_the_general_path(scripted):
    hub = scripted(lambda sock, script, request_id: None)  # (never answers a PUBLISH)
    with Client(hub.address, timeout=1.0) as client:
        connection = client._connections.known(client._routes.default)
        # A brief read sets the socket's timeout below the request's: the quick path's
        # read is then the one that times out first.
        assert connection.read_briefly(lambda: False, 0.2) is False
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as error:
            client.publish("silent", b"x")
        assert time.monotonic() - started >= 1.0
        assert error.value.status is Status.UNCERTAIN_STATE
        assert "in 1.0 s" in error.value.message
        assert connection.lost is None and connection._session.pending_count == 0


def test_a_hub_that_closes_during_the_read_loses_the_connection(scripted):
    def answer(sock, script, request_id):
        sock.shutdown(socket.SHUT_RDWR)

    hub = scripted(answer)
    with Client(hub.address) as client, pytest.raises(ConnectionLost) as error:
        client.publish("closed", b"x")
    assert error.value.status is Status.UNCERTAIN_STATE
    assert "closed the connection" in error.value.message


def _then_set(received, event: threading.Event):
    def receiving(size):
        received(size)
        event.set()

    return receiving
