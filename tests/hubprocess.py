"""What the tests know of this checkout: its root, and the command `make run` runs.

Hub processes themselves are hedwig.testing.hubprocess (shared with bench/)."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_run_command() -> list:
    """The command line `make run` runs (its last line as `make -n` prints it), in words."""
    dry_run = subprocess.run(
        ["make", "-s", "-n", "run"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return dry_run.stdout.strip().splitlines()[-1].split()
