"""Bytecodes and Python calls, counted exactly: the measure of the profile scripts
(bench/publish_profile.py for the hub's side of a message, bench/receive_profile.py for
a client's). sys.settrace with opcode events counts the same on a busy machine as on an
idle one, where a time per message here moves 3x from day to day."""

import collections
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + "/"  # (cut from file names)


class Counts:
    """What the code run inside `with counts:` executed, by function, over all the
    times it was entered; report(steps) gives it per step."""

    def __init__(self):
        self.opcodes = collections.Counter()
        self.calls = collections.Counter()

    def _tracer(self, frame, event, _arg):
        code = frame.f_code
        if code is _EXIT:
            return None  # (leaving the `with`: not the code measured)
        where = f"{code.co_filename.rsplit('site-packages/', 1)[-1].replace(ROOT, '')}:{code.co_name}"
        if event == "call":
            self.calls[where] += 1
            frame.f_trace_opcodes = True
        elif event == "opcode":
            self.opcodes[where] += 1
        return self._tracer

    def __enter__(self):
        sys.settrace(self._tracer)
        return self

    def __exit__(self, *exc_info):
        sys.settrace(None)

    def report(self, steps: int, top: int = 30) -> dict:
        """bytecodes and python_calls per step, and the `top` functions' bytecodes."""
        return {
            "bytecodes": round(sum(self.opcodes.values()) / steps),
            "python_calls": round(sum(self.calls.values()) / steps, 1),
            "bytecodes_by_function": {
                where: round(count / steps, 1) for where, count in self.opcodes.most_common(top)
            },
        }


_EXIT = Counts.__exit__.__code__
