"""`hedwig --help` and each subcommand's, as a user reads them: an examples section (as
kafka's console tools and the `nats` CLI have) whose command lines are real ones, help
text for every positional argument, and a usage error that names only what is missing."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from hedwig.commands.examples import EXAMPLES, OVERVIEW
from hedwig.commands.main import build_parser, parse_args
from hedwig.testing.hubprocess import hub_environment

ROOT = Path(__file__).resolve().parents[2]
SUBCOMMANDS = sorted(build_parser()._subparsers._group_actions[0].choices)


def hedwig(*args):
    return subprocess.run(
        [sys.executable, "-m", "hedwig", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=hub_environment(),
        cwd=ROOT,
    )


def test_the_top_level_help_ends_with_examples():
    out = hedwig("--help").stdout
    examples = out[out.index("\nexamples:\n") :]
    assert "  hedwig publish greetings hello world\n" in examples
    assert "  hedwig subscribe jobs workers --shared --create\n" in examples


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_subcommand_has_examples_of_itself(name):
    out = hedwig(name, "--help").stdout
    assert "\nexamples:\n" in out, out
    shown = out[out.index("\nexamples:\n") :]
    assert f"hedwig {name}" in shown or f"hedwig --hub 10.0.0.5:4080 {name}" in shown


def _hedwig_words(command: str):
    """The words after `hedwig` of an example's command line (None for a pipeline's or an
    environment's part that is not a hedwig command)."""
    inner = re.search(r"\$\((hedwig [^)]*)\)", command)  # (eval "$(hedwig ...)")
    for part in [inner.group(1)] if inner else command.split("|"):
        words = shlex.split(part)
        while words and "=" in words[0]:  # (VARIABLE=value before the command)
            words.pop(0)
        if words and words[0] == "hedwig":
            return [word for word in words[1:] if word not in ("<", "app.log")]
    return None


@pytest.mark.parametrize(
    "command",
    [command for command, _ in OVERVIEW] + [c for examples in EXAMPLES.values() for c, _ in examples],
)
def test_every_example_is_a_command_line_hedwig_takes(command):
    words = _hedwig_words(command)
    assert words is not None, command
    args = parse_args(build_parser(), words)  # a usage error would exit here
    assert args.command == next(word for word in words if not word.startswith("-") and ":" not in word)


@pytest.mark.parametrize(
    "name", ["subscribe", "unsubscribe", "reset", "describe", "read", "create", "delete"]
)
def test_topic_and_subscriber_have_help_text(name):
    out = hedwig(name, "--help").stdout
    positionals = out[out.index("positional arguments:") :]
    assert "TOPIC       the topic's name" in " ".join(positionals.split("\n")) or (
        "the topic's name" in positionals
    ), positionals
    if name in ("subscribe", "unsubscribe", "reset"):
        assert "SUBSCRIBER" in positionals and "the durable subscription's name" in positionals


def test_publish_with_no_arguments_asks_for_the_topic_only():
    """MESSAGE is optional (none: standard input), so the usage error names TOPIC alone."""
    result = hedwig("publish")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "hedwig publish: error: the following arguments are required: TOPIC"
    )
