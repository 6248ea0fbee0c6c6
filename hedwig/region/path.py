"""A region's path to the root, and the checks that refuse a hierarchy with a cycle.

The path lists region names from this region up: [this, parent, grandparent, ..., root].
It is complete once it ends at a region that has no parent. A root knows its path at
once; any other region learns it from its parent when their link is set up, and a parent
answers a linking child with its own path. The child refuses the link when its own name
is in that path (a cycle) or when the region answering is not the parent it was
configured with, so a cycle is refused before a single message crosses it.

A path that does not reach a root yet (the parent is itself still linking) is passed on
as far as it is known, and grows with each attempt; in a cycle every region ends up seeing
itself in its parent's path, however long the cycle. A link relays only once the parent's
path is complete.

The last complete path is kept in the data directory, so a hub restarted while its
parent is unreachable still answers its children (it was true, and the parent corrects
it on the next link if the hierarchy changed).
"""

import json
import os
from pathlib import Path

from twisted.logger import Logger

_logger = Logger()

PATH_FILE = "region-path.json"


def cycle_through(path: list[str], region: str) -> str | None:
    """A sentence describing the cycle when `region` is in `path` (the path of the
    parent `region` links to), else None."""
    if region not in path:
        return None
    loop = [region, *path[: path.index(region) + 1]]
    return "cycle in the region hierarchy: " + " -> ".join(loop)


class RegionPath:
    """This region's path to the root, as far as it is known."""

    def __init__(self, name: str, parent: str, data_dir: str | None = None):
        self.name = name
        self.parent = parent
        self._file = Path(data_dir) / PATH_FILE if data_dir else None
        if parent:
            self.names = [name, parent]
            self.complete = False
            self._load()
        else:
            self.names = [name]
            self.complete = True

    @property
    def is_root(self) -> bool:
        return not self.parent

    def learned(self, parent_path: list[str], complete: bool) -> bool:
        """The parent answered with its path: ours is it behind our name. True when ours
        changed."""
        names = [self.name]
        for name in parent_path:  # (up to the first region named twice: a cycle, shown once)
            names.append(name)
            if name in names[:-1]:
                complete = False
                break
        if names == self.names and complete == self.complete:
            return False
        self.names = names
        self.complete = complete
        if complete:
            self._save()
        return True

    def describe(self) -> str:
        return " -> ".join(self.names) + ("" if self.complete else " -> ?")

    def _load(self) -> None:
        if self._file is None or not self._file.exists():
            return
        try:
            saved = json.loads(self._file.read_text("utf-8"))
            names = [str(n) for n in saved["path"]]
        except (OSError, ValueError, KeyError, TypeError) as e:
            _logger.warn("ignoring {file}: {error}", file=str(self._file), error=e)
            return
        if len(names) >= 2 and names[0] == self.name and names[1] == self.parent:
            self.names = names
            self.complete = True

    def _save(self) -> None:
        if self._file is None:
            return
        # (a file of its own: the hubs of a region of several share the storage root)
        temporary = self._file.with_suffix(f".{os.getpid()}.tmp")
        try:
            temporary.write_text(json.dumps({"path": self.names}), "utf-8")
            os.replace(temporary, self._file)
        except OSError as e:
            _logger.warn("could not keep the region path in {file}: {error}", file=str(self._file), error=e)
