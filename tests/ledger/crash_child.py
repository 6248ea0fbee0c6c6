"""A writer for the crash test: appends to ledgers until it is killed.

    python crash_child.py DATA_DIR SEED FSYNC

It reopens the store (recovering whatever the last kill left), then appends entries
whose content is a function of (ledger, entry id), closing the ledger and starting a new
one now and then, with up to 8 appends in flight. Each acknowledged append is reported
on stdout as "ledger entry\\n" the moment its Deferred fires, so the test knows exactly
what was promised before the SIGKILL. The store's log (what its recovery found and cut)
goes to stderr, which the test keeps as evidence.
"""

import os
import random
import sys

PAGE_BYTES = 16384
OPTIONS = {"page_bytes": PAGE_BYTES, "index_page_records": 64, "max_mapped_pages": 4}
IN_FLIGHT = 8


def payload(ledger: int, entry: int) -> bytes:
    """The bytes of entry `entry` of ledger `ledger`: sizes from 0 to a whole page."""
    rng = random.Random(ledger * 1_000_003 + entry)
    size = rng.choice((rng.randrange(0, 200), rng.randrange(200, 4000), rng.randrange(4000, PAGE_BYTES + 1)))
    head = b"%d/%d;" % (ledger, entry)
    return (head + rng.randbytes(size))[:size]


def main(directory: str, seed: int, fsync: str) -> None:
    from twisted.internet import reactor
    from twisted.logger import globalLogBeginner, textFileLogObserver

    from hedwig.ledger.mmap_store import MmapLedgerStore
    from hedwig.testing.deferreds import fired as result_of

    globalLogBeginner.beginLoggingTo([textFileLogObserver(sys.stderr)], redirectStandardIO=False)
    rng = random.Random(seed)
    store = MmapLedgerStore(directory, reactor=reactor, fsync=fsync, **OPTIONS)
    open_ledgers = [lid for lid in store.list_ledgers() if not store.is_closed(lid)]
    state = {
        "ledger": open_ledgers[-1] if open_ledgers else result_of(store.create()),
        "in_flight": 0,
        "rolling": False,
        "scheduled": False,
    }
    roll_at = rng.randrange(20, 300)

    def soon():
        # Acknowledgements may fire synchronously (fsync never): pump from the reactor
        # loop, not from inside the callback, so the stack stays flat.
        if not state["scheduled"]:
            state["scheduled"] = True
            reactor.callLater(0, pump)

    def acked(entry, ledger):
        os.write(1, b"%d %d\n" % (ledger, entry))
        state["in_flight"] -= 1
        soon()

    def failed(failure):
        os.write(2, f"append failed: {failure.value}\n".encode())
        os._exit(3)

    def rolled(_):
        state["ledger"] = result_of(store.create())
        state["rolling"] = False
        soon()

    def pump():
        state["scheduled"] = False
        ledger = state["ledger"]
        while state["in_flight"] < IN_FLIGHT and not state["rolling"]:
            entry = store.last_entry_id(ledger) + 1
            if entry >= roll_at and state["in_flight"] == 0:
                state["rolling"] = True
                store.close_ledger(ledger).addCallbacks(rolled, failed)
                return
            if entry >= roll_at:
                return
            state["in_flight"] += 1
            d = store.append(ledger, payload(ledger, entry), 1000 + entry)
            d.addCallback(acked, ledger).addErrback(failed)

    reactor.callWhenRunning(pump)
    reactor.run()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
