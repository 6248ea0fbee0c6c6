"""The drain's progress against a real hub and Spark: a line per micro-batch (rows,
rows/s, lag), a summary at the end; on a terminal (a pseudo-terminal), a progress bar
redrawn in place instead."""

import os
import pty
import re
import subprocess
import sys

import pytest

from hedwig.client.blocking import Client
from hedwig.spark.drain import drain
from tests.spark.test_drain import publish, settings

pytestmark = pytest.mark.spark

BATCH_LINE = re.compile(r"^batch (\d+): ([\d,]+) rows in [\d.]+ s \(([\d,]+) rows/s\); lag (.*)$")


def test_each_micro_batch_is_one_line_and_the_run_ends_with_a_summary(spark, hub, tmp_path):
    said = []
    with Client(hub.address) as client:
        publish(client, "p-events", 1, 550)
    run = settings(hub, tmp_path, ["p-events"], max_messages_per_trigger=200)
    report = drain(spark, run, say=said.append)
    assert report.drained == 550
    batches = [BATCH_LINE.match(line) for line in said if line.startswith("batch ")]
    assert all(batches), said
    assert [int(m.group(2).replace(",", "")) for m in batches] == [200, 200, 150]
    assert [int(m.group(1)) for m in batches] == [0, 1, 2]
    assert all(m.group(4).startswith("p-events=") for m in batches)
    assert said[-1].startswith("done: drained 550 messages in 3 batches, ")
    assert said[-1].endswith("lag p-events=0")


def test_on_a_terminal_the_drain_draws_a_progress_bar(hub, tmp_path):
    with Client(hub.address) as client:
        publish(client, "p-bar", 1, 300)
    run = settings(hub, tmp_path, ["p-bar"])
    command = [
        sys.executable, "-m", "hedwig.commands.main", "drain",
        "--hub", hub.address, "--topics", "p-bar", "--out", run.out, "--checkpoint", run.checkpoint,
        "--once", "--max-messages-per-trigger", "100", "--progress", "0.2", "--master", "local[1]",
    ]  # fmt: skip
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        command,
        stderr=follower,
        stdout=subprocess.DEVNULL,
        env=dict(os.environ, PYSPARK_PYTHON=sys.executable),
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the drain ended
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert child.wait(120) == 0
    text = seen.decode("utf-8", "replace")
    bars = re.findall(r"\r\x1b\[Khedwig drain \[[#.]{30}\] +[\d.]+% drained ([\d,]+) of ([\d,]+), lag", text)
    assert bars, text[-2000:]
    assert bars[-1] == ("300", "300")
    assert not re.search(r"^hedwig drain: batch \d+:", text, re.MULTILINE)  # the bar, not lines
    assert "hedwig drain: done: drained 300 messages in 3 batches" in text
