"""The file-size-limit half of the full-disk test, run in its own process (the limit is
process-wide): python fsize_child.py DATA_DIR. Prints one JSON object with what it saw."""

import json
import os
import resource
import sys


def main(directory: str) -> dict:
    from hedwig.ledger.interface import LedgerStoreFull
    from hedwig.ledger.mmap_store import MmapLedgerStore
    from hedwig.testing.deferreds import fired as result_of
    from hedwig.testing.reactors import InlineThreadsReactor

    options = {"page_bytes": 256 * 1024, "index_page_records": 1024, "max_mapped_pages": 4}
    seen = {}
    store = MmapLedgerStore(directory, reactor=InlineThreadsReactor(), **options)
    ledger = result_of(store.create())
    entries = [bytes([i % 256]) * 20_000 for i in range(64)]
    acked = 0
    for data in entries[:5]:
        result_of(store.append(ledger, data, acked))
        acked += 1
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (128 * 1024, hard))  # no file may grow past 128 KiB
    error = None
    while acked < len(entries):
        try:
            result_of(store.append(ledger, entries[acked], acked))
        except LedgerStoreFull as e:
            error = str(e)
            break
        acked += 1
    seen["error"] = error
    seen["acked"] = acked
    seen["last_entry_id"] = store.last_entry_id(ledger)
    seen["intact"] = result_of(store.read(ledger, 0, acked - 1)) == entries[:acked]
    try:
        result_of(store.create())
        seen["create"] = "created"
    except LedgerStoreFull as e:
        seen["create"] = str(e)
    result_of(store.close())
    store = MmapLedgerStore(directory, reactor=InlineThreadsReactor(), **options)
    seen["reopened_intact"] = result_of(store.read(ledger, 0, store.last_entry_id(ledger))) == entries[:acked]
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # space returns
    seen["after"] = result_of(store.append(ledger, entries[acked], acked))
    seen["after_intact"] = result_of(store.read(ledger, 0, acked)) == entries[: acked + 1]
    result_of(store.close())
    return seen


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    print(json.dumps(main(sys.argv[1])))
