"""The floor every single-message figure is measured against: a bare Twisted echo server
in a process of its own, and a raw-socket client that sends it one request at a time.

The server is the least a Twisted hub could be: `dataReceived` writes what it read back
(`transport.write`, which Twisted sends in the reactor's next turn). The client is the
least a Python client could be: one `sendall` of a prepared request, `recv_into` a kept
buffer until the whole echo is back. What hedwig adds to a round trip (decoding, storing,
the reply, the client's request path) is what it does beyond this pair, on the same
machine in the same run; bench/round_trip_bench.py and bench/pubsub_bench.py both
measure it first.
"""

import socket
import time
from array import array

from bench.figures import own_cpu_seconds, percentile

WARMUP = 2000


def echo_server(ready):
    """Serve echo on a free port of 127.0.0.1 until terminated; the port goes to `ready`
    (a queue)."""
    from twisted.internet import reactor
    from twisted.internet.protocol import Factory, Protocol

    class Echo(Protocol):
        def connectionMade(self):
            self.transport.setTcpNoDelay(True)

        def dataReceived(self, data):
            self.transport.write(data)

    factory = Factory.forProtocol(Echo)
    factory.noisy = False
    port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    ready.put(port.getHost().port)
    reactor.run()


class ServerProcess:
    """A server's process: `start()` it, use `address`, `stop()` it. `target(*args,
    ready)` serves on a free port of 127.0.0.1 and puts the port on `ready` (a queue)."""

    def __init__(self, ctx, target, args=()):
        self._ctx = ctx
        self._target = target
        self._args = tuple(args)
        self.process = None
        self.address = None

    def start(self) -> "ServerProcess":
        ready = self._ctx.Queue()
        self.process = self._ctx.Process(target=self._target, args=(*self._args, ready), daemon=True)
        self.process.start()
        self.address = f"127.0.0.1:{ready.get(timeout=60)}"
        return self

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.is_alive()

    def stop(self) -> None:
        if self.process is not None and self.process.is_alive():
            self.process.terminate()
            self.process.join(10)


class EchoServer(ServerProcess):
    """The echo server's process."""

    def __init__(self, ctx):
        super().__init__(ctx, echo_server)


def timed_round_trips(one_round_trip, count: int) -> dict:
    """Run `one_round_trip()` WARMUP times, then `count` times timing each: the rate, the
    median and p99 round trip in microseconds, and the client's CPU seconds."""
    for _ in range(min(WARMUP, count)):
        one_round_trip()
    samples = array("q")
    clock = time.perf_counter_ns
    cpu = own_cpu_seconds()
    started = clock()
    for _ in range(count):
        begun = clock()
        one_round_trip()
        samples.append(clock() - begun)
    seconds = (clock() - started) / 1e9
    cpu = own_cpu_seconds() - cpu
    ordered = sorted(samples)
    return {
        "per_s": round(count / seconds),
        "p50_us": round(percentile(ordered, 0.5) / 1000, 1),
        "p99_us": round(percentile(ordered, 0.99) / 1000, 1),
        "round_trips": count,
        "client_cpu_s": round(cpu, 3),
    }


def connect(address: str) -> socket.socket:
    """A TCP_NODELAY socket connected to `address` ("host:port")."""
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def timed_requests(sock, request: bytes, reply_bytes: int, count: int) -> dict:
    """timed_round_trips of one `sendall(request)` and `recv_into` a kept buffer until
    `reply_bytes` are back, on `sock`."""
    buffer = bytearray(max(reply_bytes, 4096))
    view = memoryview(buffer)
    sendall = sock.sendall
    recv_into = sock.recv_into

    def one_round_trip():
        sendall(request)
        got = recv_into(buffer)
        while got < reply_bytes:
            got += recv_into(view[got:])

    return timed_round_trips(one_round_trip, count)


def echo_client(address, request: bytes, count: int, out):
    """`count` round trips of `request` to the echo server at `address` ("host:port")."""
    sock = connect(address)
    try:
        out.put({"peer": "echo", **timed_requests(sock, request, len(request), count)})
    finally:
        sock.close()
