"""The `hedwig` command as a user types it, each invocation its own process, against a
real hub process."""

import json
import re
import signal
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hedwig.testing.hubprocess import HubProcess, hub_environment
from tests.hubprocess import make_run_command

ROOT = Path(__file__).resolve().parents[2]


def hedwig(*args, stdin=None, hub=None, env=None, timeout=60):
    """Run `python -m hedwig [--hub ADDRESS] ARGS...`; the CompletedProcess."""
    command = [sys.executable, "-m", "hedwig"]
    if hub is not None:
        command += ["--hub", hub.address]
    return subprocess.run(
        [*command, *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        env=env or hub_environment(),
        cwd=ROOT,
    )


def lines(result):
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode().splitlines()


def test_publish_arguments_then_subscribe_prints_and_acknowledges(hub):
    assert lines(hedwig("publish", "greetings", "hello", "wörld", hub=hub)) == [
        "published 2 messages to greetings: seq-ids 1..2"
    ]
    assert lines(hedwig("subscribe", "greetings", "me", "--from", "earliest", "--count", "2", hub=hub)) == [
        "hello",
        "wörld",
    ]
    assert lines(hedwig("publish", "greetings", "again", hub=hub)) == [
        "published 1 message to greetings: seq-id 3"
    ]
    # The subscription acknowledged what it printed: it resumes after it.
    assert lines(hedwig("subscribe", "greetings", "me", "--count", "1", hub=hub)) == ["again"]


def test_publish_reads_standard_input_lines(hub):
    text = "".join(f"line {i}\n" for i in range(2500)).encode()
    assert lines(hedwig("publish", "stdin", stdin=text, hub=hub)) == [
        "published 2500 messages to stdin: seq-ids 1..2500"
    ]
    printed = lines(hedwig("subscribe", "stdin", "s", "--from", "2499", "--count", "2", hub=hub))
    assert printed == ["line 2498", "line 2499"]


def test_subscribe_from_each_start_and_show_seq(hub):
    hedwig("publish", "starts", "a", "b", "c", hub=hub)
    assert lines(hedwig("subscribe", "starts", "s1", "--from", "2", "--count", "2", hub=hub)) == ["b", "c"]
    shown = lines(
        hedwig("subscribe", "starts", "s2", "--from", "earliest", "--count", "1", "--show-seq", hub=hub)
    )
    seq, stamp, payload = shown[0].split("\t")
    assert (seq, payload) == ("1", "a")
    assert abs((datetime.fromisoformat(stamp) - datetime.now(UTC)).total_seconds()) < 600
    later = datetime.now(UTC).isoformat()
    # Nothing is published after `later` yet: a time start waits, and --idle ends it.
    assert lines(hedwig("subscribe", "starts", "s3", "--from", later, "--idle", "0.5", hub=hub)) == []
    assert lines(hedwig("subscribe", "starts", "s4", "--from", "latest", "--idle", "0.5", hub=hub)) == []


def test_topics_describe_stats_unsubscribe(hub):
    hedwig("publish", "admin-cli", "x", "y", hub=hub)
    hedwig("subscribe", "admin-cli", "watcher", "--from", "earliest", "--count", "1", hub=hub)
    assert f"admin-cli  {hub.address}" in lines(hedwig("topics", hub=hub))  # each with its owner
    listed = json.loads(hedwig("topics", "--json", hub=hub).stdout)
    assert {"topic": "admin-cli", "owner": hub.address} in listed
    (row,) = json.loads(hedwig("hubs", "--json", hub=hub).stdout)  # an embedded hub is alone
    assert row["hub"] == hub.address and row["topics"] >= 1
    described = "\n".join(lines(hedwig("describe", "admin-cli", hub=hub)))
    assert re.search(r"seq-ids:\s+1\.\.2", described), described
    assert re.search(r"watcher: consumed 1, .*backlog 1", described), described
    info = json.loads(hedwig("describe", "admin-cli", "--json", hub=hub).stdout)
    assert info["last_seq"] == 2
    stats = json.loads(hedwig("stats", "--json", hub=hub).stdout)
    assert stats["published"]["messages"] >= 2
    assert lines(hedwig("unsubscribe", "admin-cli", "watcher", hub=hub)) == [
        "unsubscribed watcher from admin-cli"
    ]
    info = json.loads(hedwig("describe", "admin-cli", "--json", hub=hub).stdout)
    assert [s["subscriber_id"] for s in info["subscribers"]] == []


def test_publish_with_properties(hub):
    from hedwig.client import Client

    assert lines(hedwig("publish", "props", "x", "y", "--property", "k=v", "--property", "n=1", hub=hub)) == [
        "published 2 messages to props: seq-ids 1..2"
    ]
    with Client(hub.address) as client:
        messages = client.read("props")
    # (typed: text is a str, a number an int; `k:=v` keeps bytes)
    assert [m.properties for m in messages] == [{"k": "v", "n": 1}] * 2


def test_hub_option_after_the_subcommand_and_from_the_environment(hub):
    assert lines(hedwig("publish", "where", "x", "--hub", hub.address)) == [
        "published 1 message to where: seq-id 1"
    ]
    env = hub_environment()
    env["HEDWIG_HUB"] = hub.address
    assert lines(hedwig("publish", "where", "y", env=env)) == ["published 1 message to where: seq-id 2"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["publish", "bad topic", "x"], r"INVALID_TOPIC"),
        (["subscribe", "t", "__hub", "--create"], r"INVALID_SUBSCRIBER_ID"),
        (["subscribe", "t", "s", "--from", "someday"], r"--from 'someday'"),
        (["describe", "never-seen"], r"NO_SUCH_TOPIC"),
        (["unsubscribe", "t", "nobody"], r"CLIENT_NOT_SUBSCRIBED"),
        (["publish", "t", "x", "--property", "novalue"], r"NAME=VALUE"),
    ],
)
def test_errors_are_one_line_and_a_failing_status(hub, args, message):
    result = hedwig(*args, hub=hub)
    assert result.returncode == 1
    err = result.stderr.decode()
    assert len(err.strip().splitlines()) == 1, err
    assert re.search(message, err), err
    assert err.startswith(f"hedwig {args[0]}: ")


def test_no_hub_is_one_clear_line():
    # A port bound but not listening refuses connections for as long as it is held.
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{bound.getsockname()[1]}"
        result = hedwig("--hub", address, "topics")
    assert result.returncode == 1
    err = result.stderr.decode().strip()
    assert len(err.splitlines()) == 1 and "COULD_NOT_CONNECT" in err and address in err, err


def test_usage_errors_exit_2():
    result = hedwig("subscribe", "only-a-topic")
    assert result.returncode == 2
    assert b"SUBSCRIBER" in result.stderr


def test_the_readme_make_run_command_serves_the_cli(tmp_path):
    """`make run` as the README says: its command line (from `make -n`), on a free port."""
    command = make_run_command()
    assert command[1:3] == ["hub", "--data-dir"], command
    # Its options, then a free port and a scratch directory (later options win).
    process = HubProcess(
        tmp_path / "data", launcher=command, host=None, cwd=ROOT, env=hub_environment(), kafka=True
    )
    with process:
        env = hub_environment()
        env["HEDWIG_HUB"] = process.address
        assert lines(hedwig("publish", "readme", "from", "the", "readme", env=env))[0].startswith(
            "published 3"
        )
        assert lines(hedwig("subscribe", "readme", "me", "--from", "earliest", "--count", "3", env=env)) == [
            "from",
            "the",
            "readme",
        ]
        assert lines(hedwig("topics", env=env)) == ["TOPIC   OWNER", f"readme  {process.address}"]
        assert process.stop() == 0


def test_sigterm_ends_subscribe_with_its_acknowledgements_sent(hub):
    hedwig("publish", "terminate", "a", "b", "c", hub=hub)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hedwig",
            "--hub",
            hub.address,
            "subscribe",
            "terminate",
            "s",
            "--from",
            "earliest",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=hub_environment(),
        cwd=ROOT,
    )
    printed = [process.stdout.readline() for _ in range(3)]
    assert printed == [b"a\n", b"b\n", b"c\n"]
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == 130
    assert process.stderr.read() == b""
    # It printed three messages and acknowledged at least the first two (the third's
    # acknowledgement may race the signal): a new run starts after them.
    rest = lines(hedwig("subscribe", "terminate", "s", "--idle", "0.5", hub=hub))
    assert rest in ([], ["c"])


def test_subscribe_survives_a_closed_pipe(hub):
    """`hedwig subscribe ... | head -1`: the reader goes away, the command ends quietly."""
    hedwig("publish", "piped", *[f"m{i}" for i in range(20)], hub=hub)
    command = f"{sys.executable} -m hedwig --hub {hub.address} subscribe piped s --from earliest --count 20"
    shell = f"{command} | head -1"
    result = subprocess.run(
        ["sh", "-c", shell], capture_output=True, timeout=60, env=hub_environment(), cwd=ROOT
    )
    assert result.stdout == b"m0\n"
    assert b"Traceback" not in result.stderr


def test_python_dash_m_and_the_console_script_are_the_same_command():
    script = Path(sys.executable).parent / "hedwig"
    if not script.exists():
        pytest.skip("the console script is not installed")
    a = subprocess.run([str(script), "--help"], capture_output=True, env=hub_environment())
    b = hedwig("--help")
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout
