"""The `hedwig` command: `hedwig hub` runs a hub; the other subcommands are clients.

Each subcommand is a pair of functions: `add_<name>(subparsers, client_options)` makes its
parser and sets `run` to `<name>(args) -> exit status`; a client subcommand's help is
`<name>`'s docstring (_client_command). A new subcommand is one more pair and one more
line in SUBCOMMANDS. A failure prints one line to stderr and exits 1
(2 for a usage error, as argparse does).
"""

import argparse
import json
import os
import signal
import sys
import time

from hedwig.auth.client_options import add_user_option, credentials_from
from hedwig.auth.command import add_user_command
from hedwig.benchtool.command import add_bench
from hedwig.cli_top import add_top
from hedwig.client.defaults import DEFAULT_HUB
from hedwig.client.errors import HedwigError

STDIN_BATCH_MESSAGES = 1000
STDIN_BATCH_BYTES = 512 * 1024


class CommandError(Exception):
    """A failure to report as one line, without a traceback."""


class UsageError(CommandError):
    """A command line that cannot work (a TLS file that cannot be used): exit status 2."""


def _client_tls(args):
    """The ClientTls the --tls options (or their HEDWIG_TLS_* variables) ask for; None for
    plain TCP. Any of them means TLS. Its files are read now, so that one that cannot be
    used is a usage error naming it, before anything is sent."""
    from hedwig.tls import ClientTls, TlsError, tls_available

    if not (args.tls or args.tls_ca or args.tls_cert or args.tls_key or args.tls_name):
        return None
    tls = ClientTls(
        ca_file=args.tls_ca, cert_file=args.tls_cert, key_file=args.tls_key, server_name=args.tls_name
    )
    try:
        if tls_available():
            tls.check()
        else:  # the blocking client needs only the standard library's ssl, which reads them too
            tls.ssl_context()
    except TlsError as e:
        raise UsageError(str(e)) from None
    return tls


def _client(args, **options):
    from hedwig.client import Client

    return Client(
        args.hub,
        client_name=f"hedwig {args.command}",
        tls=_client_tls(args),
        credentials=credentials_from(args),
        **options,
    )


def _client_command(subparsers, client_options, run):
    """The parser of the client subcommand that calls `run(args)`: named after `run` and
    helped by its docstring, so each subcommand's name and help are written once. It takes
    --hub and the TLS options after its name too (client_options)."""
    parser = subparsers.add_parser(run.__name__, parents=[client_options], help=run.__doc__)
    parser.set_defaults(run=run)
    return parser


def _parse_properties(pairs) -> dict | None:
    properties = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CommandError(f"--property {pair!r}: expected KEY=VALUE")
        properties[key] = os.fsencode(value)
    return properties or None


# -- hub ----------------------------------------------------------------------------------------


def add_hub(subparsers, client_options):
    from hedwig.hub.main import add_hub_arguments

    parser = subparsers.add_parser("hub", help="run a hub in the foreground (until SIGTERM or SIGINT)")
    add_hub_arguments(parser)
    parser.set_defaults(run=hub)


def hub(args) -> int:
    from hedwig.hub.main import run_hub

    return run_hub(args)


# -- publish ------------------------------------------------------------------------------------


def add_publish(subparsers, client_options):
    parser = _client_command(subparsers, client_options, publish)
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("messages", nargs="*", metavar="MESSAGE")
    parser.add_argument(
        "--property",
        action="append",
        metavar="KEY=VALUE",
        help="a property set on every message (repeatable)",
    )
    parser.add_argument(
        "--compression",
        choices=("none", "zstd", "lz4", "gzip"),
        default="none",
        help="compress each publish with a codec (zstd and lz4 need the compression extra);"
        " subscribers decompress whatever they receive",
    )


def _stdin_batches(stream):
    """Lines of `stream` (without their newline) in batches of bounded count and bytes."""
    batch, size = [], 0
    for line in stream:
        payload = line[:-1] if line.endswith(b"\n") else line
        batch.append(payload)
        size += len(payload)
        if len(batch) >= STDIN_BATCH_MESSAGES or size >= STDIN_BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def publish(args) -> int:
    """publish messages (the arguments, or else one per line of standard input)"""
    properties = _parse_properties(args.property)
    if args.messages:
        batches = [[os.fsencode(message) for message in args.messages]]
    else:
        batches = _stdin_batches(sys.stdin.buffer)
    first = last = None
    count = 0
    try:
        client = _client(args, compression=args.compression)
    except ImportError as e:  # (CompressionUnavailable: names the extra to install)
        raise CommandError(str(e)) from None
    with client:
        for batch in batches:
            seqs = client.publish_many(
                args.topic, batch, None if properties is None else [properties] * len(batch)
            )
            first = seqs[0] if first is None else first
            last = seqs[-1]
            count += len(seqs)
    if count == 0:
        print(f"nothing to publish to {args.topic}", file=sys.stderr)
    elif count == 1:
        print(f"published 1 message to {args.topic}: seq-id {first}")
    else:
        print(f"published {count} messages to {args.topic}: seq-ids {first}..{last}")
    return 0


# -- subscribe ----------------------------------------------------------------------------------


def add_subscribe(subparsers, client_options):
    parser = _client_command(subparsers, client_options, subscribe)
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("subscriber_id", metavar="SUBSCRIBER")
    parser.add_argument(
        "--from",
        dest="start",
        metavar="WHERE",
        help="earliest | latest | a seq-id | an ISO-8601 time (default: after the last message "
        "for a new subscription, where it left off for an existing one)",
    )
    parser.add_argument("--count", type=int, metavar="N", help="stop after N messages")
    parser.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="stop when no message came for this long"
    )
    parser.add_argument(
        "--show-seq", action="store_true", help="print 'SEQ<TAB>TIME<TAB>' before each payload"
    )


def subscribe(args) -> int:
    """print a subscription's messages (one per line) and acknowledge them"""
    from hedwig.client.start import parse_start

    if args.count is not None and args.count < 1:
        raise CommandError("--count must be at least 1")
    try:
        start = parse_start(args.start) if args.start is not None else None
    except ValueError as e:
        raise CommandError(str(e)) from None
    out = sys.stdout.buffer
    received = 0
    stop = _StopOnSignal()
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    with stop, _client(args) as client, client.subscribe(args.topic, args.subscriber_id, start=start) as sub:
        while (args.count is None or received < args.count) and not stop.requested:
            wait = STOP_CHECK_S if deadline is None else min(STOP_CHECK_S, deadline - time.monotonic())
            if wait < 0:
                break
            message = sub.receive(timeout=wait)
            if message is None:
                continue
            if args.show_seq:
                stamp = message.publish_time.isoformat(timespec="microseconds")
                out.write(f"{message.seq}\t{stamp}\t".encode())
            out.write(bytes(message.payload) + b"\n")
            out.flush()
            sub.ack(message)
            received += 1
            if args.timeout is not None:  # --timeout: how long to wait for the next message
                deadline = time.monotonic() + args.timeout
    return 130 if stop.requested else 0


# How often a waiting `subscribe` looks whether it was asked to stop.
STOP_CHECK_S = 0.2


class _StopOnSignal:
    """SIGTERM and Ctrl-C ask the command to stop: it leaves its loop between calls into
    the client, so acknowledgements are flushed on the way out and no request is cut in
    half (an exception raised from a signal handler can land inside a socket write). A
    second signal leaves at once."""

    def __init__(self):
        self.requested = False
        self._previous = {}

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self):
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        return False


# -- unsubscribe --------------------------------------------------------------------------------


def add_unsubscribe(subparsers, client_options):
    parser = _client_command(subparsers, client_options, unsubscribe)
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("subscriber_id", metavar="SUBSCRIBER")


def unsubscribe(args) -> int:
    """delete a durable subscription"""
    with _client(args) as client:
        client.unsubscribe(args.topic, args.subscriber_id)
    print(f"unsubscribed {args.subscriber_id} from {args.topic}")
    return 0


# -- admin reads --------------------------------------------------------------------------------


def add_topics(subparsers, client_options):
    parser = _client_command(subparsers, client_options, topics)
    parser.add_argument("--json", action="store_true", help="print the hub's JSON reply")


def topics(args) -> int:
    """list the hub's topics"""
    with _client(args) as client:
        names = client.topics()
    if args.json:
        print(json.dumps(names))
    else:
        for name in names:
            print(name)
    return 0


def add_describe(subparsers, client_options):
    parser = _client_command(subparsers, client_options, describe)
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("--json", action="store_true", help="print the hub's JSON reply")


def format_description(info: dict) -> list[str]:
    """A DESCRIBE_TOPIC reply as lines for people (docs/protocol.md lists its fields)."""
    lines = [
        f"topic:    {info.get('topic')}",
        f"owner:    {info.get('owner')}",
        f"seq-ids:  {info.get('first_seq')}..{info.get('last_seq')}",
    ]
    ledgers = info.get("ledgers") or []
    lines.append(f"ledgers:  {len(ledgers)}")
    for ledger in ledgers:
        lines.append(
            f"  ledger {ledger.get('ledger_id')}: seq-ids {ledger.get('first_seq')}..{ledger.get('last_seq')}"
            f", {ledger.get('bytes')} bytes"
        )
    subscribers = info.get("subscribers") or []
    lines.append(f"subscribers: {len(subscribers)}")
    for sub in subscribers:
        window = sub.get("window")
        lines.append(
            f"  {sub.get('subscriber_id')}: consumed {sub.get('consumed_seq')}, "
            f"delivered {sub.get('delivered_seq')}, backlog {sub.get('backlog')}, "
            f"window {window if window else 'unlimited'}, {sub.get('state')}"
        )
    relays = info.get("relays")
    if relays is not None:  # region relays (hedwig.region): one line per link of the topic
        lines.append(f"relays:   {len(relays)}")
        for relay in relays:
            arrow = "to" if relay.get("direction") == "out" else "from"
            lag = relay.get("lag")
            lines.append(
                f"  {arrow} region {relay.get('peer')}: consumed {relay.get('consumed_seq')}, "
                f"lag {'unknown' if lag is None else lag}, {relay.get('state')}"
            )
    shown = {"topic", "owner", "first_seq", "last_seq", "ledgers", "subscribers", "relays"}
    for key in sorted(set(info) - shown):
        lines.append(f"{key}: {json.dumps(info[key])}")
    return lines


def describe(args) -> int:
    """a topic's seq-ids, ledgers and subscribers (consumed seq-id, backlog)"""
    with _client(args) as client:
        info = client.describe(args.topic)
    if args.json:
        print(json.dumps(info, indent=2, sort_keys=True))
    else:
        print("\n".join(format_description(info)))
    return 0


def add_stats(subparsers, client_options):
    _client_command(subparsers, client_options, stats)


def stats(args) -> int:
    """the hub's counters (JSON)"""
    with _client(args) as client:
        counters = client.stats()
    print(json.dumps(counters, indent=2, sort_keys=True))
    return 0


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

SUBCOMMANDS = [add_hub, add_publish, add_subscribe, add_unsubscribe, add_topics, add_describe, add_stats,
               add_drain, add_user_command, add_top, add_bench]  # fmt: skip


# The client's TLS options: (option, environment variable, metavar, help).
TLS_OPTIONS = [
    ("--tls-ca", "HEDWIG_TLS_CA", "FILE", "the authorities that sign the hub's certificate (PEM)"),
    ("--tls-cert", "HEDWIG_TLS_CERT", "FILE", "a client certificate to present (PEM), for hubs that ask"),
    ("--tls-key", "HEDWIG_TLS_KEY", "FILE", "the client certificate's key (default: in --tls-cert's file)"),
    ("--tls-name", "HEDWIG_TLS_NAME", "NAME", "the name the hub's certificate carries (default: the host)"),
]


def build_parser() -> argparse.ArgumentParser:
    default_hub = os.environ.get("HEDWIG_HUB", DEFAULT_HUB)
    parser = argparse.ArgumentParser(prog="hedwig", description="hedwig publish/subscribe hub")
    parser.add_argument(
        "--hub",
        default=default_hub,
        metavar="HOST:PORT",
        help=f"the hub to talk to; a comma-separated list tries each (default {default_hub}, or $HEDWIG_HUB)",
    )
    parser.add_argument(
        "--tls",
        action="store_true",
        help="speak TLS to the hub (HOST:PORT names its [tls] port), trusting the system's certificate "
        "store; any --tls-* option implies it",
    )
    for option, variable, metavar, help_text in TLS_OPTIONS:
        parser.add_argument(
            option,
            default=os.environ.get(variable, ""),
            metavar=metavar,
            help=f"{help_text} (or ${variable})",
        )
    # Client subcommands accept --hub and the TLS options after their name too.
    client_options = argparse.ArgumentParser(add_help=False)
    client_options.add_argument(
        "--hub", default=argparse.SUPPRESS, metavar="HOST:PORT", help=argparse.SUPPRESS
    )
    for option, _variable, metavar, _help_text in TLS_OPTIONS:
        client_options.add_argument(
            option, default=argparse.SUPPRESS, metavar=metavar, help=argparse.SUPPRESS
        )
    client_options.add_argument(
        "--tls", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    add_user_option(parser, top_level=True)
    add_user_option(client_options, top_level=False)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(subparsers, client_options)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
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
