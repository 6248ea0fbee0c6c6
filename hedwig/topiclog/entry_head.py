"""The seq-ids and publish time at the front of a stored entry, read without copying.

Reads turn every stored entry into a LogEntry, so they need only the fixed leading fields
of the entry header (hedwig.protocol.entry): version, flags, first_seq, count,
publish_time_us. Unpacking those five costs a fraction of a full header decode (which
also builds a NamedTuple and decodes the origin region), and a read pays it per entry.
"""

import struct

from hedwig.protocol.entry import ENTRY_VERSION
from hedwig.topiclog.errors import LogCorrupt

ENTRY_HEAD = struct.Struct("!BBQIQ")


def entry_head(data, ledger_id: int, entry_id: int) -> tuple[int, int, int]:
    """(first_seq, count, publish_time_us) of a stored entry; LogCorrupt when the bytes
    are not an entry this version wrote."""
    if len(data) < ENTRY_HEAD.size:
        raise LogCorrupt(f"ledger {ledger_id} entry {entry_id}: {len(data)} bytes, shorter than a header")
    version, _flags, first_seq, count, time_us = ENTRY_HEAD.unpack_from(data)
    if version != ENTRY_VERSION or count == 0:
        raise LogCorrupt(f"ledger {ledger_id} entry {entry_id}: not a valid entry header")
    return first_seq, count, time_us
