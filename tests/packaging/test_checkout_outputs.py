"""What the README's commands write into the checkout is ignored by git, so that trying
them never leaves a user's `git status` full of Parquet files and ledgers."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

MADE_BY_THE_README = [
    "data/ledgers/00000001.ledger",  # make run
    "conf/data/metadata.sqlite3",  # hedwig hub --conf conf/hub.conf (data_dir = ./data, beside it)
    "lake/topic=orders/part-00000.parquet",  # hedwig drain --out ./lake
    "lake-checkpoint/offsets/0",  # --checkpoint ./lake-checkpoint
]


@pytest.mark.skipif(not (ROOT / ".git").exists() or not shutil.which("git"), reason="not a git checkout")
def test_what_the_readme_commands_write_is_ignored():
    checked = subprocess.run(
        ["git", "check-ignore", "--no-index", *MADE_BY_THE_README],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert checked.stdout.split() == MADE_BY_THE_README, checked.stdout + checked.stderr
