"""Where a one-message publish's time goes inside a hub: the profile behind the
single-message figures (bench/round_trip_bench.py).

    .venv/bin/python bench/publish_profile.py [--publishes N] [--no-save]

A hub made of its real parts (mmap ledgers under fsync "never", SQLite metadata, the
cache, the delivery manager) in this process, one connection whose transport drops what
it is given: each PUBLISH frame of a 100-byte message is handed to dataReceived, as the
reactor would, and everything down to the reply runs. Without and then with one
subscriber attached (its delivery is written in the same read). Counted per publish:

- bytecodes executed and Python function calls (sys.settrace with opcode events: exact,
  and the same on a busy machine as on an idle one), in all and by function;
- microseconds (the best of six runs of 30,000, the tracer off).

The reactor's own work per read (the poll, its dispatch, the recv) and the socket send
are not in it: bench/round_trip_bench.py measures them beside a bare Twisted echo
server. Prints JSON and writes bench/results/publish_profile.json.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport

from bench.bytecodes import Counts
from bench.figures import RESULTS_DIR, emit, load, report_start
from hedwig.config.settings import Config
from hedwig.hub.assembly import assemble_hub
from hedwig.hub.connection import HubFactory
from hedwig.ledger.mmap_store import MmapLedgerStore
from hedwig.meta.sqlite_store import SqliteMetadataStore
from hedwig.protocol import Op, encode_frame
from hedwig.protocol.requests import encode_hello, encode_subscribe
from hedwig.protocol.session import HubSession
from hedwig.testing.reactors import InlineThreadsReactor

RESULTS = RESULTS_DIR / "publish_profile.json"
PAYLOAD = b"x" * 100
WARMUP = 20_000
TIMED_RUNS, TIMED_PUBLISHES = 6, 30_000


class Discarding(StringTransport):
    """A transport that takes every write and keeps none (the socket's part is not here)."""

    def write(self, data):
        pass

    def writeSequence(self, seq):
        pass


def connect(factory, port: int):
    address = IPv4Address("TCP", "127.0.0.1", port)
    connection = factory.buildProtocol(address)
    connection.makeConnection(Discarding(peerAddress=address))
    connection.dataReceived(encode_frame(Op.HELLO, 1, encode_hello("profile")))
    return connection


def hub_and_frames(directory, subscribed: bool, count: int):
    reactor = InlineThreadsReactor()
    reactor.advance(1_700_000_000)
    ledgers = MmapLedgerStore(os.path.join(directory, "ledgers"), reactor=reactor)
    metadata = SqliteMetadataStore(os.path.join(directory, "metadata.sqlite3"))
    parts = assemble_hub(Config(), reactor, ledgers=ledgers, metadata=metadata, name="profile", relays=False)
    factory = HubFactory(parts.hub)
    publisher = connect(factory, 1)
    if subscribed:
        subscriber = connect(factory, 2)
        subscriber.dataReceived(encode_frame(Op.SUBSCRIBE, 2, encode_subscribe("rt", "s", window=0)))
        reactor.advance(0.1)
    session = HubSession(None)
    frames = [session.publish_one("rt", PAYLOAD)[1] for _ in range(count)]
    return publisher.dataReceived, frames


def traced(receive, frames) -> dict:
    counts = Counts()
    with counts:
        for frame in frames:
            receive(frame)
    return counts.report(len(frames))


def timed(receive, frames) -> dict:
    runs = []
    for k in range(TIMED_RUNS):
        chunk = frames[k * TIMED_PUBLISHES : (k + 1) * TIMED_PUBLISHES]
        started = time.perf_counter()
        for frame in chunk:
            receive(frame)
        runs.append((time.perf_counter() - started) / len(chunk) * 1e6)
    return {"us_per_publish": round(min(runs), 2), "runs_us": [round(r, 1) for r in runs]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--publishes", type=int, default=2000, help="publishes traced (default 2,000)")
    parser.add_argument("--no-save", action="store_true", help=f"do not write bench/results/{RESULTS.name}")
    args = parser.parse_args(argv)
    report = report_start("publish_profile", argv, payload_bytes=len(PAYLOAD))
    for name, subscribed in (("no_subscriber", False), ("one_subscriber", True)):
        directory = tempfile.mkdtemp(prefix="publish-profile-")
        try:
            count = WARMUP + TIMED_RUNS * TIMED_PUBLISHES + args.publishes
            receive, frames = hub_and_frames(directory, subscribed, count)
            for frame in frames[:WARMUP]:
                receive(frame)
            figures = timed(receive, frames[WARMUP : WARMUP + TIMED_RUNS * TIMED_PUBLISHES])
            figures.update(traced(receive, frames[WARMUP + TIMED_RUNS * TIMED_PUBLISHES :]))
            report[name] = figures
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    report["load_after"] = load()
    emit(report, RESULTS, save=not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
