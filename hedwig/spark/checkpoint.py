"""What a Structured Streaming checkpoint says has been committed.

Spark writes, for every micro-batch N, `offsets/N` (the batch's end offsets, before it
runs) and, once the sink has committed the batch's output, `commits/N`. Both files are
written to a temporary name and renamed, so a file is there whole or not at all. The
offsets of the highest N that has a commit are therefore exactly what has safely left
the hub: the drain acknowledges those and nothing beyond.

`offsets/N` is text: a version line ("v1"), a line of batch metadata (JSON), then one
line per source with its offset as JSON ("-" for none). The drain's query has one
source, whose offset is {topic: seq-id} (offsets.py).

Checkpoints on the local filesystem are read directly; any other scheme (hdfs://,
s3a://, ...) through the Hadoop FileSystem of the Spark session, as Spark reads them.
"""

import json
import os
from urllib.parse import urlparse


class CheckpointError(RuntimeError):
    """A checkpoint that does not read as Spark's offsets and commits logs."""


class LocalFiles:
    """A checkpoint directory on the local filesystem (a path or a file: URI)."""

    def __init__(self, root: str):
        parsed = urlparse(root)
        self.root = parsed.path if parsed.scheme == "file" else root

    def names(self, directory: str) -> list:
        try:
            return os.listdir(os.path.join(self.root, directory))
        except FileNotFoundError:
            return []

    def read(self, path: str) -> str:
        with open(os.path.join(self.root, path), encoding="utf-8") as f:
            return f.read()


class HadoopFiles:
    """A checkpoint directory on any filesystem the Spark session's Hadoop can reach."""

    def __init__(self, spark, root: str):
        jvm = spark.sparkContext._jvm
        self._jvm = jvm
        self._root = jvm.org.apache.hadoop.fs.Path(root)
        self._fs = self._root.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())

    def _path(self, relative: str):
        return self._jvm.org.apache.hadoop.fs.Path(self._root, relative)

    def names(self, directory: str) -> list:
        path = self._path(directory)
        if not self._fs.exists(path):
            return []
        return [status.getPath().getName() for status in self._fs.listStatus(path)]

    def read(self, path: str) -> str:
        stream = self._fs.open(self._path(path))
        try:
            return self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()


def checkpoint_files(root: str, spark=None):
    """The right reader for `root`: local paths directly, other schemes through Spark."""
    if urlparse(root).scheme in ("", "file"):
        return LocalFiles(root)
    if spark is None:
        raise CheckpointError(f"reading checkpoint {root} needs the Spark session's filesystem")
    return HadoopFiles(spark, root)


def parse_source_offset(text: str, where: str) -> dict:
    """The single source offset in the text of an `offsets/N` file."""
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < 3 or not lines[0].startswith("v"):
        raise CheckpointError(
            f"{where}: not a Spark offsets file (expected a version line, metadata, offsets)"
        )
    if lines[0] != "v1":
        raise CheckpointError(f"{where}: offsets log version {lines[0]!r}; this drain reads v1")
    sources = lines[2:]
    if len(sources) != 1:
        raise CheckpointError(f"{where}: {len(sources)} sources; a drain query has exactly one")
    if sources[0].strip() == "-":
        return {}
    try:
        offset = json.loads(sources[0])
    except ValueError:
        raise CheckpointError(f"{where}: source offset {sources[0][:80]!r} is not JSON") from None
    if not isinstance(offset, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in offset.items()
    ):
        raise CheckpointError(f"{where}: source offset {sources[0][:80]!r} is not {{topic: seq-id}}")
    return offset


def last_committed(files) -> tuple[int, dict] | None:
    """(batch id, {topic: seq-id}) of the newest committed batch, or None before any."""
    committed = [int(name) for name in files.names("commits") if name.isdigit()]
    if not committed:
        return None
    batch = max(committed)
    where = f"offsets/{batch}"
    try:
        text = files.read(where)
    except (FileNotFoundError, OSError) as e:
        raise CheckpointError(f"batch {batch} is committed but {where} cannot be read: {e}") from None
    return batch, parse_source_offset(text, where)
