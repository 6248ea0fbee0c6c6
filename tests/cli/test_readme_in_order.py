"""The README's "Using it" commands, run in the order it gives them against a hub, and
what it says `make run` installs and the Spark section needs: a new user following it
line by line meets no failure it did not warn of."""

import configparser
import re
import shlex
import subprocess
import sys
from pathlib import Path

from hedwig.testing.hubprocess import hub_environment

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def using_it_commands() -> list:
    """The `.venv/bin/hedwig ...` lines of "Using it", without their comments, in order
    (the one reading `tail -f` and the shell's `eval` left out: they never end)."""
    section = README[README.index("## Using it") : README.index("`hedwig COMMAND --help`")]
    commands = []
    for line in section.splitlines():
        line = line.strip()
        if line.startswith(".venv/bin/hedwig "):
            commands.append(shlex.split(line.split("  #")[0])[1:])
    return commands


def test_the_using_it_commands_run_in_the_readmes_order(hub):
    commands = using_it_commands()
    assert len(commands) >= 10, commands
    for words in commands:
        if words[0] == "subscribe" and "--count" not in words:
            words = [*words, "--idle", "1"]  # (it would wait for messages until Ctrl-C)
        done = subprocess.run(
            [sys.executable, "-m", "hedwig", "--hub", hub.address, *words],
            capture_output=True, text=True, timeout=60, env=hub_environment(), cwd=ROOT,
        )  # fmt: skip
        assert done.returncode == 0, f"hedwig {' '.join(words)}: {done.stderr}"


def test_make_run_installs_what_the_readme_says_and_no_more():
    said = README[README.index("(It creates `.venv`") :].split(".)", 1)[0]
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    needed = [
        re.split(r"[<>=\[ ]", line.strip())[0] for line in setup["options"]["install_requires"].split("\n")
    ]
    for name in filter(None, needed):
        assert re.search(rf"\b{re.escape(name)}\b", said, re.I), f"{name} is installed by make run: {said}"


def test_the_spark_section_says_what_drain_needs_before_using_it():
    section = README[README.index("## Analytics with Spark") :]
    before_drain = section[: section.index("hedwig drain --topics")]
    assert "make run` does not install" in before_drain and "'.[spark]'" in before_drain
    assert "make extras EXTRAS=spark" in before_drain  # (adding the extra keeps `make run`'s install)
