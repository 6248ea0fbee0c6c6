"""The drain's progress against a real hub and Spark: a line per micro-batch (rows,
rows/s, lag), a summary at the end; on a terminal (a pseudo-terminal), a progress bar
redrawn in place instead."""

import json
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


def test_the_drain_prints_json_only_when_asked_and_no_spark_warnings(hub, tmp_path):
    """For people: the drain's own lines on standard error, not Spark's warnings (its
    log shows errors unless --spark-log-level says more), and no JSON on standard output
    unless --json."""
    with Client(hub.address) as client:
        publish(client, "p-quiet", 1, 20)
    run = settings(hub, tmp_path, ["p-quiet"])
    command = [
        sys.executable, "-m", "hedwig.commands.main", "--hub", hub.address, "drain", "--topics", "p-quiet",
        "--out", run.out, "--checkpoint", run.checkpoint, "--once", "--master", "local[1]",
    ]  # fmt: skip
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == ""
    assert not [line for line in done.stderr.splitlines() if " WARN " in line or "log level" in line], (
        done.stderr
    )
    assert "hedwig drain: done: drained 20 messages in 1 batch," in done.stderr
    again = subprocess.run([*command[:5], "--json", *command[5:]], capture_output=True, text=True, env=env,
                           timeout=300)  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout)["committed"] == {"p-quiet": 20}
