"""Opening the ledgers a memory-mapped store finds on disk: each loaded, recovered if it
was left open, and made writable again where its writer may go on (what MmapLedgerStore
does at start-up, as functions of the directory and what they are given)."""

import os
import shutil

from hedwig.ledger.interface import LedgerError
from hedwig.ledger.layout import (
    HEADER_BYTES,
    HEADER_FILE,
    NEXT_ID_FILE,
    RECORD_BYTES,
    STATE_CLOSED,
    HeaderError,
    HeaderFields,
    data_page_name,
    index_page_name,
    parse_ledger_dir_name,
)
from hedwig.ledger.mmap_ledger import (
    DATA_CHUNK_BYTES,
    INDEX_CHUNK_BYTES,
    MIN_LOOKAHEAD,
    SYNCING_MIN_LOOKAHEAD,
    Ledger,
    write_header_fields,
)
from hedwig.ledger.pagefiles import PageStream
from hedwig.ledger.recovery import clear_records_after, recover_as_the_header_says


def open_existing(directory: str, log, make_writable) -> tuple[dict, int]:
    """Load every ledger under `directory` (recovering open ones; `make_writable(ledger,
    end_page, end_offset)` makes those whose writer may go on writable): the ledgers by
    id, and the next ledger id."""
    ledgers = {}
    highest = 0
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        stem, dot, suffix = name.partition(".")
        if dot and suffix in ("new", "deleted") and parse_ledger_dir_name(stem) is not None:
            shutil.rmtree(path, ignore_errors=True)  # a create or a delete cut short
            continue
        ledger_id = parse_ledger_dir_name(name)
        if ledger_id is None:
            continue
        highest = max(highest, ledger_id)
        try:
            ledger = load(ledger_id, path, log, make_writable)
        except (HeaderError, OSError, LedgerError) as e:
            log.critical(
                "ledger {ledger_id} in {path} cannot be opened and is not served: {error}",
                ledger_id=ledger_id,
                path=path,
                error=e,
            )
            continue
        ledgers[ledger_id] = ledger
    reserved = 1
    try:
        with open(os.path.join(directory, NEXT_ID_FILE)) as f:
            reserved = int(f.read().strip() or 1)
    except (OSError, ValueError):
        pass
    return ledgers, max(reserved, highest + 1)


def load(ledger_id: int, path: str, log, make_writable) -> Ledger:
    """One ledger from its directory, recovered as its header says; made writable
    (`make_writable`) unless closed."""
    with open(os.path.join(path, HEADER_FILE), "rb") as f:
        header = HeaderFields(f.read(HEADER_BYTES))
    if header.ledger_id != ledger_id:
        raise HeaderError(f"the header names ledger {header.ledger_id}")
    closed = header.state == STATE_CLOSED
    count, data_bytes = header.committed_count, header.committed_bytes
    end_page = end_offset = 0
    # This store is the directory's only writer: an open ledger's writer is gone, and
    # the entries its records prove whole are kept even past the header's count.
    recovered = recover_as_the_header_says(path, header, roll_forward_open=True)
    if recovered is not None:
        if recovered.problem is not None:
            log.warn(
                "ledger {ledger_id}: {problem}; cut back from {before} to {after} entries",
                ledger_id=ledger_id,
                problem=recovered.problem,
                before=count,
                after=recovered.count,
            )
            clear_records_after(path, recovered.count, header.index_page_records)
        elif recovered.rolled_forward:
            log.info(
                "ledger {ledger_id}: {extra} whole entries found past the committed count "
                "({before}); the ledger holds {after}",
                ledger_id=ledger_id,
                extra=recovered.rolled_forward,
                before=count,
                after=recovered.count,
            )
        if recovered.count != count:
            count, data_bytes = recovered.count, recovered.data_bytes
            write_header_fields(path, count, data_bytes, min(header.durable_count, count))
        end_page, end_offset = recovered.end_page, recovered.end_offset
    ledger = Ledger(
        ledger_id,
        path,
        header.page_bytes,
        header.index_page_records,
        count,
        data_bytes,
        min(header.durable_count, count),
        closed,
    )
    if not closed:
        try:
            make_writable(ledger, end_page, end_offset)
        except LedgerError as e:  # e.g. a read-only file system: still readable
            ledger.broken = str(e)
            log.error("ledger {ledger_id} is served read-only: {error}", ledger_id=ledger_id, error=e)
    return ledger


def writer_streams(ledger: Ledger, end_page: int, end_offset: int, syncing: bool) -> None:
    """Give a ledger its writer's page streams, its next entry going at end_page/end_offset
    (`syncing`: the fsync policy syncs, so space is prepared in larger first steps)."""
    ledger.data_page, ledger.data_off = end_page, end_offset
    ledger.synced_data_page = end_page
    ledger.synced_index_page = ledger.count // ledger.records_per_page
    ledger.data_stream = PageStream(
        ledger.path,
        data_page_name,
        ledger.page_bytes,
        DATA_CHUNK_BYTES,
        end_page * ledger.page_bytes + end_offset,
        sync_zeros=syncing,
        min_ahead=SYNCING_MIN_LOOKAHEAD if syncing else MIN_LOOKAHEAD,
    )
    ledger.index_stream = PageStream(
        ledger.path,
        index_page_name,
        ledger.index_page_bytes,
        INDEX_CHUNK_BYTES,
        ledger.count * RECORD_BYTES,
        sync_zeros=syncing,
    )
