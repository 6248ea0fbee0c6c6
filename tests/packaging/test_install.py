"""`pip install .` as a new user runs it: not editable, into a fresh virtual environment,
from a copy of the checkout (the build writes build/ and *.egg-info beside the sources,
and the test must leave the repository as it found it).

The installed environment alone must give: the `hedwig` command, whose `hedwig hub`
serves; `twistd -n hedwig` (the dropin in twisted/plugins is installed with the
package); the example configuration (`hedwig hub --example-conf`) and the docs under
the environment's share/. Each hub is started from that environment, outside the
checkout, talked to with the installed client, and stopped with SIGTERM.
"""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hedwig.testing.hubprocess import HubProcess, hub_environment

ROOT = Path(__file__).resolve().parents[2]
# What a checkout holds that is not part of the sources a user installs from.
NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", "data", "lake", "build", "dist", "*.egg-info", "__pycache__", "dropin.cache",
    ".pytest_cache", ".ruff_cache", ".hypothesis", "spark-warehouse", "metastore_db", "bench",
)  # fmt: skip
INSTALL_TIMEOUT_S = 300

pytestmark = pytest.mark.slow


def outside_the_checkout() -> dict:
    """An environment that cannot reach the checkout's sources or its virtualenv."""
    env = hub_environment()
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        env.pop(name, None)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtual environment with hedwig installed into it by `pip install SRC`."""
    base = tmp_path_factory.mktemp("install")
    sources = base / "src"
    shutil.copytree(ROOT, sources, ignore=NOT_SOURCES)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         str(sources)],
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=outside_the_checkout(), cwd=base,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stdout + pip.stderr
    shutil.rmtree(sources)  # what follows must come from the environment alone
    elsewhere = base / "elsewhere"
    elsewhere.mkdir()
    return venv, elsewhere


def run_installed(venv, elsewhere, *command, hub=None) -> str:
    args = [str(venv / "bin" / command[0]), *command[1:]]
    if hub is not None:
        args[1:1] = ["--hub", hub.address]
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=60, env=outside_the_checkout(), cwd=elsewhere
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_package_is_imported_from_the_environment_with_its_conf_and_docs(installed):
    venv, elsewhere = installed
    where = run_installed(venv, elsewhere, "python", "-c", "import hedwig; print(hedwig.__file__)")
    assert Path(where.strip()).is_relative_to(venv), where
    assert run_installed(venv, elsewhere, "hedwig", "hub", "--example-conf") == (
        ROOT / "conf" / "hub.conf"
    ).read_text(encoding="utf-8")
    share = venv / "share"
    assert (share / "hedwig" / "conf" / "regions" / "world.conf").is_file()
    assert {p.name for p in (share / "doc" / "hedwig").iterdir()} >= {
        "README.md", "operations.md", "protocol.md", "architecture.md", "grafana-dashboard.json",
    }  # fmt: skip
    helped = run_installed(venv, elsewhere, "hedwig", "hub", "--help")
    assert str(share / "doc" / "hedwig" / "operations.md") in helped
    assert f"Example configurations: {share / 'hedwig' / 'conf'}" in helped  # (regions/ there)
    # The region examples' data goes to /tmp, never inside the environment.
    world = (share / "hedwig" / "conf" / "regions" / "world.conf").read_text()
    assert "data_dir = /tmp/hedwig-regions/world\n" in world
    # Only what a hub needs: no test, Spark or ZooKeeper extras.
    listed = run_installed(venv, elsewhere, "python", "-m", "pip", "list", "--format=freeze").lower()
    assert not [name for name in ("pyspark", "pytest", "kazoo", "ruff") if f"{name}==" in listed], listed


@pytest.mark.parametrize(
    "launcher, logs_on_stdout", [(("hedwig", "hub"), False), (("twistd", "-n", "hedwig"), True)],
    ids=["hedwig hub", "twistd -n hedwig"],
)  # fmt: skip
def test_each_way_of_running_a_hub_serves_from_the_environment(installed, tmp_path, launcher, logs_on_stdout):
    venv, elsewhere = installed
    command = [str(venv / "bin" / launcher[0]), *launcher[1:]]
    hub = HubProcess(
        tmp_path / "data", launcher=command, cwd=elsewhere, env=outside_the_checkout(),
        log_on_stdout=logs_on_stdout,
    )  # fmt: skip
    with hub:
        assert run_installed(venv, elsewhere, "hedwig", "publish", "installed", "one", "two", hub=hub) == (
            "published 2 messages to installed: seq-ids 1..2\n"
        )
        printed = run_installed(
            venv, elsewhere, "hedwig", "subscribe", "installed", "me", "--from", "earliest", "--count", "2",
            hub=hub,
        )  # fmt: skip
        assert printed == "one\ntwo\n"
        status = hub.stop()
    # A graceful stop: hedwig hub exits 0; twistd re-raises the SIGTERM that stopped it.
    assert status in (0, -signal.SIGTERM), hub.output()
    assert "stopped" in hub.output()
    assert os.path.isfile(tmp_path / "data" / "metadata.sqlite3")
