"""Writing messages to standard output so that a message counts as printed only once its
reader has it, for `subscribe` to acknowledge nothing more.

On a terminal or a file a line is printed once written: the lines of a delivery go out
in one write. On a pipe, written is not read: `hedwig subscribe t s | head -3` would fill
the pipe with lines head never takes. So on a pipe a line counts as printed once the pipe
holds nothing unread (FIONREAD): the reader took it; if the reader goes away first (the
pipe reports an error to its writer), it was not printed, and the command stops.

A reader takes whatever the pipe holds in one read: only a line written alone is known to
be taken by itself. So the first EXACT_LINES lines of a run go one at a time, each waited
for (`| head -3` acknowledges exactly three); after that, waiting line by line would cost
two process wake-ups a line (about 11 us here: 1M lines in 12 s where `hedwig read` takes
4), so lines go in batches of up to BATCH_BYTES, each counted once the reader took all of
it. A reader that stops in the middle of such a batch (after the first EXACT_LINES) took,
and was counted for, lines it may not have printed: at most one batch. A line the reader
took but did not print itself (its own buffer) cannot be seen from here either way.
"""

import fcntl
import os
import select
import stat
import struct
import sys
import termios
import time

# How long to wait between looks at a pipe whose reader has not taken the last line yet:
# short at first (a reader blocked in read() takes it within microseconds), longer for a
# reader that is busy (a pager waiting for its user).
_FIRST_LOOK_S = 0.00002
_LONGEST_LOOK_S = 0.05
# Lines of a run written one at a time on a pipe, each waited for; then batches of up to
# BATCH_BYTES (the module docstring says why).
EXACT_LINES = 1000
BATCH_BYTES = 64 * 1024


class ReaderGone(Exception):
    """The reader of standard output closed it: what was not taken was not printed."""


class Printer:
    """`wait_for_reader`: on a pipe, return from print() only once the reader took the
    line (for a command that acknowledges what it printed); without it a line is printed
    once written and flushed (`hedwig read`, which acknowledges nothing)."""

    def __init__(self, stream=None, wait_for_reader: bool = True):
        self.stream = stream if stream is not None else sys.stdout.buffer
        self.fd = self.stream.fileno()
        self.is_pipe = stat.S_ISFIFO(os.fstat(self.fd).st_mode)
        self.wait_for_reader = wait_for_reader
        self._poll = select.poll()
        self._poll.register(self.fd, select.POLLERR)
        self.exact_left = EXACT_LINES  # lines still to go one at a time on a pipe

    def reader_gone(self) -> bool:
        """Whether the reader closed its end (pipes only; a terminal or file stays)."""
        if not self.is_pipe:
            return False
        return any(event & (select.POLLERR | select.POLLHUP) for _fd, event in self._poll.poll(0))

    def _unread(self) -> int:
        return struct.unpack("i", fcntl.ioctl(self.fd, termios.FIONREAD, b"\0\0\0\0"))[0]

    def print(self, line: bytes, stop=None) -> None:
        """Write and flush `line`; on a pipe, return once the reader took it. Raises
        ReaderGone (or BrokenPipeError) when it was not printed. `stop()` True ends the
        wait early, with the line counted as not printed."""
        if not self.print_lines([line], stop):
            raise ReaderGone()

    def print_lines(self, lines: list, stop=None) -> int:
        """Write `lines` (bytes, each with its newline); how many of them were printed,
        in order: all of them, unless the reader went away (or `stop()` became True) first.
        On a pipe, as the module docstring says: one at a time while the run's first
        EXACT_LINES last, then in batches, each counted once the reader took all of it."""
        if not (self.is_pipe and self.wait_for_reader):
            try:
                self.stream.write(b"".join(lines))
                self.stream.flush()
            except BrokenPipeError:
                return 0
            return len(lines)
        printed = 0
        count = len(lines)
        while printed < count:
            if self.exact_left > 0:
                batch = lines[printed : printed + 1]
                self.exact_left -= 1
            else:
                size = 0
                end = printed
                while end < count and (end == printed or size + len(lines[end]) <= BATCH_BYTES):
                    size += len(lines[end])
                    end += 1
                batch = lines[printed:end]
            try:
                self.stream.write(b"".join(batch))
                self.stream.flush()
            except BrokenPipeError:
                return printed
            if not self._taken(stop):
                return printed
            printed += len(batch)
        return printed

    def _taken(self, stop) -> bool:
        """Wait until the pipe holds nothing unread: True, or False when the reader went
        away (or `stop()` became True) first."""
        pause = _FIRST_LOOK_S
        while self._unread():
            if self.reader_gone() or (stop is not None and stop()):
                return False
            time.sleep(pause)
            pause = min(pause * 2, _LONGEST_LOOK_S)
        return True
