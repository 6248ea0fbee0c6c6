"""What `stats`, `topics`, `describe`, `subscriptions` and `top` show people, against a
real hub process: aligned columns, headings, no Python or raw JSON values, no names of
the code's own, one figure for one thing, and numbers written the same everywhere."""

import re
import subprocess
import sys

from hedwig.client import Client
from hedwig.testing.hubprocess import HubProcess, hub_environment
from tests.cli.test_cli import ROOT, hedwig, lines


def test_stats_reads_as_text_with_aligned_columns(hub):
    hedwig("publish", "viewed", "a", "b", "c", hub=hub)
    hedwig("subscribe", "viewed", "s", "--from", "earliest", "--count", "3", hub=hub)
    shown = lines(hedwig("stats", hub=hub))
    text = "\n".join(shown)
    assert "None" not in text and "{" not in text and "': " not in text, text
    for internal in ("stub waiters", "stub_waiters", "uncacheable", "holders", "entries in flight"):
        assert internal not in text, internal
    # One "delivered" figure, the hub's since its start (the delivery manager's count of the
    # subscribers attached now is not shown beside it as another one).
    delivered = [line for line in shown if re.search(r"\bdelivered\b", line) and "again" not in line]
    assert len(delivered) == 1 and re.search(r"delivered [\d,]+ messages in [\d,]+ entr", delivered[0]), shown
    table = shown[shown.index(next(line for line in shown if line.startswith("OPERATION"))) :]
    table = table[: table.index("")]
    assert len({len(line) for line in table}) == 1, table  # every row as wide as the heading
    assert table[0].split() == ["OPERATION", "OK", "FAILED", "P50", "US", "P99", "US", "MAX", "US"]


def test_topics_has_a_heading(hub):
    hedwig("publish", "headed-topic", "x", hub=hub)
    shown = lines(hedwig("topics", hub=hub))
    assert shown[0].split() == ["TOPIC", "OWNER"]
    assert f"headed-topic {hub.address}" in [" ".join(line.split()) for line in shown]


def test_a_count_is_written_the_same_in_describe_subscriptions_and_top(tmp_path):
    with HubProcess(tmp_path / "d", http=True) as hub, Client(hub.address) as client:
        client.publish_many("counted", [b"m"] * 1500)
        with client.subscribe("counted", "slow", start="earliest", window=1) as subscription:
            subscription.ack(subscription.receive(timeout=30))
        described = lines(hedwig("describe", "counted", hub=hub))
        listed = lines(hedwig("subscriptions", "counted", hub=hub))
        top = subprocess.run(
            [sys.executable, "-m", "hedwig", "--hub", hub.address, "top", "--count", "1"],
            capture_output=True, text=True, timeout=60, env=hub_environment(), cwd=ROOT,
        )  # fmt: skip
    assert any("backlog 1,499" in line for line in described), described
    assert listed[1].split()[4] == "1,499", listed
    assert any(line.split()[:3] == ["counted", "slow", "1,499"] for line in top.stdout.splitlines()), (
        top.stdout
    )
    assert any("ledger" in line and re.search(r"\d+(\.\d)? (B|KiB)$", line) for line in described), described
