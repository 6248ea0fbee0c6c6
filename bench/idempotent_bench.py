"""The hub's CPU per entry for PUBLISH and IDEMPOTENT_PUBLISH, in one process: the real
hub parts (connection, handlers, topic log, read-ahead cache, in-memory ledgers) fed
pre-encoded frames through a StringTransport on a task.Clock, so that no socket, other
process or machine load stands between the two figures (pubsub_bench's hub CPU figure
has a 10 ms resolution, too coarse for a few microseconds per entry).

    .venv/bin/python bench/idempotent_bench.py [--requests 20000] [--rounds 7]

Prints JSON: per set size (1 and 100 messages), microseconds per request of each op
(the minimum over rounds, run alternately), and the idempotent one's cost over PUBLISH.
"""

import argparse
import json
import tempfile
import time

from twisted.internet.address import IPv4Address
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from hedwig.config.settings import Config
from hedwig.hub.assembly import assemble_hub
from hedwig.hub.connection import HubFactory
from hedwig.ledger.memory_store import MemoryLedgerStore
from hedwig.meta.sqlite_store import SqliteMetadataStore
from hedwig.protocol import Op, encode_frame, encode_message_set
from hedwig.protocol.producer_requests import encode_idempotent_publish
from hedwig.protocol.requests import encode_hello, encode_publish

PAYLOAD = b"x" * 100


def run(directory: str, idempotent: bool, set_size: int, requests: int) -> float:
    """Seconds of CPU for `requests` requests on a fresh hub, all answered."""
    clock = Clock()
    clock.advance(1_700_000_000)
    parts = assemble_hub(
        Config(),
        clock,
        ledgers=MemoryLedgerStore(),
        metadata=SqliteMetadataStore(f"{directory}/meta-{time.monotonic_ns()}.db"),
        relays=False,
    )
    connection = HubFactory(parts.hub).buildProtocol(IPv4Address("TCP", "127.0.0.1", 40000))
    transport = StringTransport()
    connection.makeConnection(transport)
    connection.dataReceived(encode_frame(Op.HELLO, 1, encode_hello("bench")))
    message_set = encode_message_set([PAYLOAD] * set_size)
    # The topic opened and the producer known before the clock starts.
    frames = []
    for i in range(requests + 1):
        if idempotent:
            body = encode_idempotent_publish("t", 77, i, message_set, i == 0)
            frames.append(encode_frame(Op.IDEMPOTENT_PUBLISH, 2 + i, body))
        else:
            frames.append(encode_frame(Op.PUBLISH, 2 + i, encode_publish("t", message_set)))
    connection.dataReceived(frames[0])
    clock.advance(0)
    transport.clear()
    chunk = 200  # requests per read, as a pipelining client's bytes arrive
    started = time.process_time()
    for i in range(1, requests + 1, chunk):
        connection.dataReceived(b"".join(frames[i : i + chunk]))
        clock.advance(0)
        transport.clear()
    spent = time.process_time() - started
    assert parts.hub.topics.get("t").last_seq == (requests + 1) * set_size, "not every request was stored"
    return spent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    figures = {}
    with tempfile.TemporaryDirectory() as directory:
        for set_size in (1, 100):
            times = {False: [], True: []}
            for _ in range(args.rounds):
                for idempotent in (False, True):
                    times[idempotent].append(run(directory, idempotent, set_size, args.requests))
            plain, idem = min(times[False]), min(times[True])
            figures[f"sets_of_{set_size}"] = {
                "publish_us_per_request": round(plain / args.requests * 1e6, 2),
                "idempotent_publish_us_per_request": round(idem / args.requests * 1e6, 2),
                "idempotent_cost": f"{(idem / plain - 1) * 100:+.1f}%",
                "runs_s": {
                    "publish": [round(t, 4) for t in times[False]],
                    "idempotent": [round(t, 4) for t in times[True]],
                },
            }
    report = {"benchmark": "idempotent_bench", "requests": args.requests, "figures": figures}
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
