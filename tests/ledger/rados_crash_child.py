"""A RADOS ledger writer for the crash test: appends until it is killed.

    python rados_crash_child.py CEPH_CONF POOL NAMESPACE

It creates a ledger (its id the first line on stdout), then appends 500-byte entries
(entry i is a function of i) on the real reactor, keeping up to 32 in flight in small
segments (so it rolls often), and prints each entry id the moment its acknowledgement
fires, so the test knows exactly what was promised before its SIGKILL.
"""

import os
import sys

IN_FLIGHT = 32


def entry(i: int, size: int = 500) -> bytes:
    return (b"%07d|" % i * (size // 8 + 1))[:size]


def main(conf_file: str, pool: str, namespace: str) -> None:
    from twisted.internet import reactor

    from hedwig.ledger.rados_store import RadosLedgerStore

    store = RadosLedgerStore(
        reactor=reactor, conf_file=conf_file, pool=pool, namespace=namespace, segment_bytes=16384
    )
    state = {"sent": 0, "in_flight": 0, "ledger": None}

    def failed(failure):
        os.write(2, f"failed: {failure.value}\n".encode())
        os._exit(3)

    def acked(entry_id):
        os.write(1, b"%d\n" % entry_id)
        state["in_flight"] -= 1
        pump()

    def pump():
        while state["in_flight"] < IN_FLIGHT:
            i = state["sent"]
            state["sent"] += 1
            state["in_flight"] += 1
            store.append(state["ledger"], entry(i), 1000 + i).addCallbacks(acked, failed)

    def created(ledger_id):
        state["ledger"] = ledger_id
        os.write(1, b"%d\n" % ledger_id)
        pump()

    store.connect().addCallback(lambda _: store.create()).addCallbacks(created, failed)
    reactor.run()


if __name__ == "__main__":
    main(*sys.argv[1:4])
