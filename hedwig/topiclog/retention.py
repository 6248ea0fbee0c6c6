"""Which of a topic's oldest ledgers may go: consumption first, then retention limits.

Whole ledgers only, oldest first, never the open one. A closed ledger goes when every
subscriber consumed its last seq-id (Hedwig's messages-consumed rule); retention then
takes more, even unconsumed: by age (its newest entry is older than retention_secs, as
Luxun's removeBefore) and by size (while the topic's ledgers hold more than
retention_bytes, as Luxun's limitBackFileSize). A policy, with no I/O: the caller supplies
each ledger's last publish time and size. Whole ledgers make it as fine-grained as the
rolls (by bytes, entries and age); the age roll (max_ledger_age_s) is what closes a quiet
topic's last ledger, so that this reaches it at all.
"""

from collections.abc import Callable, Sequence

from hedwig.config.settings import LogSettings
from hedwig.meta.interface import LedgerRange


def ledgers_to_delete(
    ranges: Sequence[LedgerRange],
    min_consumed_seq: int,
    settings: LogSettings,
    now_us: int,
    last_time_us: Callable[[LedgerRange], int],
    size_bytes: Callable[[LedgerRange], int],
) -> int:
    """How many ranges, from the oldest, to delete; the last range (open) always stays."""
    closed = len(ranges) - 1
    doomed = 0
    while doomed < closed and ranges[doomed].last_seq <= min_consumed_seq:
        doomed += 1
    if settings.retention_secs > 0:
        cutoff = now_us - settings.retention_secs * 1_000_000
        while doomed < closed and last_time_us(ranges[doomed]) < cutoff:
            doomed += 1
    if settings.retention_bytes > 0:
        sizes = [size_bytes(r) for r in ranges]
        kept = sum(sizes[doomed:])
        while doomed < closed and kept > settings.retention_bytes:
            kept -= sizes[doomed]
            doomed += 1
    return doomed
