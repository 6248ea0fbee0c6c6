"""Writing messages to standard output so that a message counts as printed only once its
reader has it, for `subscribe` to acknowledge nothing more.

On a terminal or a file a line is printed once written and flushed. On a pipe, written is
not read: `hedwig subscribe t s | head -3` would fill the pipe with lines head never
takes. So on a pipe each line goes out alone and counts as printed once the pipe holds
nothing unread (FIONREAD) - the reader took it; if the reader goes away first (the pipe
reports an error to its writer), the line was not printed, and the command stops. A line
the reader took but did not print itself (its own buffer) cannot be seen from here.
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
        self.stream.write(line)
        self.stream.flush()
        if not (self.is_pipe and self.wait_for_reader):
            return
        pause = _FIRST_LOOK_S
        while self._unread():
            if self.reader_gone() or (stop is not None and stop()):
                raise ReaderGone()
            time.sleep(pause)
            pause = min(pause * 2, _LONGEST_LOOK_S)
