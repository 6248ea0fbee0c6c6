"""A real hub in its own process, as a user starts it: `python -m hedwig hub ...`.

The hub reports its address in its log ("hedwig hub HOST:PORT ... serving"); a thread
reads the log as it comes (so the pipe never fills) and wakes the test when the line
is there. `kill()` is SIGKILL: no shutdown, no flush, like a crash.
"""

import os
import re
import signal
import subprocess
import sys
import threading

_SERVING = re.compile(r"hedwig hub (\S+):(\d+) .*serving")
START_TIMEOUT = 30.0


class HubProcess:
    def __init__(self, data_dir, port=0, *extra_args):
        self.data_dir = str(data_dir)
        self.port = port
        self.extra_args = list(extra_args)
        self.process = None
        self.log = []

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "HubProcess":
        command = [sys.executable, "-m", "hedwig", "hub", "--host", "127.0.0.1", "--port", str(self.port)]
        command += ["--data-dir", self.data_dir, *self.extra_args]
        self.log = []
        serving = threading.Event()
        started = []  # the port, once the hub said it serves
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )

        def read_log(stream, log):
            for line in stream:
                log.append(line)
                match = _SERVING.search(line)
                if match and not serving.is_set():
                    self.port = int(match.group(2))
                    started.append(self.port)
                    serving.set()
            serving.set()  # the process ended: wake the waiter to see that

        threading.Thread(target=read_log, args=(self.process.stderr, self.log), daemon=True).start()
        if not serving.wait(START_TIMEOUT) or not started or self.process.poll() is not None:
            self.stop()
            raise RuntimeError("the hub did not start:\n" + "".join(self.log))
        return self

    def kill(self) -> None:
        """SIGKILL: the hub stops at once, as in a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> int | None:
        """SIGTERM and wait: a graceful shutdown; the exit status."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode

    def restart(self) -> "HubProcess":
        """Start again on the same port and data directory."""
        return self.start()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()


def hub_environment() -> dict:
    """The environment for CLI subprocesses: this interpreter's packages first."""
    env = dict(os.environ)
    env.pop("HEDWIG_HUB", None)
    return env
