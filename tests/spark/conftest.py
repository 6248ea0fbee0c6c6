"""Real parts for the Spark tests: hub processes on 127.0.0.1 and one local[2] session.

A Spark session costs 10-15 s to start here, so every Spark test of this directory
shares one (session-scoped, started on first use). Hubs are real `hedwig hub`
processes; each reports the port it picked (--port 0) in its log.
"""

import os
import re
import selectors
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

_SERVING = re.compile(r"hedwig hub (\S+):(\d+) \(region \S+\) serving")
START_TIMEOUT_S = 30.0


class HubProcess:
    """A hub in a child process; `address` is its "127.0.0.1:port"."""

    def __init__(self, data_dir: Path, conf: str | None = None):
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}.log"
        args = [sys.executable, "-m", "hedwig.hub.main", "--port", "0", "--data-dir", str(self.data_dir)]
        if conf is not None:
            conf_path = self.data_dir.parent / f"{self.data_dir.name}.conf"
            conf_path.write_text(conf)
            args += ["--conf", str(conf_path)]
        self.process = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
        self.address = self._wait_until_serving()

    def _wait_until_serving(self) -> str:
        """Read the hub's log until it says where it listens (or it dies, or time runs out)."""
        seen = []
        deadline = time.monotonic() + START_TIMEOUT_S
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stderr, selectors.EVENT_READ)
            buffered = b""
            while time.monotonic() < deadline:
                if not selector.select(deadline - time.monotonic()):
                    break
                chunk = os.read(self.process.stderr.fileno(), 65536)
                if not chunk:
                    break
                buffered += chunk
                *lines, buffered = buffered.split(b"\n")
                for line in lines:
                    text = line.decode("utf-8", "replace")
                    seen.append(text)
                    found = _SERVING.search(text)
                    if found:
                        self._drain_log_in_background()
                        return f"{found.group(1)}:{found.group(2)}"
        self.stop()
        raise RuntimeError("hub did not start:\n" + "\n".join(seen[-30:]))

    def _drain_log_in_background(self) -> None:
        """Keep the hub's stderr flowing into a file so a full pipe never stalls it."""

        def copy(source, path):
            with open(path, "ab") as log:
                for chunk in iter(lambda: os.read(source.fileno(), 65536), b""):
                    log.write(chunk)
                    log.flush()
            source.close()

        self._log_copier = threading.Thread(
            target=copy, args=(self.process.stderr, self.log_path), daemon=True
        )
        self._log_copier.start()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        copier = getattr(self, "_log_copier", None)
        if copier is not None:
            copier.join(timeout=10)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """A hub for the whole module; tests use topics of their own."""
    process = HubProcess(tmp_path_factory.mktemp("hub") / "data")
    yield process
    process.stop()


# Small ledgers and a quick collector, so garbage collection is seen within a test.
GC_CONF = """
[log]
max_ledger_entries = 4
gc_interval_s = 0.2
"""


@pytest.fixture(scope="module")
def gc_hub(tmp_path_factory):
    """A hub that rolls ledgers every 4 entries and collects 5 times a second."""
    process = HubProcess(tmp_path_factory.mktemp("gc-hub") / "data", conf=GC_CONF)
    yield process
    process.stop()


def wait_for(condition, timeout=15.0, what="condition"):
    """Poll a condition of another process (a hub's collector) until it holds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture(scope="session")
def spark():
    """One local[2] session for every Spark test, with the hedwig sources registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from hedwig.spark import register

    session = (
        SparkSession.builder.master("local[2]")
        .appName("hedwig-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()
