"""`hedwig subscribe` (a durable subscription: prints and acknowledges) and `hedwig read`
(reads a topic without any subscription, like `tail`: nothing is left behind)."""

import sys
import time

from hedwig.client.errors import (
    InvalidMessageFilter,
    NoSuchTopic,
    ResubscribeRequired,
    SeqOutOfRange,
    WrongSubscriptionKind,
)
from hedwig.client.start import parse_start
from hedwig.commands.common import (
    CommandError,
    StopOnSignal,
    add_topic_argument,
    client,
    client_command,
    positive_int,
    positive_seconds,
    subscription_command,
)
from hedwig.commands.output import MessageFormat
from hedwig.commands.printing import Printer
from hedwig.commands.reading import topic_reader

# How often a waiting command looks whether it was asked to stop or its reader went away.
STOP_CHECK_S = 0.2


def _add_format_options(parser) -> None:
    parser.add_argument(
        "--show-seq", action="store_true", help="print 'SEQ<TAB>TIME<TAB>' before each payload"
    )
    parser.add_argument(
        "--key",
        dest="show_key",
        action="store_true",
        help="print 'KEY<TAB>' (the message's key; empty for none) before each payload",
    )
    parser.add_argument(
        "--properties",
        action="store_true",
        help="print 'NAME=VALUE,...<TAB>' (the properties) before each payload",
    )
    parser.add_argument("--count", type=positive_int, metavar="N", help="stop after N messages")


def _start(text):
    try:
        return parse_start(text) if text is not None else None
    except ValueError as e:
        raise CommandError(str(e)) from None


# -- subscribe ----------------------------------------------------------------------------------


def add_subscribe(subparsers, client_options):
    parser = subscription_command(subparsers, client_options, subscribe)
    parser.add_argument(
        "--from",
        dest="start",
        metavar="WHERE",
        help="earliest | latest | a seq-id | an ISO-8601 time (default: after the last message "
        "for a new subscription, where it left off for an existing one)",
    )
    _add_format_options(parser)
    parser.add_argument(
        "--idle", type=positive_seconds, metavar="SECONDS", help="stop when no message came for this long"
    )
    parser.add_argument(
        "--create", action="store_true", help="subscribe even if the topic does not exist yet (creating it)"
    )
    parser.add_argument(
        "--window",
        type=int,
        metavar="N",
        help="messages delivered ahead of acknowledgements (default: the hub's)",
    )
    work = parser.add_argument_group("work queues (shared subscriptions)")
    work.add_argument(
        "--shared",
        action="store_true",
        help="join SUBSCRIBER as one member of a shared subscription: each message goes to one"
        " member and is acknowledged by itself (run several to share the work)",
    )
    work.add_argument(
        "--key-shared",
        action="store_true",
        help="as --shared, and every message of a key goes to one member, in publish order"
        " (a key_shared subscription: messages without a key go to any member)",
    )
    work.add_argument(
        "--ack-timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help="a message not acknowledged this long goes to a member again (default: the hub's, 30)",
    )
    work.add_argument(
        "--max-deliveries",
        type=positive_int,
        metavar="N",
        help="after N deliveries a message goes to the dead-letter topic instead",
    )
    work.add_argument(
        "--dead-letter-topic", metavar="TOPIC", help="where dead letters go (default: TOPIC.dlq)"
    )
    parser.add_argument(
        "--message-bound",
        type=positive_int,
        metavar="N",
        help="keep at most N unconsumed messages for the subscription; older ones are skipped",
    )
    parser.add_argument(
        "--filter",
        metavar="SELECTOR",
        help="deliver only the messages this selector is true of (JMS message selectors over the"
        " properties and `key`, e.g. \"color = 'red' AND n > 100\"); kept with the subscription",
    )
    parser.add_argument(
        "--replace-filter",
        action="store_true",
        help="give an existing subscription this --filter in place of the one it has (without --filter:"
        " remove its filter; a subscribe without either keeps the filter it has)",
    )
    return parser


def _subscribe_options(args) -> dict:
    """The work-queue options and message bound the command line gives (only those given)."""
    if args.shared and args.key_shared:
        raise CommandError("--shared and --key-shared: choose one")
    work_options = args.ack_timeout or args.max_deliveries or args.dead_letter_topic
    if not (args.shared or args.key_shared) and work_options:
        raise CommandError(
            "--ack-timeout, --max-deliveries and --dead-letter-topic need --shared or --key-shared"
        )
    options = {
        "ack_timeout": args.ack_timeout,
        "max_deliveries": args.max_deliveries,
        "dead_letter_topic": args.dead_letter_topic,
        "message_bound": args.message_bound,
        "filter": args.filter,
    }
    options = {key: value for key, value in options.items() if value is not None}
    if args.replace_filter:
        options["replace_filter"] = True
    return options


def _kind(args) -> str:
    if args.key_shared:
        return "key_shared"
    return "shared" if args.shared else "exclusive"


def subscribe(args) -> int:
    """print a durable subscription's messages, one per line, acknowledging each once its
    line is printed (the subscription resumes after it); every partition's of a partitioned
    topic (in order within each partition); the topic must exist unless --create;
    --shared joins a shared subscription as one of its members, --key-shared a key_shared one"""
    start = _start(args.start)
    options = _subscribe_options(args)
    if args.window is not None and args.window < 0:
        raise CommandError(f"--window {args.window}: expected 0 (unlimited) or more")
    printer = Printer()
    fmt = MessageFormat(args)
    stop = StopOnSignal()
    with stop, client(args) as hub:
        if not args.create:
            try:
                hub.describe(args.topic)
            except NoSuchTopic:
                raise CommandError(
                    f"topic {args.topic} does not exist (publishing creates it; --create subscribes anyway)"
                ) from None
        try:
            sub = hub.subscribe(
                args.topic,
                args.subscriber_id,
                start=start,
                window=args.window,
                kind=_kind(args),
                **options,
            )
        except (ValueError, WrongSubscriptionKind) as e:
            raise CommandError(f"{args.subscriber_id} on {args.topic}: {e}") from None
        except InvalidMessageFilter as e:
            raise CommandError(f"--filter: {e.message}") from None
        except ResubscribeRequired as e:
            raise CommandError(f"{e.message} (--replace-filter)") from None
        except SeqOutOfRange as e:
            raise CommandError(f"--from {args.start}: {e}") from None
        if sub.warning:  # (the filter is kept: it may select nothing, consuming past everything)
            print(f"hedwig subscribe: warning: --filter: {sub.warning}", file=sys.stderr, flush=True)
        with sub:
            _print_and_acknowledge(sub, args, printer, fmt, stop)
    return 130 if stop.requested else 0


def _print_and_acknowledge(sub, args, printer, fmt, stop) -> int:
    """Print what the subscription delivers, a delivery's messages at a time, and
    acknowledge what was printed (Printer: once the reader took it), until --count,
    --idle, a signal or the reader going away; how many were printed."""
    received = 0
    shared = args.shared or args.key_shared
    deadline = None if args.idle is None else time.monotonic() + args.idle
    while (args.count is None or received < args.count) and not stop.requested:
        wait = STOP_CHECK_S if deadline is None else min(STOP_CHECK_S, deadline - time.monotonic())
        if wait < 0:
            break
        left = None if args.count is None else args.count - received
        messages = sub.receive_batch(timeout=wait, max_messages=left)
        if not messages:
            if printer.reader_gone():
                break
            continue
        printed = printer.print_lines([fmt.line(message) for message in messages], lambda: stop.requested)
        if printed:  # (what was not printed is not acknowledged)
            if shared:  # each message by itself
                for message in messages[:printed]:
                    sub.ack(message)
            else:  # cumulative: the last printed of each partition covers those before it
                for message in {message.topic: message for message in messages[:printed]}.values():
                    sub.ack(message)
            received += printed
        if printed < len(messages):
            break
        if args.idle is not None:
            deadline = time.monotonic() + args.idle
    return received
    return 130 if stop.requested else 0


# -- read ---------------------------------------------------------------------------------------


def add_read(subparsers, client_options):
    parser = client_command(subparsers, client_options, read)
    add_topic_argument(parser)
    parser.add_argument(
        "--from",
        dest="start",
        default="earliest",
        metavar="WHERE",
        help="earliest (the default) | latest | a seq-id | an ISO-8601 time",
    )
    _add_format_options(parser)
    parser.add_argument(
        "--follow", "-f", action="store_true", help="at the end, wait for new messages (like tail -f)"
    )
    return parser


def read(args) -> int:
    """print a topic's messages without any subscription (nothing is acknowledged or left
    behind), every partition's of a partitioned topic; --follow waits for new ones"""
    start = _start(args.start)
    printer = Printer(wait_for_reader=False)  # (nothing to acknowledge: written is printed)
    fmt = MessageFormat(args)
    printed = 0
    stop = StopOnSignal()
    with stop, client(args) as hub:
        try:
            reader = topic_reader(hub, args.topic, start)
        except SeqOutOfRange as e:
            raise CommandError(f"--from {args.start}: {e}") from None
        while not stop.requested and (args.count is None or printed < args.count):
            messages = reader.next_messages()
            if not messages:
                if not args.follow:
                    break
                if printer.reader_gone():
                    break
                reader.wait(STOP_CHECK_S)
                continue
            if args.count is not None:
                messages = messages[: args.count - printed]
            shown = printer.print_lines([fmt.line(message) for message in messages], lambda: stop.requested)
            printed += shown
            if shown < len(messages):
                break
    return 130 if stop.requested else 0
