"""What every client subcommand shares: its errors, the connection options (accepted
before the subcommand and after it, shown in every subcommand's help), and the client
they ask for."""

import argparse
import datetime
import os
import signal

from hedwig.auth.client_options import add_user_option, credentials_from
from hedwig.client.config import DEFAULT_HUB, DEFAULT_TIMEOUT


class CommandError(Exception):
    """A failure to report as one line, without a traceback."""


class UsageError(CommandError):
    """A command line that cannot work (a TLS file that cannot be used): exit status 2."""


# The client's TLS options: (option, environment variable, metavar, help).
TLS_OPTIONS = [
    ("--tls-ca", "HEDWIG_TLS_CA", "FILE", "the authorities that sign the hub's certificate (PEM)"),
    ("--tls-cert", "HEDWIG_TLS_CERT", "FILE", "a client certificate to present (PEM), for hubs that ask"),
    ("--tls-key", "HEDWIG_TLS_KEY", "FILE", "the client certificate's key (default: in --tls-cert's file)"),
    ("--tls-name", "HEDWIG_TLS_NAME", "NAME", "the name the hub's certificate carries (default: the host)"),
]


def positive_seconds(text: str) -> float:
    """An argparse type: a number of seconds above 0 (a timeout of 0 or less means nothing)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, not {text!r}")
    return value


_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def duration_seconds(text: str) -> float:
    """An argparse type: a duration of 0 or more, a number with a unit (500ms, 30s, 5m,
    2h, 1d) or without one (seconds), as seconds."""
    number, unit = text.strip(), "s"
    for name in sorted(_DURATION_UNITS, key=len, reverse=True):
        if number.endswith(name):
            number, unit = number[: -len(name)], name
            break
    try:
        value = float(number) * _DURATION_UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a duration such as 30s, 5m or 250ms: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a duration of 0 or more, not {text!r}")
    return value


def moment_seconds(text: str) -> float:
    """An argparse type: a time, ISO 8601 (UTC unless it names its offset) or seconds
    since the epoch, as seconds since the epoch."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a time such as 2026-11-29T10:00:00Z or seconds since the epoch, not {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, not {value}")
    return value


def add_connection_options(parser, top_level: bool) -> None:
    """--hub, --timeout, --json and the TLS options. The top-level parser holds their
    defaults; each subcommand's parser takes them too (default SUPPRESS, so that one given
    before the subcommand is not overwritten) and shows them in its help."""
    default_hub = os.environ.get("HEDWIG_HUB", DEFAULT_HUB)

    def default(value):
        return value if top_level else argparse.SUPPRESS

    group = parser.add_argument_group("connection options (before or after the subcommand)")
    group.add_argument(
        "--hub",
        default=default(default_hub),
        metavar="HOST:PORT",
        help=f"the hub to talk to; a comma-separated list tries each (default {default_hub}, or $HEDWIG_HUB)",
    )
    group.add_argument(
        "--timeout",
        type=positive_seconds,
        default=default(DEFAULT_TIMEOUT),
        metavar="SECONDS",
        help=f"how long to wait for each reply of the hub (default {DEFAULT_TIMEOUT:g})",
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="print JSON: one object per line for messages, one document for the other replies",
    )
    group.add_argument(
        "--tls",
        action="store_true",
        default=default(False),
        help="speak TLS to the hub (HOST:PORT names its [tls] port), trusting the system's certificate "
        "store; any --tls-* option implies it",
    )
    for option, variable, metavar, help_text in TLS_OPTIONS:
        group.add_argument(
            option,
            default=default(os.environ.get(variable, "")),
            metavar=metavar,
            help=f"{help_text} (or ${variable})",
        )
    add_user_option(group, top_level)  # --user (hedwig.auth.client_options)


def client_command(subparsers, client_options, run, **kwargs):
    """The parser of the client subcommand that calls `run(args)`: named after `run`
    (underscores as dashes) and helped by its docstring, so each subcommand's name and
    help are written once. It takes the connection options too (client_options)."""
    name = run.__name__.rstrip("_").replace("_", "-")
    parser = subparsers.add_parser(
        name, parents=[client_options], help=run.__doc__, description=run.__doc__, **kwargs
    )
    parser.set_defaults(run=run)
    return parser


TOPIC_HELP = "the topic's name (1-255 characters of A-Z a-z 0-9 . _ -)"
SUBSCRIBER_HELP = (
    "the durable subscription's name, as a consumer group's: a later run with the same name resumes"
    " after what this one acknowledged (with --shared, every worker gives the same name)"
)


def add_topic_argument(parser, help_text: str = TOPIC_HELP) -> None:
    """The TOPIC positional of a subcommand about one topic."""
    parser.add_argument("topic", metavar="TOPIC", help=help_text)


def subscription_command(subparsers, client_options, run):
    """The parser of a client subcommand about one durable subscription (as
    client_command): it names it as TOPIC SUBSCRIBER, the same for every such command."""
    parser = client_command(subparsers, client_options, run)
    add_topic_argument(parser)
    parser.add_argument("subscriber_id", metavar="SUBSCRIBER", help=SUBSCRIBER_HELP)
    return parser


def client_tls(args):
    """The ClientTls the --tls options (or their HEDWIG_TLS_* variables) ask for; None for
    plain TCP. Any of them means TLS. Its files are read now, so that one that cannot be
    used is a usage error naming it, before anything is sent."""
    from hedwig.config.tls import ClientTls, TlsError, tls_available

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


def client(args, **kwargs):
    """A blocking Client of the hub the options name. Subscriptions take the hub's
    default window unless asked otherwise (window=None: conf/hub.conf says what it is),
    and wait --timeout for each reply unless given a timeout of their own."""
    from hedwig.client import Client

    kwargs.setdefault("window", None)
    kwargs.setdefault("timeout", args.timeout)
    return Client(
        args.hub,
        client_name=f"hedwig {args.command}",
        tls=client_tls(args),
        credentials=credentials_from(args),
        **kwargs,
    )


class StopOnSignal:
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
