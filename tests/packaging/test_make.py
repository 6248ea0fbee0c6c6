"""The README's two commands on a machine that has neither run yet: `make run` installs
what a hub needs and nothing more, `make test` the test tools, Spark and ZooKeeper too.
Read from `make -n` with a virtual environment that does not exist, so every step it
would take is printed and none is taken."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def installs(target: str, tmp_path) -> list[str]:
    """What `make TARGET` would pip-install into a fresh environment: each requirement."""
    dry_run = subprocess.run(
        ["make", "-s", "-n", target, f"VENV={tmp_path / 'venv'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert not (tmp_path / "venv").exists()
    requirements = []
    for line in dry_run.stdout.splitlines():
        if re.search(r"-m pip install\b", line) and "--upgrade pip" not in line:
            words = iter(line.split("-m pip install", 1)[1].split())
            for word in words:
                if word == "--config-settings":
                    next(words)
                elif not word.startswith("-"):
                    requirements.append(word.strip("'\""))
    return requirements


def test_make_run_installs_the_package_without_extras(tmp_path):
    assert installs("run", tmp_path) == ["."]


def test_make_test_installs_the_test_spark_and_zookeeper_extras(tmp_path):
    [extras] = [r for r in installs("test", tmp_path) if r.startswith(".[")]
    assert set(extras[2:-1].split(",")) == {"test", "spark", "zk"}
