"""`hedwig top` against a real hub process's HTTP listener: plain lines on a pipe, a
redrawn screen on a terminal (a pseudo-terminal), one line when the hub is away."""

import os
import pty
import subprocess
import sys

from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess, hub_environment, refusing_port

TOP = [sys.executable, "-m", "hedwig", "top"]


def test_top_on_a_pipe_prints_topics_and_subscriptions_in_plain_blocks(tmp_path):
    with HubProcess(tmp_path / "data", http=True) as hub, Client(hub.address) as client:
        client.publish_many("busy", [b"m"] * 30)
        with client.subscribe("busy", "slow-reader", start="earliest", window=1) as subscription:
            assert subscription.receive(timeout=10) is not None
            result = subprocess.run(
                [*TOP, "--url", hub.http_url, "--count", "2", "--interval", "0.1"],
                capture_output=True,
                text=True,
                timeout=60,
                env=hub_environment(),
            )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\x1b" not in out  # no terminal control on a pipe
    assert out.count(f"hedwig {hub.address}") == 2  # two refreshes, one block each
    topic_line = next(line for line in out.splitlines() if line.startswith("busy "))
    assert topic_line.split()[2:4] == ["1..30", "30"]
    sub_line = next(line for line in out.splitlines() if "slow-reader" in line)
    assert sub_line.split()[2] == "30"  # nothing consumed yet: all 30 behind


def test_top_on_a_terminal_redraws_in_place(tmp_path):
    with HubProcess(tmp_path / "data", http=True) as hub:
        with Client(hub.address) as client:
            client.publish_many("screen", [b"m"] * 3)
        leader, follower = pty.openpty()
        process = subprocess.Popen(
            [*TOP, "--url", hub.http_url, "--count", "2", "--interval", "0.1"],
            stdout=follower,
            stderr=subprocess.PIPE,
            env=hub_environment(),
        )
        os.close(follower)
        seen = read_until(leader, b"\x1b[?1049l")
        assert process.wait(30) == 0, process.stderr.read()
        os.close(leader)
    screen = seen.decode()
    assert screen.startswith("\x1b[?1049h")  # the alternate screen ...
    assert screen.count("\x1b[H\x1b[2J") == 2  # ... redrawn in place for each refresh ...
    assert screen.rstrip().endswith("\x1b[?1049l")  # ... and left on exit
    assert "screen" in screen and "1..3" in screen


def test_top_without_a_hub_says_so_in_one_line():
    with refusing_port() as port:
        result = subprocess.run(
            [*TOP, "--url", f"http://127.0.0.1:{port}/", "--count", "1"],
            capture_output=True,
            text=True,
            timeout=60,
            env=hub_environment(),
        )
    assert result.returncode == 1
    assert result.stderr.startswith("hedwig top: could not read http://127.0.0.1:")
    assert len(result.stderr.strip().splitlines()) == 1


def read_until(leader: int, wanted: bytes, seen: bytes = b"") -> bytes:
    """What the terminal shows, read until `wanted` is in it (or the terminal closed)."""
    while wanted not in seen:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: top ended
            break
        if not chunk:
            break
        seen += chunk
    return seen


def test_top_stopped_by_sigterm_gives_the_terminal_its_screen_and_cursor_back(tmp_path):
    import signal

    with HubProcess(tmp_path / "data", http=True) as hub:
        leader, follower = pty.openpty()
        process = subprocess.Popen(
            [*TOP, "--url", hub.http_url, "--interval", "0.2"],
            stdout=follower,
            stderr=subprocess.PIPE,
            env=hub_environment(),
        )
        os.close(follower)
        seen = read_until(leader, b"\x1b[H\x1b[2J")  # (on the alternate screen, drawn once)
        process.send_signal(signal.SIGTERM)
        seen = read_until(leader, b"\x1b[?25h\x1b[?1049l", seen)
        process.wait(30)
        os.close(leader)
    assert seen.startswith(b"\x1b[?1049h\x1b[?25l")
    assert seen.rstrip().endswith(b"\x1b[?25h\x1b[?1049l")  # the cursor shown, the screen left
    assert process.returncode == 130
