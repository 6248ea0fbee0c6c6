"""Issue 15's command-line findings, each as a new user meets it: `hedwig` run as its own
process against a real hub process. Every test here failed before the fix it covers."""

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hedwig.client import Client, NoSuchTopic
from hedwig.testing.hubprocess import hub_environment
from hedwig.testing.polling import wait_until
from tests.cli.test_cli import ROOT, hedwig, lines


def popen(*args, hub, **kwargs):
    return subprocess.Popen(
        [sys.executable, "-m", "hedwig", "--hub", hub.address, *args],
        env=hub_environment(),
        cwd=ROOT,
        **kwargs,
    )


def subscriptions(hub, topic):
    return json.loads(hedwig("subscriptions", topic, "--json", hub=hub).stdout)


def topic_names(result) -> list:
    """The topics `hedwig topics` lists (each line: the topic, then its owner)."""
    return [line.split()[0] for line in lines(result)[1:]]  # (after the heading)


# -- 1: reading without a subscription; topics and subscriptions administered ------------------


def test_read_prints_a_topic_and_leaves_nothing_behind(hub):
    hedwig("publish", "readable", "a", "b", "c", "--property", "k=v", hub=hub)
    assert lines(hedwig("read", "readable", hub=hub)) == ["a", "b", "c"]
    assert lines(hedwig("read", "readable", "--from", "2", "--count", "1", "--properties", hub=hub)) == [
        "k=v\tb"
    ]
    row = json.loads(lines(hedwig("read", "readable", "--from", "3", "--json", hub=hub))[0])
    assert (row["seq"], row["payload"], row["properties"], row["topic"]) == (3, "c", {"k": "v"}, "readable")
    assert row["time"].endswith("Z")
    assert subscriptions(hub, "readable") == []


def test_json_shows_a_binary_payload_as_base64(hub):
    with Client(hub.address) as client:
        client.publish("binary", b"\xff\x00")
    (row,) = [json.loads(line) for line in lines(hedwig("read", "binary", "--json", hub=hub))]
    assert row["payload_base64"] == "/wA=" and "payload" not in row


def test_read_follow_prints_what_is_published_later(hub):
    hedwig("publish", "followed", "old", hub=hub)
    reader = popen("read", "followed", "--from", "2", "--follow", hub=hub, stdout=subprocess.PIPE)
    try:
        with Client(hub.address) as client:
            client.publish("followed", "new")
            assert reader.stdout.readline() == b"new\n"
    finally:
        reader.terminate()
        assert reader.wait(30) == 130


def test_a_typo_in_subscribe_creates_no_topic(hub):
    result = hedwig("subscribe", "typo-topic", "s", "--count", "1", hub=hub, timeout=20)
    assert result.returncode == 1
    err = result.stderr.decode()
    assert err.strip() == (
        "hedwig subscribe: topic typo-topic does not exist"
        " (publishing creates it; --create subscribes anyway)"
    )
    assert "typo-topic" not in topic_names(hedwig("topics", hub=hub))
    assert lines(hedwig("subscribe", "typo-topic", "s", "--create", "--idle", "0.2", hub=hub)) == []
    assert "typo-topic" in topic_names(hedwig("topics", hub=hub))


def test_create_subscriptions_reset_and_delete(hub):
    assert lines(hedwig("create", "managed", hub=hub)) == ["created topic managed"]
    assert lines(hedwig("create", "managed", hub=hub)) == ["topic managed exists already"]
    hedwig("publish", "managed", "a", "b", "c", hub=hub)
    assert lines(hedwig("subscribe", "managed", "s", "--from", "earliest", "--count", "1", hub=hub)) == ["a"]
    (row,) = subscriptions(hub, "managed")
    assert (row["subscriber_id"], row["consumed_seq"], row["lag"], row["state"]) == ("s", 1, 2, "detached")
    table = lines(hedwig("subscriptions", hub=hub))
    headings = ["TOPIC", "SUBSCRIBER", "CONSUMED", "LAST", "LAG", "KIND", "STATE"]
    assert table[0].split() == [*headings, "MEMBERS", "PENDING", "REDELIVERIES"]
    assert ["managed", "s", "1", "3", "2", "exclusive", "detached", "0", "0", "0"] in [
        line.split() for line in table
    ]

    assert lines(hedwig("reset", "managed", "s", "--to", "earliest", hub=hub)) == [
        "s on managed: consumed seq-id 1 -> 0; it next gets seq-id 1"
    ]
    assert lines(hedwig("subscribe", "managed", "s", "--count", "1", hub=hub)) == ["a"]
    hedwig("reset", "managed", "s", "--to", "3", hub=hub)
    assert lines(hedwig("subscribe", "managed", "s", "--count", "1", hub=hub)) == ["c"]

    refused = hedwig("delete", "managed", hub=hub)
    assert refused.returncode == 1
    assert refused.stderr.decode().strip() == (
        "hedwig delete: TOPIC_BUSY: topic managed has 1 subscription(s) (s):"
        " unsubscribe them, or add --force to delete them too"
    )
    ledgers = {
        ledger["ledger_id"]
        for ledger in json.loads(hedwig("describe", "managed", "--json", hub=hub).stdout)["ledgers"]
    }
    directories = {f"L{ledger:012d}" for ledger in ledgers}
    assert directories <= set(os.listdir(Path(hub.data_dir) / "ledgers"))
    assert lines(hedwig("delete", "managed", "--force", hub=hub)) == [
        "deleted topic managed (1 ledger freed; subscriptions deleted: s)"
    ]
    assert not directories & set(os.listdir(Path(hub.data_dir) / "ledgers"))
    assert "managed" not in topic_names(hedwig("topics", hub=hub))
    # Publishing creates it afresh: from seq-id 1, with no subscription.
    assert lines(hedwig("publish", "managed", "again", hub=hub)) == [
        "published 1 message to managed: seq-id 1"
    ]
    assert subscriptions(hub, "managed") == []


def test_reset_refuses_an_attached_subscription(hub):
    hedwig("publish", "attached", "a", hub=hub)
    holder = popen("subscribe", "attached", "s", "--from", "earliest", hub=hub, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"a\n"
        result = hedwig("reset", "attached", "s", "--to", "earliest", hub=hub)
        assert result.returncode == 1
        assert "TOPIC_BUSY" in result.stderr.decode() and "attached" in result.stderr.decode()
    finally:
        holder.terminate()
        holder.wait(30)


# -- 2: subscribe --from past the end ----------------------------------------------------------


def test_subscribe_past_the_end_is_one_line_naming_the_last_seq_id(hub):
    hedwig("publish", "short", "a", "b", "c", hub=hub)
    result = hedwig("subscribe", "short", "s", "--from", "999", hub=hub, timeout=20)
    assert result.returncode == 1
    err = result.stderr.decode().strip()
    assert len(err.splitlines()) == 1 and err.startswith("hedwig subscribe: --from 999: SEQ_OUT_OF_RANGE"), (
        err
    )
    assert "last seq-id is 3" in err
    assert subscriptions(hub, "short") == []


# -- 3: standard input streams -------------------------------------------------------------------


def test_publishing_standard_input_sends_each_line_as_it_arrives(hub):
    publisher = popen("publish", "streamed", hub=hub, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    with contextlib.ExitStack() as cleanup, Client(hub.address) as client:
        cleanup.callback(lambda: publisher.poll() is None and publisher.kill())

        def published():
            try:
                return [bytes(m.payload) for m in client.read("streamed")]
            except NoSuchTopic:  # until the first line is stored
                return []

        publisher.stdin.write(b"first line\n")
        publisher.stdin.flush()
        wait_until(lambda: published() == [b"first line"], "the first line published, stdin open", timeout=20)
        publisher.stdin.write(b"second\nthird")  # the last line needs no newline
        publisher.stdin.close()
        assert publisher.wait(30) == 0
        assert published() == [b"first line", b"second", b"third"]
    assert publisher.stdout.read() == b"published 3 messages to streamed: seq-ids 1..3\n"


# -- 4: acknowledge only what was printed --------------------------------------------------------


def test_subscribe_into_head_acknowledges_only_what_head_printed(hub):
    hedwig("publish", "headed", *[f"m{i}" for i in range(1, 21)], hub=hub)
    command = f"{sys.executable} -m hedwig --hub {hub.address} subscribe headed s --from earliest | head -3"
    pipeline = subprocess.Popen(
        ["sh", "-c", command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=hub_environment(),
        cwd=ROOT,
        start_new_session=True,  # (its own process group: a failing test leaves nothing behind)
    )
    try:
        out, err = pipeline.communicate(timeout=30)  # the subscriber ends once head has gone
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pipeline.pid, signal.SIGKILL)
    assert out == b"m1\nm2\nm3\n"
    assert err == b""
    (row,) = subscriptions(hub, "headed")
    assert row["consumed_seq"] == 3
    assert lines(hedwig("subscribe", "headed", "s", "--count", "1", hub=hub)) == ["m4"]


# -- 5: options anywhere, shown in every subcommand's help ----------------------------------------


def test_options_go_before_or_after_the_subcommand_and_its_arguments(hub):
    assert lines(hedwig("publish", "anywhere", "a", "--property", "k=v", "b", "--hub", hub.address)) == [
        "published 2 messages to anywhere: seq-ids 1..2"
    ]
    env = hub_environment()
    for args in (
        ["--hub", hub.address, "--json", "topics"],
        ["topics", "--json", "--hub", hub.address],
        ["--json", "topics", "--hub", hub.address],
    ):
        assert "anywhere" in [row["topic"] for row in json.loads(hedwig(*args, env=env).stdout)], args
    assert lines(hedwig("read", "anywhere", "--hub", hub.address, "--count", "1")) == ["a"]
    assert lines(hedwig("--timeout", "5", "read", "anywhere", "--from", "2", "--hub", hub.address)) == ["b"]


def test_every_client_subcommand_shows_the_connection_options():
    names = ["publish", "subscribe", "read", "unsubscribe", "topics", "describe", "stats", "subscriptions",
             "create", "compact", "delete", "reset", "drain"]  # fmt: skip
    for name in names:
        shown = hedwig(name, "--help").stdout.decode()
        for option in ("--hub", "--timeout", "--json", "--tls-ca"):
            assert option in shown, (name, option)


def test_version_and_completion():
    from hedwig import __version__

    assert lines(hedwig("--version")) == [f"hedwig {__version__}"]
    bash = hedwig("completion", "bash").stdout.decode()
    assert "complete -o default -F _hedwig_complete hedwig" in bash
    assert "subscriptions" in bash and "--linger-ms" in bash
    checked = subprocess.run(["bash", "-n"], input=bash.encode(), capture_output=True)
    assert checked.returncode == 0, checked.stderr


# -- 9: text, not Python bytes --------------------------------------------------------------------


def test_names_print_as_text_and_the_client_takes_str(hub):
    err = hedwig("publish", "bad topic", "x", hub=hub).stderr.decode()
    assert "'bad topic'" in err and "b'" not in err, err
    with Client(hub.address) as client:
        assert client.publish("texts", "héllo") == 1
        assert client.publish_many("texts", ["a", b"b"]) == [2, 3]
        assert [bytes(m.payload) for m in client.read("texts")] == ["héllo".encode(), b"a", b"b"]
        with pytest.raises(TypeError, match="bytes or str"):
            client.publish("texts", 5)


# -- 10: describe, stats, --timeout ------------------------------------------------------------------


def test_describe_an_empty_topic_and_a_cli_subscription(hub):
    hedwig("create", "empty", hub=hub)
    hedwig("subscribe", "empty", "s", "--idle", "0.2", hub=hub)
    described = "\n".join(lines(hedwig("describe", "empty", hub=hub)))
    assert "1..0" not in described and "None" not in described, described
    assert "seq-ids:  none yet (the next is 1)" in described
    assert "s: consumed nothing yet" in described and "window unlimited" in described, described
    assert "metadata_version" not in described and "metadata version" in described


def test_stats_for_people_and_as_json(hub):
    hedwig("publish", "counted", "x", hub=hub)
    shown = lines(hedwig("stats", hub=hub))
    assert shown[0].startswith("hub 127.0.0.1:") and any(line.split()[:1] == ["publish"] for line in shown)
    assert json.loads(hedwig("stats", "--json", hub=hub).stdout)["published"]["messages"] >= 1


@pytest.mark.parametrize("args", [["topics"], ["subscribe", "t", "s"], ["read", "t"]])
def test_timeout_means_one_thing_and_must_be_positive(args):
    result = hedwig(*args, "--timeout", "-1")
    assert result.returncode == 2
    assert "--timeout: expected a number of seconds above 0, not '-1'" in result.stderr.decode()


# -- 11: the README's Python snippet ----------------------------------------------------------------


def test_the_readme_snippet_resumes_instead_of_replaying(hub):
    text = (ROOT / "README.md").read_text()
    start = text.index("```python\n") + len("```python\n")
    snippet = text[start : text.index("```", start)].replace("127.0.0.1:4080", hub.address)

    def run():
        result = subprocess.run(
            [sys.executable, "-c", snippet], capture_output=True, timeout=60, env=hub_environment(), cwd=ROOT
        )
        assert result.returncode == 0, result.stderr.decode()
        return [line.split()[:2] for line in result.stdout.decode().splitlines()]

    assert run() == [["1", "b'one'"], ["2", "b'two'"], ["3", "b'three'"]]
    assert run() == [["4", "b'one'"], ["5", "b'two'"], ["6", "b'three'"]]


def test_a_long_publish_shows_its_progress_on_a_terminal(hub):
    import pty
    import select

    terminal, stderr = pty.openpty()
    publisher = popen(
        "publish", "progressed", hub=hub, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
    )
    os.close(stderr)
    shown = b""
    with contextlib.ExitStack() as cleanup, Client(hub.address) as client:
        cleanup.callback(os.close, terminal)
        cleanup.callback(lambda: publisher.poll() is None and publisher.kill())

        def progress_shown():
            nonlocal shown
            while select.select([terminal], [], [], 0)[0]:
                shown += os.read(terminal, 4096)
            return b"publishing to progressed: " in shown

        def stored():
            try:
                return client.read("progressed")[-1].seq
            except NoSuchTopic:
                return 0

        sent = 0
        while not progress_shown():  # a line at a time, each stored before the next goes
            assert sent < 10_000, shown
            publisher.stdin.write(b"line\n")
            publisher.stdin.flush()
            sent += 1
            wait_until(lambda sent=sent: stored() == sent, f"line {sent} stored", timeout=20)
        publisher.stdin.close()
        assert publisher.wait(30) == 0
    assert b" msg/s" in shown
    assert publisher.stdout.read() == f"published {sent} messages to progressed: seq-ids 1..{sent}\n".encode()
