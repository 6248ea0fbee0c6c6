"""Process death: a child appending through the whole log stack (mmap ledgers, SQLite
metadata, rolls every 25 entries) is killed with SIGKILL at random moments; after each
kill every entry it reported acknowledged is there and intact, and seq-ids are dense.

Two things keep the test honest about what the child acknowledged:

- the child is a fork of this process, so it appends with exactly the code this process
  recovers and checks with. A child started as a new interpreter imports the working tree
  as it is at that moment; when that changes during a run (the ledger format did, once),
  the check compares two versions of the store, not a crash against recovery;
- its reports are read from the pipe as raw bytes and split on newlines here, every byte
  kept: a text file object reads ahead, and what it had buffered when the test stopped
  iterating was lost to the read of the rest (Popen.communicate reads the descriptor), so
  acknowledgements went unchecked and the rest began with the tail of a cut line."""

import os
import random
import select
import signal
import traceback

import pytest

from hedwig.config.settings import LogSettings
from tests.topiclog.harness import HAVE_MMAP, LogStack, message_set, settle

KILLS = 20
SILENCE_LIMIT_S = 60  # a child that reports nothing for this long is stuck, not slow

pytestmark = pytest.mark.skipif(not HAVE_MMAP, reason="hedwig.ledger.mmap_store is not in the tree")


class ReportReader:
    """Whole lines "first last count size" read from a pipe, every byte kept between reads."""

    def __init__(self, fd: int):
        self.fd = fd
        self.pending = b""  # the start of a line not yet ended
        self.closed = False

    def read(self, timeout: float = SILENCE_LIMIT_S) -> list[tuple[int, ...]]:
        """The lines ended by one read of the pipe ([] at end of file); AssertionError when
        nothing arrives within `timeout` seconds (a bound, never a synchronisation)."""
        if not select.select([self.fd], [], [], timeout)[0]:
            raise AssertionError(f"the child wrote nothing for {timeout} s")
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            self.closed = True
            return []
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        return [tuple(map(int, line.split())) for line in lines]

    def read_to_end(self) -> list[tuple[int, ...]]:
        out = []
        while not self.closed:
            out.extend(self.read())
        return out


def _child(directory: str, seed: int, write_fd: int) -> None:
    """In the forked child: append until killed; never return into the test runner."""
    try:
        from tests.topiclog import crash_child

        crash_child.main(directory, seed, os.fdopen(write_fd, "w"))
    except BaseException:
        with open(os.path.join(directory, "child-error.txt"), "w") as f:
            traceback.print_exc(file=f)
    finally:
        os._exit(1)


def run_child_until_killed(
    directory: str, seed: int, acks_before_kill: int
) -> list[tuple[int, int, int, int]]:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(directory, seed, write_fd)
    os.close(write_fd)
    reader = ReportReader(read_fd)
    acked = []
    try:
        while len(acked) < acks_before_kill and not reader.closed:
            acked.extend(reader.read())
        os.kill(pid, signal.SIGKILL)
        # the child went on appending while we read: take everything it reported before dying
        acked.extend(reader.read_to_end())
    finally:
        os.close(read_fd)
        os.kill(pid, signal.SIGKILL)  # (a no-op once it is dead, until it is reaped)
        _, status = os.waitpid(pid, 0)
    if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
        with open(os.path.join(directory, "child-error.txt")) as f:
            raise AssertionError(f"the child stopped by itself:\n{f.read()}")
    assert reader.pending == b"", f"the child's last report was cut: {reader.pending!r}"
    return acked


def test_report_reader_stops_waiting_for_a_silent_child():
    read_fd, write_fd = os.pipe()
    try:
        with pytest.raises(AssertionError, match="wrote nothing"):
            ReportReader(read_fd).read(timeout=0)
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_report_reader_keeps_every_line_across_reads():
    """A line split across two reads of the pipe comes out whole, once."""
    read_fd, write_fd = os.pipe()
    try:
        reader = ReportReader(read_fd)
        os.write(write_fd, b"1 2 2 10\n3 5 3 ")
        assert reader.read() == [(1, 2, 2, 10)]
        os.write(write_fd, b"20\n6 6 1 30\n")
        os.close(write_fd)
        write_fd = None
        assert reader.read_to_end() == [(3, 5, 3, 20), (6, 6, 1, 30)]
        assert reader.pending == b""
    finally:
        os.close(read_fd)
        if write_fd is not None:
            os.close(write_fd)


def test_acknowledged_entries_survive_sigkill(tmp_path):
    rng = random.Random(2024)
    directory = str(tmp_path)
    reported = {}  # first_seq -> (last_seq, count, size)
    for kill in range(KILLS):
        for first, last, count, size in run_child_until_killed(directory, kill * 1000, rng.randint(1, 120)):
            reported[first] = (last, count, size)
        stack = LogStack(
            "mmap", directory, LogSettings(max_ledger_entries=25), page_bytes=64 << 10, index_page_records=256
        )
        try:
            topic_log = settle(stack, stack.manager().open("t"))
            entries = settle(stack, topic_log.read(1, 1 << 30, 1 << 40)) if topic_log.last_seq else []
            # a valid prefix: dense from 1, each entry what its header says
            assert [e.first_seq for e in entries] == [1] + [e.last_seq + 1 for e in entries[:-1]]
            found = {e.first_seq: e for e in entries}
            for first, (last, count, size) in reported.items():
                entry = found.get(first)
                assert entry is not None, f"acknowledged entry {first}..{last} lost after kill {kill}"
                assert entry.last_seq == last
                assert entry.data.endswith(message_set(count, size, first))
        finally:
            stack.close()
    assert len(reported) > KILLS
