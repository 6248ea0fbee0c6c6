"""One blocking client's socket to one hub, shared by every thread of the client.

There is no background thread: whichever calling thread waits (for a reply, or for a
message in `Subscription.receive`) reads the socket for everybody and hands each frame
to its owner, while the other waiting threads sleep on a condition. A reply so reaches
its caller without a thread switch, and a round trip costs one network hop and little
more. The socket is blocking with kernel timeouts (SO_RCVTIMEO / SO_SNDTIMEO): one
system call per send and per receive.

A one-message publish (`publish_one_quick`) makes one `sendall` and, in the usual case,
one `recv_into` that brings exactly its reply: that reply is read with one unpack and the
seq-id returned, without the session's general path (a Response, its Published, the
reply's holder). Anything else that read brings (a delivery, a failure, half a frame)
goes through the session as always.

TlsConnection (tls_connection.py) is the same connection over TLS.
"""

import select
import socket
import ssl
import struct
import threading
import time

from hedwig.protocol import Op, Status
from hedwig.protocol.addresses import format_address
from hedwig.protocol.errors import ClientClosed, ConnectionLost, CouldNotConnect, RequestTimeout, error_for
from hedwig.protocol.requests import encode_hello
from hedwig.protocol.session import HubSession, ProtocolViolation

# Reads go into one buffer kept for the connection: recv(n) would allocate n bytes
# afresh each time, and for n this large the allocator maps and faults in new pages on
# every call (two page faults per round trip, doubling its system time here).
_RECV_BYTES = 1 << 18
_READ_SLICE = 5.0  # a reader wakes at least this often to look at its deadline
# A connection that read within this long is taken as open without asking the socket
# (closed_by_hub): a hub cannot restart, nor a connection sit idle, in less.
_RECENT_READ_S = 0.1
# What a read that must not wait raises when nothing has arrived.
_NOTHING_TO_READ = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)
# A PUBLISH's whole SUCCESS reply frame: length, op, request id, then the body (the op it
# answers, status, message length, first and last seq-id).
_PUBLISHED_FRAME = struct.Struct("!IBIBHHQQ")
_PUBLISHED_LENGTH = _PUBLISHED_FRAME.size - 4
_WAITED, _READ = object(), object()  # how a one-message publish's read ended without its reply


def _timeval(seconds: float) -> bytes:
    """A struct timeval for SO_RCVTIMEO / SO_SNDTIMEO (never 0, which means forever)."""
    whole = int(seconds)
    micros = max(int((seconds - whole) * 1_000_000), 0 if whole else 1)
    return struct.pack("@ll", whole, micros)


class _Reply:
    """Where the reader thread leaves a response for the thread that asked."""

    __slots__ = ("response",)

    def __init__(self):
        self.response = None

    def done(self) -> bool:
        return self.response is not None


class BlockingConnection:
    """One socket to one hub. Every method may be called from any thread."""

    def __init__(
        self, address, connect_timeout: float, request_timeout: float, client_name: str, credentials=None
    ):
        self.address = address
        self.request_timeout = request_timeout
        self._sock = self._open_socket(connect_timeout)
        self._read_buffer = bytearray(_RECV_BYTES)
        self._read_view = memoryview(self._read_buffer)
        # Request ids, replies matched to their _Reply, subscriptions by handle
        self._session = HubSession(self)
        self._cond = threading.Condition()
        self._read_lock = threading.Lock()
        self._waiters = 0
        self._send_lock = threading.Lock()
        self.lost = None  # the ConnectionLost once the connection is gone
        self.hello = None
        self._last_read = time.monotonic()  # when bytes (or the end) last arrived
        hello = self._hello(client_name, connect_timeout)
        if hello.status is not Status.SUCCESS:
            self.close()
            raise error_for(hello.status, hello.message)
        self.hello = hello.value
        if credentials is not None:  # (hedwig.protocol.auth_request.Credentials)
            authenticated = self.call(Op.AUTH, credentials.request_body())
            if authenticated.status is not Status.SUCCESS:
                self.close()
                raise error_for(authenticated.status, authenticated.message)

    def _hello(self, client_name: str, connect_timeout: float):
        """HELLO's reply, within the connect timeout: a hub answers at once, so a peer
        that says nothing (or hangs up) in that time is not a hub, or not one that can
        serve: CouldNotConnect saying so (the next address is tried), not a request
        timeout (nothing was asked yet)."""
        where = format_address(self.address)
        try:
            return self.call(Op.HELLO, encode_hello(client_name), timeout=connect_timeout)
        except (RequestTimeout, ConnectionLost) as e:
            self.close()
            said = e.message
            if isinstance(e, RequestTimeout):
                said = f"{where}: no answer to HELLO in {connect_timeout:g} s"
            raise CouldNotConnect(message=f"{said} (is it a hedwig hub's port?)") from None

    def _tcp(self, connect_timeout: float) -> socket.socket:
        try:
            sock = socket.create_connection(self.address, timeout=connect_timeout)
        except OSError as e:
            raise CouldNotConnect(message=f"{format_address(self.address)}: {e.strerror or e}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _open_socket(self, connect_timeout: float):
        sock = self._tcp(connect_timeout)
        # A blocking socket with kernel timeouts: recv and send are one system call
        # each, where a Python socket timeout would poll() before every one.
        sock.settimeout(None)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(self.request_timeout))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(_READ_SLICE))
        self._sock_timeout = _READ_SLICE
        return sock

    # -- frames in (called by the channel, on the reading thread) ---------------------------

    def response_received(self, request_id, response, reply):
        if reply is not None:  # (None: its caller gave up waiting)
            reply.response = response

    # -- requests --------------------------------------------------------------------------

    def call(self, op: Op, body: bytes, timeout=None):
        """Send a request and wait for its Response."""
        reply = _Reply()
        request_id, frame = self._session.request(op, body, reply)
        return self._exchange(request_id, reply, [frame], timeout)

    def subscribe(self, subscription):
        """SUBSCRIBE as the subscription's position asks; a SUCCESS attaches it (the
        session calls its on_attached) before the Response is returned."""
        reply = _Reply()
        request_id, frame = self._session.subscribe(subscription._position, subscription, reply)
        return self._exchange(request_id, reply, [frame], None)

    def consume(self, handle: int, seq: int) -> None:
        """Move the consumed seq-id of the subscription `handle` (no reply on success)."""
        self._send([self._session.consume(handle, seq)])

    def ack(self, handle: int, ranges) -> None:
        """Acknowledge seq-id ranges of the shared or pull subscription `handle`."""
        self._send([self._session.ack(handle, ranges)])

    def nack(self, handle: int, ranges) -> None:
        """Ask for seq-id ranges of the subscription `handle` to be delivered again now."""
        self._send([self._session.nack(handle, ranges)])

    def release(self, handle: int) -> None:
        """The subscription `handle` is closed here: its frames go to nobody."""
        self._session.release(handle)

    def publish(self, topic: str, message_set: bytes):
        reply = _Reply()
        request_id, parts = self._session.publish(topic, message_set, reply)
        return self._exchange(request_id, reply, parts, None)

    def publish_one(self, topic: str, payload: bytes):
        reply = _Reply()
        request_id, frame = self._session.publish_one(topic, payload, reply)
        return self._exchange(request_id, reply, [frame], None)

    def publish_one_quick(self, topic: str, payload: bytes):
        """publish_one, returning the seq-id (an int) when the next read brings exactly
        the SUCCESS reply, and the Response otherwise (a failure, or a reply that came
        with other frames: those went to their owners).

        Taken only by a thread that can read at once (no other thread reading, no frame
        half-read) and whose socket timeout is within the request's: a read that times
        out leaves the rest of the wait to the general path, within `request_timeout`.
        """
        reply = _Reply()
        request_id, frame = self._session.publish_one(topic, payload, reply)
        if self._sock_timeout > self.request_timeout or not self._read_lock.acquire(False):
            return self._exchange(request_id, reply, [frame], None)
        try:
            if self.lost is not None or not self._session.between_frames():
                answer = None  # (sent by the general path below)
            else:
                answer = self._send_and_read(request_id, frame)
                if answer.__class__ is int:
                    return answer
        finally:
            self._read_lock.release()
            if self._waiters:
                with self._cond:
                    self._cond.notify_all()
        if answer is None:
            return self._exchange(request_id, reply, [frame], None)
        return self._await(request_id, reply, None, self._sock_timeout if answer is _WAITED else 0.0)

    def _send_and_read(self, request_id: int, frame: bytes):
        """Send a one-message PUBLISH and read once (the read lock held): its seq-id when
        the read is exactly its SUCCESS reply; else _WAITED (the socket's timeout passed)
        or _READ (what was read went through the session)."""
        try:
            self._send([frame])
        except ConnectionLost:
            self._session.forget(request_id)
            raise
        try:
            received = self._sock.recv_into(self._read_buffer)
        except (BlockingIOError, InterruptedError):
            return _WAITED
        except OSError as e:
            self._lose(f"connection to {format_address(self.address)} failed: {e}")
            return _READ
        if received == _PUBLISHED_FRAME.size:
            reply_frame = _PUBLISHED_FRAME.unpack_from(self._read_buffer)
            length, op, answers, op_answered, status, message, first_seq, _last = reply_frame
            if (
                answers == request_id
                and length == _PUBLISHED_LENGTH
                and op == Op.RESPONSE
                and op_answered == Op.PUBLISH
                and not status
                and not message
            ):
                self._last_read = time.monotonic()
                self._session.forget(request_id)
                return first_seq
        self._received(received)
        return _READ

    def send(self, op: Op, body: bytes) -> None:
        """A request without a reply on success (CONSUME)."""
        self._send([self._session.send(op, body)])

    def _exchange(self, request_id, reply, parts, timeout):
        if self.lost is not None:
            self._session.forget(request_id)
            raise self.lost
        try:
            self._send(parts)
        except ConnectionLost:
            self._session.forget(request_id)
            raise
        return self._await(request_id, reply, timeout)

    def _await(self, request_id, reply, timeout, waited: float = 0.0):
        """Wait for the reply to a request sent (`timeout` from its sending, None: the
        request timeout, of which `waited` seconds have passed already); its Response."""
        try:
            timeout = self.request_timeout if timeout is None else timeout
            if not self.wait_for(reply.done, time.monotonic() + timeout - waited):
                if self.lost is not None:
                    raise self.lost
                raise RequestTimeout(message=f"no reply from {format_address(self.address)} in {timeout} s")
        finally:
            self._session.forget(request_id)
        return reply.response

    def _send(self, parts) -> None:
        with self._send_lock:
            if self.lost is not None:
                raise self.lost
            try:
                if len(parts) == 1:
                    self._sock.sendall(parts[0])
                else:
                    sent = self._sock.sendmsg(parts)
                    total = sum(map(len, parts))
                    if sent < total:
                        self._sock.sendall(b"".join(parts)[sent:])
            except OSError as e:
                self._lose(f"sending to {format_address(self.address)} failed: {e}")
                raise self.lost from None

    # -- reading ---------------------------------------------------------------------------

    def wait_for(self, ready, deadline) -> bool:
        """Read frames (or let another thread read them) until ready() or the deadline
        (None: no deadline). False when the deadline passed or the connection is lost.

        The thread holding the read lock reads for everybody; the others sleep on the
        condition, counted in `_waiters`, and the reader wakes them after each read. A
        thread alone (the usual case) never touches the condition.
        """
        read_lock = self._read_lock
        cond = self._cond
        while True:
            if ready():
                return True
            if self.lost is not None:
                return False
            if read_lock.acquire(False):
                try:
                    while not ready():  # (again: another thread may have read it meanwhile)
                        if self.lost is not None:
                            return False
                        if deadline is None:
                            remaining = None
                        else:
                            remaining = deadline - time.monotonic()
                            if remaining <= 0:
                                return False
                        self._read_once(remaining)
                        if self._waiters:
                            with cond:
                                cond.notify_all()
                    return True
                finally:
                    read_lock.release()
                    if self._waiters:
                        with cond:
                            cond.notify_all()
            with cond:
                self._waiters += 1
                try:
                    if ready() or self.lost is not None or not read_lock.locked():
                        continue
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return False
                    cond.wait(remaining)
                finally:
                    self._waiters -= 1

    def read_briefly(self, ready, seconds: float) -> bool:
        """One read waiting at most `seconds` (the caller passes the same value each
        time, so the socket's timeout is set once, not per call), unless ready() already,
        the connection is lost or another thread is reading: ready() after it.

        For a subscription with an acknowledgement to send before it waits: the next
        delivery usually comes first, and the acknowledgement then goes out with a
        later one (Subscription.receive)."""
        if ready() or self.lost is not None:
            return ready()
        if not self._read_lock.acquire(False):
            return ready()  # another thread reads: the caller's wait_for waits on it
        try:
            if not ready():  # (again: another thread may have read it meanwhile)
                self._read_once(seconds)
        finally:
            self._read_lock.release()
            if self._waiters:
                with self._cond:
                    self._cond.notify_all()
        return ready()

    def _read_once(self, remaining) -> None:
        sock = self._sock
        timeout = _READ_SLICE if remaining is None or remaining > _READ_SLICE else max(remaining, 0.001)
        try:
            if timeout != self._sock_timeout:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(timeout))
                self._sock_timeout = timeout
            received = sock.recv_into(self._read_buffer)
        except (BlockingIOError, InterruptedError):
            return  # SO_RCVTIMEO passed: the caller looks at its deadline
        except OSError as e:
            self._lose(f"connection to {format_address(self.address)} failed: {e}")
            return
        self._received(received)

    def _received(self, received: int) -> None:
        self._last_read = time.monotonic()
        if not received:
            self._lose(f"{format_address(self.address)} closed the connection")
            return
        data = self._read_view[:received].tobytes()
        try:
            self._session.data_received(data)
        except ProtocolViolation as e:
            self._lose(str(e))

    def _lose(self, reason: str) -> None:
        if self.lost is not None:
            return
        self.lost = ConnectionLost(message=reason)
        self._close_socket()
        self._session.detach_all()

    def _close_socket(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass

    def _shutdown_socket(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def in_use(self) -> bool:
        """Open, and read from a moment ago: a request may go on it without the check of
        closed_by_hub (a system call: the one-message path's round trip makes none)."""
        return self.lost is None and time.monotonic() - self._last_read < _RECENT_READ_S

    def closed_by_hub(self) -> bool:
        """True when the hub has closed this connection while it was idle (it restarted,
        say): a request then goes on a new connection rather than failing as uncertain.

        Whatever frames have arrived meanwhile are handled on the way (an event for a
        subscription nobody is reading, a reply someone gave up on): one non-blocking
        read, and only when no thread is reading."""
        if self.lost is not None:
            return True
        self.read_arrived(0.0)
        return self.lost is not None

    def read_arrived(self, wait: float) -> None:
        """Handle what has arrived, without waiting for more (one non-blocking read);
        when another thread is reading, wait up to `wait` seconds for its next read
        instead (wait_for_any's read of a connection that select found readable)."""
        if not self._read_lock.acquire(False):
            if wait > 0:
                with self._cond:
                    self._waiters += 1
                    try:
                        if self._read_lock.locked():
                            self._cond.wait(wait)
                    finally:
                        self._waiters -= 1
            return
        try:
            self._received(self._read_now())
        except _NOTHING_TO_READ:
            pass  # nothing to read: the connection is as good as we can tell
        except OSError as e:
            self._lose(f"connection to {format_address(self.address)} failed: {e}")
        finally:
            self._read_lock.release()
            if self._waiters:
                with self._cond:
                    self._cond.notify_all()

    def fileno(self) -> int:
        """The socket's descriptor, for select (-1 once closed)."""
        return self._sock.fileno()

    def buffered(self) -> bool:
        """Whether bytes already read from the socket wait to be handled (TLS's)."""
        return False

    def _read_now(self) -> int:
        """Read what has arrived without waiting; raises one of _NOTHING_TO_READ when nothing has."""
        return self._sock.recv_into(self._read_buffer, 0, socket.MSG_DONTWAIT)

    def close(self) -> None:
        if self.lost is None:
            self._shutdown_socket()  # wakes a thread waiting to read
        self._lose("the client closed the connection")
        self.lost = ClientClosed(message="the client is closed")


def wait_for_any(connections, ready, deadline) -> bool:
    """BlockingConnection.wait_for over several connections (a partitioned topic's
    subscription, its partitions owned by several hubs): read whichever has something
    (select), until ready() or the deadline (None: none). False when the deadline passed
    or one of them is lost (the caller attaches its subscriptions again)."""
    if len(connections) == 1:
        return connections[0].wait_for(ready, deadline)
    while not ready():
        if any(connection.lost is not None for connection in connections):
            return ready()
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            return False
        wait = _READ_SLICE if remaining is None else min(remaining, _READ_SLICE)
        readable = [connection for connection in connections if connection.buffered()]
        if not readable:
            try:
                readable, _, _ = select.select(connections, [], [], wait)
            except (OSError, ValueError):  # (a socket closed meanwhile: it is lost)
                readable = [connection for connection in connections if connection.closed_by_hub()]
        for connection in readable:
            connection.read_arrived(wait)
    return True
