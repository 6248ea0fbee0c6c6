"""A producer process for bench/cluster_bench.py --prepared: the protocol session
(hedwig.protocol.session.HubSession, what every client drives) over plain sockets, one
connection per hub, a selector loop, one pre-encoded message set in flight per topic.

Why not the asyncio client: a producer shares this 2-core machine with the hubs it
measures, and the asyncio client's per-request machinery (a Future, a timeout timer, a
task step per reply) cost about 200 us of CPU per set, about 60% of what a hub spends
storing it. With one hub that cost runs on the core the hub leaves idle; with two hubs
it is taken from the hubs, so it lowered the two-hub figure only. Here a set costs its
send and its reply's parse: the frames on the wire are the clients' (the session builds
them), the hubs' work is the same.
"""

import selectors
import socket
import time

from bench.client_processes import PAYLOAD, START_WAIT_S
from bench.figures import own_cpu_seconds

SET_SIZE = 1000


class _HubConnection:
    """One blocking socket to one hub and its session; replies are collected as they are
    parsed (`answers`: (response, topic))."""

    def __init__(self, address: str):
        from hedwig.protocol import Op, Status
        from hedwig.protocol.requests import encode_hello
        from hedwig.protocol.session import HubSession

        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.session = HubSession(self)
        self.answers = []
        _request_id, frame = self.session.request(Op.HELLO, encode_hello("cluster-bench"), "hello")
        self.sock.sendall(frame)
        while not self.answers:
            self.receive()
        response, _ = self.answers.pop()
        if response.status is not Status.SUCCESS:
            raise RuntimeError(f"HELLO refused by {address}: {response.status} {response.message}")

    def response_received(self, _request_id, response, context) -> None:
        self.answers.append((response, context))

    def request_received(self, op, _request_id, _body) -> None:
        raise RuntimeError(f"unexpected request {op} from the hub")

    def receive(self) -> None:
        data = self.sock.recv(1 << 16)
        if not data:
            raise RuntimeError("the hub closed the connection")
        self.session.data_received(data)

    def publish(self, topic: str, message_set: bytes) -> None:
        _request_id, parts = self.session.publish(topic, message_set, topic)
        sent = self.sock.sendmsg(parts)
        total = sum(len(part) for part in parts)
        if sent < total:
            self.sock.sendall(b"".join(parts)[sent:])


def session_producer(owners: dict, topics, sets_per_topic: int, warm_sets: int, start, out) -> None:
    """Publish `sets_per_topic` sets of SET_SIZE messages (one set encoded once) to each
    of `topics` straight to its owner (`owners`: topic -> "host:port", as placed before
    the clock starts), one set in flight per topic, after `warm_sets` sets each and
    `start` (a Barrier of every producer and the bench) passed; puts messages,
    started_ns, ended_ns and cpu_s as cluster_bench's producer does."""
    from hedwig.client.payloads import encode_payloads
    from hedwig.protocol import Status

    message_set = encode_payloads([PAYLOAD] * SET_SIZE, None, None)[0]
    connections = {address: _HubConnection(address) for address in {owners[t] for t in topics}}
    selector = selectors.DefaultSelector()
    for connection in connections.values():
        selector.register(connection.sock, selectors.EVENT_READ, connection)

    def run(rounds: int) -> None:
        remaining = dict.fromkeys(topics, rounds)
        for topic in topics:
            connections[owners[topic]].publish(topic, message_set)
        in_flight = len(topics)
        while in_flight:
            for key, _events in selector.select():
                connection = key.data
                connection.receive()
                for response, topic in connection.answers:
                    if response.status is not Status.SUCCESS:
                        raise RuntimeError(f"publish to {topic}: {response.status} {response.message}")
                    remaining[topic] -= 1
                    if remaining[topic]:
                        connection.publish(topic, message_set)
                    else:
                        in_flight -= 1
                connection.answers.clear()

    run(warm_sets)
    start.wait(START_WAIT_S)
    cpu = own_cpu_seconds()
    started_ns = time.perf_counter_ns()
    run(sets_per_topic)
    ended_ns = time.perf_counter_ns()
    cpu_s = own_cpu_seconds() - cpu
    for connection in connections.values():
        connection.sock.close()
    out.put(
        {
            "messages": sets_per_topic * len(topics) * SET_SIZE,
            "started_ns": started_ns,
            "ended_ns": ended_ns,
            "cpu_s": cpu_s,
        }
    )
