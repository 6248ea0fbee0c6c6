"""Reading what a checkpoint committed, and the drain's command-line settings (no Spark)."""

import argparse

import pytest

from hedwig.spark.checkpoint import CheckpointError, LocalFiles, checkpoint_files, last_committed
from hedwig.spark.command import add_drain_arguments, settings_from_args
from hedwig.spark.drain import Progress
from hedwig.spark.options import OptionError

METADATA = '{"batchWatermarkMs":0,"batchTimestampMs":1795283900208,"conf":{}}'


def write_batch(root, batch, offset_line, committed=True):
    (root / "offsets").mkdir(parents=True, exist_ok=True)
    (root / "commits").mkdir(parents=True, exist_ok=True)
    (root / "offsets" / str(batch)).write_text(f"v1\n{METADATA}\n{offset_line}")
    (root / "offsets" / f".{batch}.crc").write_bytes(b"\x00")
    if committed:
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_no_checkpoint_yet_means_nothing_committed(tmp_path):
    assert last_committed(LocalFiles(str(tmp_path / "none"))) is None


def test_the_newest_committed_batch_wins_and_an_uncommitted_one_does_not_count(tmp_path):
    write_batch(tmp_path, 0, '{"a": 10, "b": 3}')
    write_batch(tmp_path, 1, '{"a": 25, "b": 3}')
    write_batch(tmp_path, 2, '{"a": 40, "b": 9}', committed=False)  # planned, then the job died
    (tmp_path / "commits" / ".2.tmp").write_text("partial")
    assert last_committed(LocalFiles(str(tmp_path))) == (1, {"a": 25, "b": 3})
    assert last_committed(checkpoint_files(f"file://{tmp_path}")) == (1, {"a": 25, "b": 3})


@pytest.mark.parametrize(
    "content, message",
    [
        ("garbage", "not a Spark offsets file"),
        (f"v2\n{METADATA}\n{{}}", "offsets log version 'v2'"),
        (f"v1\n{METADATA}\n{{}}\n{{}}", "2 sources; a drain query has exactly one"),
        (f"v1\n{METADATA}\n{{oops", "is not JSON"),
        (f'v1\n{METADATA}\n{{"a": "ten"}}', "is not {topic: seq-id}"),
    ],
)
def test_unreadable_offsets_are_clear_errors(tmp_path, content, message):
    write_batch(tmp_path, 0, "{}")
    (tmp_path / "offsets" / "0").write_text(content)
    with pytest.raises(CheckpointError, match=message):
        last_committed(LocalFiles(str(tmp_path)))


def test_a_commit_without_its_offsets_is_a_clear_error(tmp_path):
    write_batch(tmp_path, 0, "{}")
    (tmp_path / "offsets" / "0").unlink()
    with pytest.raises(CheckpointError, match="batch 0 is committed but offsets/0 cannot be read"):
        last_committed(LocalFiles(str(tmp_path)))


def test_other_filesystems_need_the_spark_session():
    with pytest.raises(CheckpointError, match="needs the Spark session"):
        checkpoint_files("hdfs://namenode/checkpoints/drain")


def parse_drain(*argv):
    parser = argparse.ArgumentParser()
    add_drain_arguments(parser)
    return settings_from_args(parser.parse_args(["--hub", "h:1", "--topics", "a,b", "--out", "o",
                                                 "--checkpoint", "c", *argv]))  # fmt: skip


def test_drain_arguments_become_settings():
    settings = parse_drain("--once", "--subscriber", "lake", "--max-messages-per-trigger", "0",
                           "--allow-data-loss")  # fmt: skip
    assert settings.hubs == ("h:1",) and settings.topics == ("a", "b")
    assert settings.once and settings.subscriber == "lake"
    assert settings.max_messages_per_trigger is None
    assert settings.fail_on_data_loss is False


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--subscriber", "__relay"], "reserved for hubs"),
        (["--subscriber", "a b"], "characters outside"),
        (["--max-messages-per-partition", "0"], "must be a positive number"),
        (["--max-messages-per-trigger", "-5"], "must be a positive number"),
        (["--progress", "0"], "--progress more than 0"),
    ],
)
def test_bad_drain_arguments_are_refused(argv, message):
    with pytest.raises(OptionError, match=message):
        parse_drain(*argv)


def test_progress_counts_what_this_run_committed_and_its_rate():
    now = [100.0]
    progress = Progress({"a": 10, "b": 0}, clock=lambda: now[0])
    now[0] = 102.0
    line = progress.line({"a": 30, "b": 20}, {"a": 5, "b": 0})
    assert line == "drained 40 messages (20/s now); lag a=5 b=0"
    now[0] = 103.0
    assert progress.line({"a": 30, "b": 20}, {"a": 0, "b": 0}).startswith("drained 40 messages (0/s now)")
