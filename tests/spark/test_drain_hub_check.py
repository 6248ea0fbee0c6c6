"""`hedwig drain` checks its hubs and topics before Spark starts: a wrong --hub or an
unknown topic is one line and exit status 1, with no JVM started (Spark's start-up
writes its own lines to standard error, and the checkpoint directory would be made)."""

import subprocess
import sys

from hedwig.testing.hubprocess import hub_environment, refusing_port


def drain(tmp_path, hub_address: str, topics: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hedwig", "--hub", hub_address, "drain", "--topics", topics,
         "--out", str(tmp_path / "lake"), "--checkpoint", str(tmp_path / "checkpoint"), "--once"],
        capture_output=True, text=True, timeout=120, env=hub_environment(), cwd=tmp_path,
    )  # fmt: skip


def the_one_line(result: subprocess.CompletedProcess, tmp_path) -> str:
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # Spark would have said more
    assert result.stdout == ""
    assert not (tmp_path / "checkpoint").exists() and not (tmp_path / "lake").exists()
    return lines[0]


def test_a_wrong_hub_fails_in_one_line_before_spark_starts(tmp_path):
    with refusing_port() as port:
        line = the_one_line(drain(tmp_path, f"127.0.0.1:{port}", "orders"), tmp_path)
    assert line.startswith("hedwig drain: failed: could not connect to the hedwig hub at "), line
    assert f"127.0.0.1:{port}" in line, line


def test_an_unknown_topic_fails_in_one_line_before_spark_starts(tmp_path, hub):
    from hedwig.client import Client

    with Client(hub.address) as client:
        client.publish("drain-known", b"x")
    line = the_one_line(drain(tmp_path, hub.address, "drain-known,drain-typo"), tmp_path)
    assert line.startswith("hedwig drain: failed: topic 'drain-typo' does not exist"), line
