"""`hedwig bench` against a real hub: each mode publishes what it says (the hub's own
DESCRIBE_TOPIC counts it), reports rates and ordered latency percentiles, in JSON and
for people, and removes the subscriptions it made."""

import json
import subprocess
import sys

import pytest

from hedwig.client import Client
from hedwig.testing.hubprocess import hub_environment


def bench(hub, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hedwig", "--hub", hub.address, "bench", *args],
        capture_output=True, text=True, timeout=120, env=hub_environment(),
    )  # fmt: skip


def reported(hub, *args) -> dict:
    done = bench(hub, *args, "--json")
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    return json.loads(line)


def ordered(latency: dict, count: int) -> None:
    assert latency["count"] == count
    values = [latency[key] for key in ("p50", "p90", "p99", "p99.9", "max")]
    assert values == sorted(values) and values[0] > 0, latency


def described(hub, topic: str) -> dict:
    with Client(hub.address) as client:
        return client.describe(topic)


def test_publish_reports_its_rate_and_request_latency(hub):
    report = reported(hub, "publish", "bench-pub", "--messages", "3000", "--batch", "50", "--clients", "2")
    assert (report["mode"], report["messages"], report["clients"], report["batch"]) == (
        "publish",
        3000,
        2,
        50,
    )
    assert report["messages_per_s"] > 0 and report["mb_per_s"] > 0
    ordered(report["publish_latency_ms"], 3000 // 50)
    assert described(hub, "bench-pub")["last_seq"] == 3000


def test_subscribe_reports_deliveries_and_leaves_no_subscription(hub):
    report = reported(hub, "subscribe", "bench-sub", "--messages", "2000", "--batch", "100", "--clients", "2")
    assert (report["subscribers"], report["deliveries"]) == (2, 4000)
    ordered(report["delivery_latency_ms"], 4000)
    ordered(report["publish_latency_ms"], 20)
    info = described(hub, "bench-sub")
    assert info["last_seq"] == 2000
    assert info["subscribers"] == []


def test_round_trip_reports_each_message_latency(hub):
    report = reported(hub, "round-trip", "bench-rtt", "--messages", "200", "--size", "64")
    assert report["messages"] == 200 and report["size"] == 64
    ordered(report["round_trip_latency_ms"], 200)
    assert described(hub, "bench-rtt")["subscribers"] == []


def test_the_report_for_people(hub):
    done = bench(hub, "publish", "bench-people", "--messages", "500")
    assert done.returncode == 0, done.stderr
    head, rates, latency = done.stdout.splitlines()
    assert head.startswith(f"hedwig bench publish bench-people at {hub.address}: 128-byte payloads")
    assert rates.startswith("  500 messages in ") and "msg/s" in rates and "MB/s" in rates
    assert (
        latency.startswith("  publish request latency: p50 ") and " p99.9 " in latency and " max " in latency
    )


@pytest.mark.parametrize(
    "args, said",
    [(["round-trip", "--size", "4"], "--size 4: round-trip needs at least 8 bytes"),
     (["publish", "--messages", "0"], "expected at least 1, not 0")],
)  # fmt: skip
def test_options_that_cannot_work_are_one_line_and_status_2(hub, args, said):
    done = bench(hub, *args)
    assert done.returncode == 2
    assert said in done.stderr.strip().splitlines()[-1], done.stderr


def test_percentiles_are_nearest_rank_over_every_sample():
    from hedwig.benchtool.measure import Latencies

    latencies = Latencies()
    for millisecond in range(100, 0, -1):  # 100 samples of 1..100 ms, in any order
        latencies.add(millisecond * 1_000_000)
    summary = latencies.summary()
    assert (summary["count"], summary["p50"], summary["p90"], summary["p99"]) == (100, 50.0, 90.0, 99.0)
    assert (summary["p99.9"], summary["max"], summary["mean"]) == (100.0, 100.0, 50.5)
    assert Latencies().summary()["p50"] is None
