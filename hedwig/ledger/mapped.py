"""A bounded set of mapped pages, least recently used unmapped first.

The store maps page files on demand and keeps at most `max_pages` of them mapped, so a
log far larger than memory is served with bounded address space and bounded RSS: an
unmapped page costs nothing but its page-cache pages, which the kernel may reclaim.
Callers never keep a view into a mapping beyond their own call (a mapping may be closed
by the next lookup), which is why reads hand out copies.
"""

import errno
from collections import OrderedDict


class MappedPages:
    """Mappings keyed by (ledger id, kind, page number), at most `max_pages` at a time."""

    def __init__(self, max_pages: int, on_unmap=None):
        if max_pages < 2:
            raise ValueError("max_mapped_pages must be at least 2 (a data and an index page)")
        self.max_pages = max_pages
        self._maps = OrderedDict()
        self._on_unmap = on_unmap  # called with the key after a mapping is closed
        self.maps_made = 0  # mappings created so far (for tests and metrics)
        self.high_water = 0  # the most mappings held at once

    def __len__(self) -> int:
        return len(self._maps)

    def get(self, key, opener):
        """The mapping for `key`, made with `opener()` if it is not mapped; it becomes the
        most recently used. Making room unmaps the least recently used first."""
        maps = self._maps
        mm = maps.get(key)
        if mm is not None:
            maps.move_to_end(key)
            return mm
        while len(maps) >= self.max_pages:
            self._close(*maps.popitem(last=False))
        try:
            mm = opener()
        except OSError as e:
            # Out of descriptors (each mapping holds one): give back the older half of the
            # mappings (never the most recent: a writer's data page looked up just before
            # its index page) and try once more.
            if e.errno not in (errno.EMFILE, errno.ENFILE) or len(maps) < 2:
                raise
            for _ in range(len(maps) // 2):
                self._close(*maps.popitem(last=False))
            mm = opener()
        maps[key] = mm
        self.maps_made += 1
        if len(maps) > self.high_water:
            self.high_water = len(maps)
        return mm

    def discard_ledger(self, ledger_id: int) -> None:
        """Unmap every page of one ledger (before it is cut, closed or deleted)."""
        for key in [k for k in self._maps if k[0] == ledger_id]:
            self._close(key, self._maps.pop(key))

    def clear(self) -> None:
        while self._maps:
            self._close(*self._maps.popitem(last=False))

    def _close(self, key, mm) -> None:
        mm.close()
        if self._on_unmap is not None:
            self._on_unmap(key)
