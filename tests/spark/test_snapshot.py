"""`hedwig drain --snapshot`: a topic's table (one row per live key) written to Parquet
once, against a real hub and a real local Spark session."""

import argparse

import pytest

from hedwig.client.blocking import Client
from hedwig.spark.command import add_drain_arguments, settings_from_args
from hedwig.spark.drain import DrainFailed, write_snapshot
from hedwig.spark.options import OptionError
from hedwig.spark.settings import DrainSettings
from tests.hub.test_compaction import publish_keyed, publish_rounds

pytestmark = pytest.mark.spark


def parse(*argv):
    parser = argparse.ArgumentParser()
    add_drain_arguments(parser)
    return settings_from_args(parser.parse_args(["--hub", "h:1", "--topics", "a", "--out", "o", *argv]))


def test_a_snapshot_needs_no_checkpoint_and_takes_none():
    assert parse("--snapshot").snapshot
    with pytest.raises(OptionError, match="leave --checkpoint out"):
        parse("--snapshot", "--checkpoint", "c")
    with pytest.raises(OptionError, match="--checkpoint DIR is required"):
        parse()


def test_a_snapshot_is_one_row_per_live_key_written_once(spark, gc_hub, tmp_path):
    with Client(gc_hub.address) as client:
        client.create_topic("snap", compaction=True)
        latest = publish_rounds(client, "snap", rounds=5, keys=4)
        publish_keyed(client, "snap", [(b"k2", b"")])  # gone
        del latest[b"k2"]
        client.compact("snap")
    out = tmp_path / "snapshot"
    settings = DrainSettings(
        hubs=(gc_hub.address,), topics=("snap",), out=str(out), checkpoint="", snapshot=True
    )
    assert write_snapshot(spark, settings) == len(latest)
    rows = spark.read.parquet(str(out)).collect()
    assert sorted((row.topic, row.seq, bytes(row.payload)) for row in rows) == sorted(
        ("snap", seq, payload) for seq, payload in latest.values()
    )
    assert [p.name for p in tmp_path.iterdir()] == ["snapshot"]  # (nothing partial left beside it)
    with pytest.raises(DrainFailed, match="written once"):
        write_snapshot(spark, settings)
