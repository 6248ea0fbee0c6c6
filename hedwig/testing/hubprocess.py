"""A real hub in its own process, as a user starts it: `python -m hedwig hub ...`.

One helper for every test and benchmark that needs a hub process (the client, CLI, hub,
region and Spark tests, and bench/: hedwig.testing). The hub reports its address in its log ("hedwig
hub HOST:PORT (region R) serving ..."); a thread reads the log as it comes (so the pipe
never fills and stalls the hub) and wakes the starter when that line is there, or when
the process ended without it. The log is kept in memory, its last LOG_LINES lines.

`launcher` runs the hub some other way (`make run`'s command line, `twistd -n hedwig`):
the same options follow it. `kill()` is SIGKILL: no shutdown, no flush, like a crash.
"""

import collections
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading

SERVING = re.compile(r"hedwig hub (\S+):(\d+) .*serving")
TLS_LISTENING = re.compile(r"hedwig hub \S+: TLS on (\S+):(\d+) ")
HTTP_LISTENING = re.compile(r"hedwig hub \S+: HTTP on https?://(\S+):(\d+)/")
KAFKA_LISTENING = re.compile(r"hedwig hub \S+: Kafka on (\S+):(\d+) ")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
LOG_LINES = 10_000


class HubProcess:
    """A hub on `data_dir`, listening on `port` (0: a free one, kept for restarts)."""

    def __init__(
        self,
        data_dir,
        port: int = 0,
        *extra_args: str,
        launcher=None,
        host: str | None = "127.0.0.1",
        cwd=None,
        env=None,
        log_on_stdout: bool = False,
        tls: bool = False,
        http: bool = False,
        kafka: bool = False,
    ):
        """`extra_args` follow the standard options (e.g. "--conf", path); `host` None
        leaves --host out (the hub's default); `log_on_stdout` for a launcher that logs
        there (twistd); `tls`: the configuration enables the TLS listener, whose port
        (`tls_port`, 0 in the configuration: a free one) is read from the log too; `http`:
        serve the status page and /metrics on a free port (`http_port`, read from the log;
        without it the hub runs with --http-port 0, so hubs never contend for a port);
        `http="auto"`: no --http-port at all, the hub's default (its port + 1); `kafka`:
        serve Kafka clients on a free port (`kafka_port`, kept for restarts)."""
        self.data_dir = str(data_dir)
        self.port = port
        self.extra_args = list(extra_args)
        self.launcher = list(launcher) if launcher else [sys.executable, "-m", "hedwig", "hub"]
        self.host = host or "127.0.0.1"
        self._host_option = host
        self.cwd = cwd
        self.env = env
        self.tls = tls
        self.tls_port = None
        self.http = http
        self.http_port = free_port() if http is True else 0
        self.kafka_port = free_port() if kafka else 0
        self.log_on_stdout = log_on_stdout
        self.process = None
        self.log = collections.deque(maxlen=LOG_LINES)
        self._logged = threading.Condition()  # notified as each line is read
        self._log_ended = False
        self._reader = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def http_url(self) -> str:
        """The hub's HTTP listener (with `http`): its status page is this URL."""
        return f"http://{self.host}:{self.http_port}/"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def command(self) -> list:
        command = list(self.launcher)
        if self._host_option is not None:
            command += ["--host", self._host_option]
        http = [] if self.http == "auto" else ["--http-port", str(self.http_port)]
        kafka = ["--kafka-port", str(self.kafka_port)] if self.kafka_port else []
        return [
            *command,
            "--port",
            str(self.port),
            "--data-dir",
            self.data_dir,
            *http,
            *kafka,
            *self.extra_args,
        ]

    def start(self) -> "HubProcess":
        """Start the hub and wait until it serves; RuntimeError with its log if it does not."""
        self.log = log = collections.deque(maxlen=LOG_LINES)
        self._log_ended = False
        serving = threading.Event()
        found = []  # (host, port), once the hub said it serves
        tls_found = []  # its TLS port, once it said it listens for TLS
        http_found = []  # its HTTP port, once it said it listens for HTTP
        kafka_found = []  # its Kafka port, once it said it listens for Kafka clients
        self.process = subprocess.Popen(
            self.command(),
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if self.log_on_stdout else subprocess.DEVNULL,
            stderr=subprocess.STDOUT if self.log_on_stdout else subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            # SIGINT as a terminal gives it (Ctrl-C stops the hub), even when this process
            # runs in the background of a shell, which starts it ignored, and would pass
            # that on: a hub started with SIGINT ignored rightly keeps ignoring it.
            preexec_fn=_default_sigint,
        )
        stream = self.process.stdout if self.log_on_stdout else self.process.stderr

        logged = self._logged

        def read_log():
            for line in stream:
                with logged:
                    log.append(line)
                    logged.notify_all()
                match = SERVING.search(line)
                if match and not found:
                    found.append((match.group(1), int(match.group(2))))
                tls_match = TLS_LISTENING.search(line)
                if tls_match and not tls_found:
                    tls_found.append(int(tls_match.group(2)))
                http_match = HTTP_LISTENING.search(line)
                if http_match and not http_found:
                    http_found.append(int(http_match.group(2)))
                if KAFKA_LISTENING.search(line):
                    kafka_found.append(line)
                if (
                    found
                    and (tls_found or not self.tls)
                    and (http_found or not self.http)
                    and (kafka_found or not self.kafka_port)
                ):
                    serving.set()
            serving.set()  # the process ended: wake the starter to see that
            with logged:
                self._log_ended = True
                logged.notify_all()

        self._reader = threading.Thread(target=read_log, daemon=True, name="hub-log")
        self._reader.start()
        if not serving.wait(START_TIMEOUT_S) or not found or self.process.poll() is not None:
            self.stop()
            raise RuntimeError(f"the hub did not start: {self.command()}\n" + self.output())
        self.host, self.port = found[0]
        if tls_found:
            self.tls_port = tls_found[0]
        if http_found:
            self.http_port = http_found[0]
        return self

    def wait_for_log(self, text: str, timeout: float = 30.0) -> bool:
        """Whether a line holding `text` is logged within `timeout` seconds. The log comes
        through a pipe a thread reads: a line the hub wrote before something a test saw
        (a socket it closed) may still be on its way."""
        with self._logged:
            self._logged.wait_for(lambda: self._log_ended or any(text in line for line in self.log), timeout)
            return any(text in line for line in self.log)

    def output(self) -> str:
        """The log lines read so far (all of them once the hub has stopped)."""
        return "".join(self.log)

    def kill(self) -> None:
        """SIGKILL: the hub stops at once, as in a crash."""
        if self.running:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self._join_reader()

    def pause(self) -> None:
        """SIGSTOP: the hub stops running, its sockets and sessions left as they are (a
        long pause, as a stalled process or a GC would make)."""
        if self.running:
            self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT: a paused hub runs again (nothing for one that runs)."""
        if self.running:
            self.process.send_signal(signal.SIGCONT)

    def stop(self, signum: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """`signum` (SIGTERM: a graceful shutdown) and wait, SIGKILL after `timeout`; the
        exit status (None if it never started)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signum)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._join_reader()
        return self.process.returncode

    def restart(self) -> "HubProcess":
        """Start again on the same port and data directory."""
        return self.start()

    def _join_reader(self) -> None:
        if self._reader is not None:
            self._reader.join(10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listened on a moment ago (for listeners whose
    port 0 means "off", like [http] port)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def refusing_port():
    """A port on 127.0.0.1 that refuses connections while the block runs: bound and never
    listening, so nothing else can take it meanwhile (a hub that is not there)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def hub_environment() -> dict:
    """The environment for CLI subprocesses: this one's, without the user's HEDWIG_HUB or
    HEDWIG_TLS_* that would point them elsewhere (or switch them to TLS)."""
    return {key: value for key, value in os.environ.items() if not key.startswith("HEDWIG_")}


def _default_sigint() -> None:
    """In the child, before exec: SIGINT back to its default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
