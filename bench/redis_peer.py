"""Redis Streams through redis-py, the peer a single-message figure is compared with,
when this machine has it (Debian's `redis-server`, and redis-py from PyPI). Neither is
a dependency of hedwig or of its tests: a benchmark without them says so and goes on.

The server runs with its AOF on and `appendfsync no`, the guarantee closest to a hub's
default (`fsync = never`: an acknowledged message survives the process, not a power
cut), and no RDB snapshots. One XADD per round trip: what a user who calls
`r.xadd(stream, {"p": payload})` once per message gets.
"""

import importlib.util
import os
import shutil
import socket
import subprocess
import time
from array import array

from bench.client_processes import publish_paced
from bench.echo_peer import timed_round_trips
from bench.figures import latency_summary
from hedwig.testing.hubprocess import free_port

START_TIMEOUT_S = 30.0


def missing() -> str | None:
    """Why Redis cannot be measured here, or None when it can."""
    if shutil.which("redis-server") is None:
        return "redis-server is not installed (apt-get install redis-server)"
    if importlib.util.find_spec("redis") is None:
        return "redis-py is not installed (pip install redis)"
    return None


class RedisServer:
    """redis-server on a free port of 127.0.0.1, its files under `directory`."""

    def __init__(self, directory: str):
        self.directory = directory
        self.port = free_port()
        self.process = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> "RedisServer":
        os.makedirs(self.directory, exist_ok=True)
        options = {
            "bind": "127.0.0.1",
            "port": str(self.port),
            "dir": self.directory,
            "save": "",
            "appendonly": "yes",
            "appendfsync": "no",
        }
        command = ["redis-server"]
        for name, value in options.items():
            command += [f"--{name}", value]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.05)  # (polling a process of our own for its port to open)

    def stop(self) -> None:
        if self.running:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def xadd_client(address, stream: str, payload: bytes, count: int, out):
    """`count` XADDs of one 100-byte field, one per round trip (redis-py)."""
    import redis

    host, port = address.rsplit(":", 1)
    client = redis.Redis(host=host, port=int(port))
    fields = {"p": payload}
    try:
        out.put({"peer": "redis_xadd", **timed_round_trips(lambda: client.xadd(stream, fields), count)})
    finally:
        client.close()


def xread_subscriber(address, stream: str, count: int, warmup: int, ready, out):
    """Reads `count` entries of `stream` with blocking XREADs (from the entries added
    after it started), timing each from the stamp in its payload's first 8 bytes, as
    bench.client_processes.latency_subscriber does for a hub; sets `ready` first."""
    import redis

    host, port = address.rsplit(":", 1)
    client = redis.Redis(host=host, port=int(port), socket_timeout=None)
    clock = time.perf_counter_ns
    latencies = array("q")
    newest = client.xrevrange(stream, count=1)
    last_id = newest[0][0] if newest else "0-0"  # (every entry added from now on is read)
    received = 0
    ready.set()
    try:
        while received < count:
            reply = client.xread({stream: last_id}, count=1000, block=int(START_TIMEOUT_S * 1000))
            now = clock()
            if not reply:
                break
            for entry_id, fields in reply[0][1]:
                if received >= warmup:
                    latencies.append(now - int.from_bytes(fields[b"p"][:8], "big"))
                received += 1
                last_id = entry_id
    finally:
        client.close()
    out.put({"peer": "redis_xread", "messages": len(latencies), **latency_summary(latencies)})


def xadd_publisher(address, stream: str, rate: int, seconds: float, start, out):
    """bench.client_processes.latency_publisher's pace over XADD: one XADD per message
    (a pipeline of those due together after a late wake-up)."""
    import redis

    host, port = address.rsplit(":", 1)
    client = redis.Redis(host=host, port=int(port))
    if not start.wait(START_TIMEOUT_S):
        raise RuntimeError(f"not told to start within {START_TIMEOUT_S} s")

    def xadd_many(payloads):
        pipeline = client.pipeline(transaction=False)
        for payload in payloads:
            pipeline.xadd(stream, {"p": payload})
        pipeline.execute()

    try:
        sent = publish_paced(rate, seconds, lambda payload: client.xadd(stream, {"p": payload}), xadd_many)
    finally:
        client.close()
    out.put({"sent": sent})
