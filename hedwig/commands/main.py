"""The `hedwig` command: `hedwig hub` runs a hub; the other subcommands are clients
(hedwig/commands/: publishing, consuming, admin, describing, completion).

Each subcommand is a pair of functions: `add_<name>(subparsers, client_options)` makes its
parser and sets `run` to `<name>(args) -> exit status`; a client subcommand's name and
help come from `<name>` and its docstring (_client_command), and it takes the connection
options (--hub, --timeout, --json, TLS) after its name as well as before. A new
subcommand is one more pair and one more line in SUBCOMMANDS. A failure prints one line
to stderr and exits 1 (2 for a usage error, as argparse does).
"""

import argparse
import sys

from hedwig import __version__
from hedwig.auth.command import add_user_command
from hedwig.benchtool.command import add_bench
from hedwig.client.errors import HedwigError
from hedwig.commands.admin import (
    add_compact,
    add_create,
    add_delete,
    add_hubs,
    add_reset,
    add_subscriptions,
    add_topics,
    add_unsubscribe,
)
from hedwig.commands.common import (
    CommandError,
    UsageError,
    add_connection_options,
    client_command,
    client_tls,
)
from hedwig.commands.completion import add_completion
from hedwig.commands.consuming import add_read, add_subscribe
from hedwig.commands.describing import add_describe, add_stats
from hedwig.commands.examples import add_examples
from hedwig.commands.migrate import add_migrate
from hedwig.commands.publishing import add_publish
from hedwig.commands.top import add_top

# (kept under these names for subcommands registered here)
_client_command = client_command
_client_tls = client_tls

# -- hub ----------------------------------------------------------------------------------------


def add_hub(subparsers, client_options):
    from hedwig.hub.main import add_hub_arguments

    parser = subparsers.add_parser("hub", help="run a hub in the foreground (until SIGTERM or SIGINT)")
    add_hub_arguments(parser)
    parser.set_defaults(run=hub)


def hub(args) -> int:
    from hedwig.hub.main import run_hub

    return run_hub(args)


# -- drain --------------------------------------------------------------------------------------


def add_drain(subparsers, client_options):
    from hedwig.spark.command import add_drain_arguments

    parser = _client_command(subparsers, client_options, drain)
    add_drain_arguments(parser, hub_option=False)


def drain(args) -> int:
    """drain topics into Parquet with Spark (exactly once)"""
    _client_tls(args)  # (a TLS file that cannot be used is a usage error, before Spark starts)
    from hedwig.spark.command import run_drain

    return run_drain(args)


# -- the command --------------------------------------------------------------------------------

SUBCOMMANDS = [add_hub, add_publish, add_subscribe, add_read, add_unsubscribe, add_topics, add_hubs,
               add_describe, add_stats, add_subscriptions, add_create, add_compact, add_delete, add_reset,
               add_drain, add_completion, add_top, add_user_command, add_bench, add_migrate]  # fmt: skip

# Subcommands whose last positional takes any number of words: words left over after
# options between them (`publish t a --property k=v b`) are theirs.
_TRAILING_WORDS = {"publish": "messages"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hedwig", description="hedwig publish/subscribe hub")
    parser.add_argument("--version", action="version", version=f"hedwig {__version__}")
    add_connection_options(parser, top_level=True)
    client_options = argparse.ArgumentParser(add_help=False)
    add_connection_options(client_options, top_level=False)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(subparsers, client_options)
    add_examples(parser)
    for name, subparser in subparsers.choices.items():
        add_examples(subparser, name)
    return parser


def parse_args(parser, argv=None):
    """Options anywhere: argparse stops a `nargs="*"` positional at the first option, so
    the words after it come back unrecognised; they belong to that positional."""
    args, extra = parser.parse_known_args(argv)
    field = _TRAILING_WORDS.get(args.command)
    if extra and field is not None and not any(word.startswith("-") for word in extra):
        setattr(args, field, [*getattr(args, field), *extra])
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.parser = parser  # (`hedwig completion` describes the whole command)
    return args


def main(argv=None) -> int:
    args = parse_args(build_parser(), argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        return 130
    except UsageError as e:
        print(f"hedwig {args.command}: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader of our output went away (`hedwig subscribe ... | head`).
        sys.stderr.close()
        return 0
    except (HedwigError, CommandError) as e:
        print(f"hedwig {args.command}: {e}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:
        print(f"hedwig {args.command}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
