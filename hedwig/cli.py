"""The `hedwig` command: `hedwig hub` runs a hub; the other subcommands are clients."""

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hedwig", description="hedwig publish/subscribe hub")
    parser.add_subparsers(dest="command", required=True)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    parser.parse_args(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
