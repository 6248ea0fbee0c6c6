"""The headers of writable ledgers kept mapped, at most `max_open` at a time.

An append stores the committed count into its ledger's mapped header, so a writable
ledger's header is mapped while it is written. A mapping holds a file descriptor (Python's
mmap keeps a duplicate of the one it was made from) and a kernel mapping, so a hub with
thousands of topics, most of them idle, would hold one of each per topic and meet the
descriptor limit near a thousand topics. Here the least recently used headers are
unmapped beyond `max_open`; the next append to such a ledger maps its header again.

Recency is a second chance, not a reordering per append: an append sets the ledger's
`header_used` flag (one attribute store), and eviction passes over a used header once,
clearing its flag, so a busy ledger keeps its header and the append path pays nothing more.
"""

import errno
import os
from collections import OrderedDict

from hedwig.ledger.interface import LedgerError
from hedwig.ledger.layout import DURABLE, DURABLE_OFFSET, HEADER_BYTES, HEADER_FILE
from hedwig.ledger.pagefiles import map_file


class OpenHeaders:
    """Mapped headers of writable ledgers, keyed by ledger id, at most `max_open`."""

    def __init__(self, max_open: int):
        if max_open < 1:
            raise ValueError("max_open_ledgers must be at least 1")
        self.max_open = max_open
        self._open = OrderedDict()  # ledger id -> Ledger whose header_mm is mapped
        self.maps_made = 0  # headers mapped so far (for tests and metrics)

    def __len__(self) -> int:
        return len(self._open)

    def map(self, ledger):
        """Map the ledger's header (making room first); its mapping, also set as
        `ledger.header_mm`. LedgerError when it cannot be mapped."""
        mm = ledger.header_mm
        if mm is not None:
            return mm
        self._make_room()
        path = os.path.join(ledger.path, HEADER_FILE)
        try:
            try:
                mm = map_file(path, HEADER_BYTES, True)
            except OSError as e:
                if e.errno not in (errno.EMFILE, errno.ENFILE) or not self._open:
                    raise
                # The process is out of descriptors (connections took them): give back
                # half of the headers' and try once more, rather than refuse the append.
                for _ in range((len(self._open) + 1) // 2):
                    self._unmap(self._open.popitem(last=False)[1])
                mm = map_file(path, HEADER_BYTES, True)
        except (OSError, ValueError) as e:
            reason = getattr(e, "strerror", None) or e
            raise LedgerError(f"ledger {ledger.id}: cannot map its header: {reason}") from None
        # The durable count may have advanced while the header was unmapped.
        DURABLE.pack_into(mm, DURABLE_OFFSET, ledger.durable)
        ledger.header_mm = mm
        ledger.header_used = True
        self._open[ledger.id] = ledger
        self.maps_made += 1
        return mm

    def _make_room(self) -> None:
        headers = self._open
        passes = len(headers)
        while len(headers) >= self.max_open:
            ledger_id, ledger = headers.popitem(last=False)
            if ledger.header_used and passes > 0:
                ledger.header_used = False  # its second chance
                headers[ledger_id] = ledger
                passes -= 1
                continue
            self._unmap(ledger)

    @staticmethod
    def _unmap(ledger) -> None:
        mm, ledger.header_mm = ledger.header_mm, None
        if mm is not None:
            mm.close()

    def discard(self, ledger) -> None:
        """Unmap the ledger's header (it is closed, deleted or no longer writable)."""
        self._open.pop(ledger.id, None)
        self._unmap(ledger)

    def clear(self) -> None:
        while self._open:
            self._unmap(self._open.popitem(last=False)[1])
