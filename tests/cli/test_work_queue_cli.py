"""`hedwig subscribe --shared` and what `hedwig subscriptions` and `hedwig describe` show of
shared subscriptions (members, pending, redeliveries), against a real hub process."""

import json
import subprocess
import sys

from hedwig.client import Client
from hedwig.testing.hubprocess import hub_environment
from hedwig.testing.polling import wait_until
from tests.cli.test_cli import ROOT, hedwig, lines


def test_shared_members_on_the_command_line_each_take_their_own_messages(hub):
    hedwig("publish", "cli-shared", "a", "b", "c", "d", "e", "f", hub=hub)
    member = ["subscribe", "cli-shared", "workers", "--shared", "--window", "3", "--count", "3"]
    first = lines(hedwig(*member, "--from", "earliest", hub=hub))
    second = lines(hedwig(*member, hub=hub))
    assert sorted(first + second) == ["a", "b", "c", "d", "e", "f"], "each once: every one acknowledged"
    [row] = json.loads(hedwig("subscriptions", "cli-shared", "--json", hub=hub).stdout)
    assert (row["kind"], row["consumed_seq"], row["members"], row["pending"]) == ("shared", 6, 0, 0)


def test_subscriptions_and_describe_show_members_pending_and_redeliveries(hub):
    hedwig("publish", "cli-pending", "x", "y", "z", hub=hub)
    with Client(hub.address) as client:
        member = client.subscribe("cli-pending", "team", kind="shared", start="earliest", ack_timeout=60)
        held = [member.receive(timeout=30) for _ in range(3)]
        member.nack(held[0])
        assert member.receive(timeout=30).delivery_count == 2
        wait_until(
            lambda: json.loads(hedwig("subscriptions", "cli-pending", "--json", hub=hub).stdout)[0][
                "redeliveries"
            ],
            "the redelivery counted",
        )
        table = lines(hedwig("subscriptions", "cli-pending", hub=hub))
        headings = ["TOPIC", "SUBSCRIBER", "CONSUMED", "LAST", "LAG", "KIND", "STATE", "MEMBERS", "PENDING"]
        assert table[0].split() == [*headings, "REDELIVERIES"]
        assert table[1].split() == ["cli-pending", "team", "0", "3", "3", "shared", "shared", "1", "3", "1"]
        described = "\n".join(lines(hedwig("describe", "cli-pending", hub=hub)))
        assert "shared push: 1 member(s), pending 3, queued 0" in described, described
        assert "redeliveries 1" in described and "ack timeout 60 s" in described, described


def test_work_queue_options_need_shared_and_a_kind_mismatch_is_one_line(hub):
    refused = hedwig("subscribe", "cli-kinds", "s", "--max-deliveries", "3", "--create", hub=hub)
    assert refused.returncode != 0 and b"need --shared" in refused.stderr
    hedwig("subscribe", "cli-kinds", "solo", "--create", "--idle", "0.2", hub=hub)
    mismatch = hedwig("subscribe", "cli-kinds", "solo", "--shared", "--idle", "0.2", hub=hub)
    assert mismatch.returncode != 0
    assert (
        mismatch.stderr.decode().count("\n") == 1
        and "exclusive push subscription" in mismatch.stderr.decode()
    )


def test_workers_started_at_the_same_moment_both_run_and_share_the_first_small_publish(hub):
    """Two `hedwig subscribe jobs workers --shared --create` started together: neither is
    refused (TOPIC_BUSY) while the other creates the subscription, and a publish of four
    jobs goes two to each, not all four to the first."""
    command = [sys.executable, "-m", "hedwig", "--hub", hub.address, "subscribe", "together", "workers"]
    command += ["--shared", "--create", "--idle", "2"]  # (ends 2 s after its last job)
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    workers = [subprocess.Popen(command, **pipes, env=hub_environment(), cwd=ROOT) for _ in range(2)]
    try:

        def both_joined():
            rows = json.loads(hedwig("subscriptions", "together", "--json", hub=hub).stdout or "[]")
            return rows and rows[0]["members"] == 2

        wait_until(both_joined, "both workers members of the shared subscription")
        hedwig("publish", "together", "job-1", "job-2", "job-3", "job-4", hub=hub)
        outcomes = [worker.communicate(timeout=60) for worker in workers]
    finally:
        for worker in workers:
            worker.kill()
    for worker, (out, err) in zip(workers, outcomes, strict=True):
        assert worker.returncode == 0 and err == b"", err.decode()
        assert len(out.splitlines()) == 2  # two jobs each
    printed = sorted(line for out, _ in outcomes for line in out.decode().splitlines())
    assert printed == ["job-1", "job-2", "job-3", "job-4"]


def test_key_shared_members_on_the_command_line_each_take_whole_keys(hub):
    for key in ("a", "b", "c", "d"):
        hedwig("publish", "cli-key-shared", f"{key}1", f"{key}2", f"{key}3", "--key", key, hub=hub)
    member = ["subscribe", "cli-key-shared", "workers", "--key-shared", "--key", "--idle", "2"]
    first = lines(hedwig(*member, "--from", "earliest", "--count", "6", hub=hub))
    second = lines(hedwig(*member, hub=hub))
    assert sorted(first + second) == sorted(f"{k}\t{k}{n}" for k in "abcd" for n in (1, 2, 3))
    for taken in (first, second):
        for key in {line.split("\t")[0] for line in taken}:
            of_key = [line for line in taken if line.startswith(key)]
            assert of_key == [f"{key}\t{key}{n}" for n in (1, 2, 3)], "a key whole, in order"
    [row] = json.loads(hedwig("subscriptions", "cli-key-shared", "--json", hub=hub).stdout)
    assert (row["kind"], row["consumed_seq"], row["pending"]) == ("key_shared", 12, 0)
    both = hedwig("subscribe", "cli-key-shared", "workers", "--key-shared", "--shared", hub=hub)
    assert both.returncode != 0 and b"choose one" in both.stderr
