"""`hedwig bench publish|subscribe|round-trip [TOPIC]`: the subcommand's options, the
run, and its report: two or three lines for people, or one JSON object with --json.

hedwig/commands/main.py registers it (add_bench); the connection options (--hub, --tls*, --user)
are the CLI's own, given before `bench` or after the mode.
"""

import json
import sys

from hedwig.benchtool.measure import format_latency
from hedwig.benchtool.runs import RUNS, STAMP, BenchError, BenchSettings
from hedwig.client.config import DEFAULT_TIMEOUT, DEFAULT_WINDOW
from hedwig.commands.common import UsageError, client, positive_int

DEFAULT_TOPIC = "hedwig-bench"
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MESSAGES = {"publish": 100_000, "subscribe": 100_000, "round-trip": 1_000}
MODE_HELP = {
    "publish": "publish rate, and each publish request's latency",
    "subscribe": "delivery rate and publish-to-delivery latency of subscribers while one client publishes",
    "round-trip": "one message at a time: publish, wait for its delivery, the next",
}


def add_bench(subparsers, client_options):
    parser = subparsers.add_parser(
        "bench",
        parents=[client_options],
        help="measure a hub from here: publish or delivery rate and latency percentiles",
        description="Measure a hub as this client sees it (like `nats bench`). The messages stay in "
        "TOPIC; the subscriptions a run makes are removed at its end.",
    )
    modes = parser.add_subparsers(dest="mode", required=True, metavar="MODE")
    for mode, help_text in MODE_HELP.items():
        sub = modes.add_parser(mode, parents=[client_options], help=help_text, description=help_text)
        sub.add_argument("topic", nargs="?", default=DEFAULT_TOPIC, metavar="TOPIC",
                         help=f"the topic (default {DEFAULT_TOPIC}; publishing creates it)")  # fmt: skip
        sub.add_argument("--messages", type=positive_int, default=DEFAULT_MESSAGES[mode], metavar="N",
                         help=f"messages to publish (default {DEFAULT_MESSAGES[mode]:,})")  # fmt: skip
        sub.add_argument("--size", type=int, default=128, metavar="BYTES", help="payload bytes (default 128)")
        if mode != "round-trip":
            sub.add_argument("--batch", type=positive_int, default=100, metavar="N",
                             help="messages per publish request: one message set (default 100)")  # fmt: skip
            who = "publishers" if mode == "publish" else "subscribers"
            sub.add_argument("--clients", type=positive_int, default=1, metavar="N",
                             help=f"{who}, each on its own connection (default 1)")  # fmt: skip
        # --timeout and --json, unless the CLI gives every command its own (then those).
        shared = client_options._option_string_actions
        if "--timeout" not in shared:
            sub.add_argument(
                "--timeout",
                type=float,
                metavar="SECONDS",
                help=f"give up after this long without a message ({DEFAULT_TIMEOUT_S:g})",
            )
        if "--json" not in shared:
            sub.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=bench)


def connect_with(args):
    """A function making blocking clients on the command's connection options, as every
    client subcommand makes them (commands.common.client); --timeout is the run's own
    (how long without a message), so the replies' timeout and the window stay the
    client's defaults, which the measurements assume."""
    return lambda: client(args, timeout=DEFAULT_TIMEOUT, window=DEFAULT_WINDOW).connect()


def settings_from(args) -> BenchSettings:
    """The run's settings; UsageError (which hedwig.commands.main says as one line, exit status 2,
    as for every subcommand) for options that cannot work."""
    least = STAMP.size if args.mode != "publish" else 0
    if args.size < least:
        raise UsageError(f"--size {args.size}: {args.mode} needs at least {least} bytes (a timestamp)")
    timeout = getattr(args, "timeout", None)
    timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
    if not timeout > 0:
        raise UsageError(f"--timeout {timeout:g}: expected more than 0 seconds")
    return BenchSettings(
        topic=args.topic,
        messages=args.messages,
        size=args.size,
        batch=getattr(args, "batch", 1),
        clients=getattr(args, "clients", 1),
        timeout=timeout,
    )


def bench(args) -> int:
    """measure a hub from here: publish or delivery rate and latency percentiles"""
    settings = settings_from(args)
    try:
        result = RUNS[args.mode](connect_with(args), settings)
    except BenchError as e:
        print(f"hedwig bench {args.mode}: {e}", file=sys.stderr)
        return 1
    report = {
        "mode": args.mode,
        "hub": args.hub,
        "topic": settings.topic,
        "size": settings.size,
        "batch": settings.batch,
        "clients": settings.clients,
        **result,
    }
    if getattr(args, "json", False):
        print(json.dumps(report, sort_keys=True))
    else:
        print("\n".join(format_report(report)))
    return 0


def format_report(report: dict) -> list:
    mode = report["mode"]
    head = f"hedwig bench {mode} {report['topic']} at {report['hub']}: {report['size']}-byte payloads"
    if mode != "round-trip":
        who = "publisher" if mode == "publish" else "subscriber"
        plural = "s" if report["clients"] > 1 else ""
        head += f", {report['batch']} per publish, {report['clients']} {who}{plural}"
    lines = [
        head,
        f"  {report['messages']:,} messages in {report['seconds']:.3f} s: "
        f"{report['messages_per_s']:,.0f} msg/s, {report['mb_per_s']:.2f} MB/s",
    ]
    if mode == "publish":
        lines.append(f"  publish request latency: {format_latency(report['publish_latency_ms'])}")
    elif mode == "subscribe":
        lines.append(f"  {report['deliveries']:,} deliveries: {report['deliveries_per_s']:,.0f} msg/s")
        lines.append(f"  publish-to-delivery latency: {format_latency(report['delivery_latency_ms'])}")
    else:
        lines.append(f"  round-trip latency: {format_latency(report['round_trip_latency_ms'])}")
    return lines
