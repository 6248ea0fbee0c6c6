"""`hedwig drain --snapshot` run as a user runs it (the README's command: the `hedwig`
command a process of its own, PYSPARK_PYTHON set) against a real hub: the Parquet it
writes holds one row per live key of a compacted topic."""

import os
import subprocess
import sys

import pytest

from hedwig.client.blocking import Client
from tests.cli.test_cli import ROOT
from tests.hub.test_compaction import publish_keyed, publish_rounds

pytestmark = pytest.mark.spark


def test_drain_snapshot_command_writes_the_live_keys_as_parquet(spark, gc_hub, tmp_path):
    with Client(gc_hub.address) as client:
        client.create_topic("prices", compaction=True)
        latest = publish_rounds(client, "prices", rounds=3, keys=5)
        publish_keyed(client, "prices", [(b"k3", b"")])  # a tombstone: k3 is gone
        del latest[b"k3"]
    out = tmp_path / "prices-today"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    command = [sys.executable, "-m", "hedwig", "--hub", gc_hub.address, "drain"]
    command += ["--topics", "prices", "--out", str(out), "--snapshot", "--master", "local[2]"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"hedwig drain: wrote {len(latest)} rows, one a live key, to {out}"
    )
    rows = spark.read.parquet(str(out)).collect()
    assert sorted((row.topic, row.seq, bytes(row.key), bytes(row.payload)) for row in rows) == sorted(
        ("prices", seq, key, payload) for key, (seq, payload) in latest.items()
    )
