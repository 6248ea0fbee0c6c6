"""A hub's bytes out: what a read produces leaves at its end, straight to the socket.

Twisted's `transport.write` only buffers: it registers the socket with the poller, and
the bytes go out when the reactor next polls and finds it writable, after which the
socket is unregistered again. For a request and its reply that is two more system calls
and another trip through the reactor for every reply, as much as the hub's own work on
a one-message publish. So while a hub connection handles a read, everything the hub
writes to any of its connections (the replies, the deliveries a publish causes) is held
here, per connection; when the read is handled, each connection's bytes are sent with
one `send` of the socket (one `sendmsg` of its chunks when they hold a delivery's header
and a stored entry, never joined into a copy per subscriber), at once, when its
transport has nothing buffered (the usual case), and given to the transport otherwise,
behind what it holds. What the socket does not take goes to the transport's buffer,
which sends it when the reactor finds room and pauses the producer when it grows,
exactly as before.

While the read's last request is handled, a small write to any connection but the one
being read (a subscriber's delivery of the entry just published) is not held: it is sent
at once, behind what was held for that connection, before the request's own reply is
even made. Nothing later in the read can join it (no request follows), and its reader is
the one waiting: the publisher's reply is not on that path, the delivery is. A large
one is still held, to go after the replies at the end of the read.

Outside a read (a timer, a thread's result: a catching-up subscriber's entries read from
the ledger) nothing is held and a write goes to the transport, to be sent in the reactor's
next turn as Twisted does: there, many entries for one connection are written in a row,
and the transport gathers them into large sends. Order is kept because every write to a
hub connection comes through here (HubConnection.write) and a connection is closed
through HubConnection.close_when_sent, which sends what is held first. Transports other
than plain TCP ones (TLS, whose bytes pass through OpenSSL first) and large writes go
through the transport as usual.
"""

from errno import ENOBUFS, EWOULDBLOCK

from twisted.internet.main import CONNECTION_LOST
from twisted.internet.tcp import Connection as TCPConnection
from twisted.python.util import untilConcludes

# Larger writes go through the transport (which sends at most this much per call anyway).
DIRECT_SEND_BYTES = TCPConnection.SEND_LIMIT
# What a read made for a connection is sent first when it is no more (a reply, a delivery
# of a few messages): sending it costs little, and its reader is waiting.
SMALL_SEND_BYTES = 4096
# Chunks sent with one sendmsg, at most (far below the kernel's IOV_MAX of 1024); more
# are joined first.
VECTOR_CHUNKS = 64


class HubWrites:
    """One per hub: the bytes written to its connections while a read is handled."""

    __slots__ = ("_depth", "_held", "_last_of")

    def __init__(self):
        self._depth = 0  # reads being handled (one inside another only in tests' loopbacks)
        self._held = {}  # transport -> chunks written to it during the read, in order
        self._last_of = None  # the transport read, while its read's last request is handled

    def last_request(self, transport) -> None:
        """The read of `transport` is handling its last request: small writes to other
        transports leave at once from now until end()."""
        if self._depth:
            self._last_of = transport

    def begin(self) -> None:
        """A read is being handled: hold what is written until end()."""
        self._depth += 1

    def end(self) -> None:
        """The read is handled: every connection written to sends what it was given, in
        the order first written to, the small ones (replies, one-message deliveries)
        before the large ones, so that a publisher's reply never waits behind the copies
        of a large entry to its subscribers."""
        self._depth -= 1
        self._last_of = None
        held = self._held
        if self._depth or not held:
            return
        if len(held) == 1:  # (one connection written to: no order among connections to keep)
            send(*held.popitem())
            return
        self._held = {}
        large = None
        for transport, chunks in held.items():
            if len(chunks) <= 2 and sum(map(len, chunks)) <= SMALL_SEND_BYTES:
                send(transport, chunks)
            elif large is None:
                large = [(transport, chunks)]
            else:
                large.append((transport, chunks))
        if large is not None:
            for transport, chunks in large:
                send(transport, chunks)

    def write(self, transport, data: bytes) -> None:
        if self._depth:
            if self._last_of is not None and transport is not self._last_of and len(data) <= SMALL_SEND_BYTES:
                self._send_now(transport, [data])
                return
            chunks = self._held.get(transport)
            if chunks is None:
                self._held[transport] = [data]
            else:
                chunks.append(data)
        else:
            transport.write(data)

    def write_sequence(self, transport, data) -> None:
        if self._depth:
            if (
                self._last_of is not None
                and transport is not self._last_of
                and len(data) <= 2
                and sum(map(len, data)) <= SMALL_SEND_BYTES
            ):
                held = self._held.pop(transport, None)  # (_send_now, inline: a delivery's path)
                send(transport, list(data) if held is None else held + list(data))
                return
            chunks = self._held.get(transport)
            if chunks is None:
                self._held[transport] = list(data)
            else:
                chunks.extend(data)
        else:
            transport.writeSequence(data)

    def _send_now(self, transport, chunks: list) -> None:
        """Send `chunks` now, behind what is held for `transport`."""
        held = self._held.pop(transport, None)
        send(transport, chunks if held is None else held + chunks)

    def flush(self, transport) -> None:
        """Send what is held for `transport` now (before it is closed)."""
        chunks = self._held.pop(transport, None)
        if chunks:
            send(transport, chunks)


def send_vector(sock, chunks: list):
    """sendmsg of `chunks` (vectored: nothing joined); what was sent, as writeSomeData
    says it: a number of bytes (0 when the socket takes nothing now), or the error."""
    try:
        return untilConcludes(sock.sendmsg, chunks)
    except OSError as error:
        if error.args[0] in (EWOULDBLOCK, ENOBUFS):
            return 0
        return CONNECTION_LOST


def send(transport, chunks: list) -> None:
    """Write `chunks` to `transport`: straight to a plain TCP socket when the transport
    holds nothing else, the rest (what the socket did not take, or all of it) through
    the transport."""
    size = len(chunks[0]) if len(chunks) == 1 else sum(map(len, chunks))
    if (
        isinstance(transport, TCPConnection)
        and not transport.dataBuffer
        and not transport._tempDataBuffer  # (FileDescriptor's buffer of writes not yet joined)
        and transport.connected
        and not transport.disconnecting
        and size <= DIRECT_SEND_BYTES
    ):
        if len(chunks) == 1:
            data = chunks[0]
            sent = transport.writeSomeData(data)  # an int, or the error it met
        elif size > SMALL_SEND_BYTES and len(chunks) <= VECTOR_CHUNKS:
            # A delivery's header and a stored entry: one sendmsg of them, without joining
            # them first (a copy of the entry per subscriber). Small chunks (a read's
            # replies) are joined: a copy of a few bytes costs less than the kernel's
            # walk over as many pieces.
            sent = send_vector(transport.socket, chunks)
            if sent.__class__ is int and sent == size:
                return
            data = b"".join(chunks)
        else:
            data = b"".join(chunks)
            sent = transport.writeSomeData(data)
        if sent.__class__ is int:
            if sent == len(data):
                return
            data = data[sent:]
        transport.write(data)  # (after an error the reactor's next poll loses the connection)
        return
    if len(chunks) == 1:
        transport.write(chunks[0])
    else:
        transport.writeSequence(chunks)
