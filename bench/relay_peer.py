"""The floor of end-to-end latency: the least a hub could do between a publisher and a
subscriber, in three processes of their own, as hedwig's are.

A message's path from a publisher to a subscriber crosses two sockets and wakes three
processes, where an echo round trip wakes two. This measures that path with nothing of
hedwig's on it, paced exactly as bench/round_trip_bench.py paces hedwig's publisher:

- the relay: a bare Twisted server. The first connection to send b"S" is the
  subscriber (answered with b"S" once it is); every other connection is a publisher.
  Each read from a publisher is written on to the subscriber as it came
  (`transport.write`), and answered with one byte per whole 100-byte message in it,
  the publisher's acknowledgement;
- the publisher: a raw socket, `publish_paced` (bench/client_processes.py): one message
  per `sendall` when one is due, the few due at once after a late wake-up in one, and
  `recv_into` until every one of them is acknowledged;
- the subscriber: a raw socket, `recv_into` a kept buffer; each whole message read is
  timed from the stamp in its first 8 bytes.

What hedwig's end-to-end latency adds to this relay's, measured in the same run and the
same placement, is what hedwig does: framing, storing, the cursor, the clients.
"""

import time
from array import array

from bench.client_processes import PAYLOAD_BYTES, START_WAIT_S, publish_paced
from bench.echo_peer import ServerProcess, connect
from bench.figures import latency_summary

SUBSCRIBER_HELLO = b"S"


def relay_server(ready):
    """Relay on a free port of 127.0.0.1 until terminated; the port goes to `ready` (a
    queue)."""
    from twisted.internet import reactor
    from twisted.internet.protocol import Factory, Protocol

    class Relay(Protocol):
        """A publisher's connection, until it says it is the subscriber."""

        subscriber = None  # (the subscriber's transport, shared by the factory's protocols)

        def connectionMade(self):
            self.transport.setTcpNoDelay(True)
            self.partial = 0  # bytes of a message not yet whole

        def dataReceived(self, data):
            if data == SUBSCRIBER_HELLO and Relay.subscriber is None:
                Relay.subscriber = self.transport
                self.transport.write(SUBSCRIBER_HELLO)  # (registered: the publisher may start)
                return
            Relay.subscriber.write(data)
            whole, self.partial = divmod(self.partial + len(data), PAYLOAD_BYTES)
            if whole:
                self.transport.write(b"a" * whole)

        def connectionLost(self, reason):
            if Relay.subscriber is self.transport:
                Relay.subscriber = None  # (the next run's subscriber may come)

    factory = Factory.forProtocol(Relay)
    factory.noisy = False
    port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    ready.put(port.getHost().port)
    reactor.run()


class RelayServer(ServerProcess):
    """The relay's process."""

    def __init__(self, ctx):
        super().__init__(ctx, relay_server)


def relay_publisher(address, rate, seconds, start, out):
    """Once `start` (an Event) is set, sends `rate` messages a second for `seconds`, each
    waiting for its acknowledgement as a blocking publish does."""
    if not start.wait(START_WAIT_S):
        raise RuntimeError(f"not told to start within {START_WAIT_S} s")
    sock = connect(address)
    buffer = bytearray(4096)

    def send(data: bytes, count: int) -> None:
        # `count` acknowledgements may be more than the buffer holds (a late wake-up makes
        # a large group due): each read goes to its start, and only how many is kept.
        sock.sendall(data)
        got = 0
        while got < count:
            received = sock.recv_into(buffer)
            if not received:
                raise ConnectionError("the relay closed the connection")
            got += received

    try:
        sent = publish_paced(rate, seconds, lambda p: send(p, 1), lambda ps: send(b"".join(ps), len(ps)))
    finally:
        sock.close()
    out.put({"sent": sent})


def relay_subscriber(address, count, warmup, ready, out):
    """Sets `ready` once it is the relay's subscriber, then reads `count` messages and
    times each from its stamp; the first `warmup` are not timed. Puts p50_us, p99_us,
    p999_us and max_us."""
    sock = connect(address)
    sock.sendall(SUBSCRIBER_HELLO)
    if sock.recv(1) != SUBSCRIBER_HELLO:
        raise ConnectionError("the relay did not take this connection as its subscriber")
    time_ns = time.perf_counter_ns
    latencies = array("q")
    buffer = bytearray(1 << 16)
    view = memoryview(buffer)
    held = 0  # bytes of a message not yet whole at the buffer's start
    received = 0
    ready.set()
    try:
        while received < count:
            got = sock.recv_into(view[held:])
            now = time_ns()
            if not got:
                break
            held += got
            whole = held - held % PAYLOAD_BYTES
            for at in range(0, whole, PAYLOAD_BYTES):
                if received >= warmup:
                    latencies.append(now - int.from_bytes(buffer[at : at + 8], "big"))
                received += 1
            buffer[: held - whole] = buffer[whole:held]
            held -= whole
    finally:
        sock.close()
    out.put({"messages": len(latencies), **latency_summary(latencies)})
