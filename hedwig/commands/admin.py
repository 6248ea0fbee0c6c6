"""The administration subcommands: topics, describe, stats, subscriptions (reads, each
with --json), and create, delete, reset, unsubscribe."""

import argparse
import json

from hedwig.client.errors import TopicBusy
from hedwig.client.start import parse_start
from hedwig.commands.common import (
    CommandError,
    add_topic_argument,
    client,
    client_command,
    duration_seconds,
    subscription_command,
)
from hedwig.commands.numbers import duration
from hedwig.commands.output import print_reply, table
from hedwig.commands.statistics import HUB_COLUMNS
from hedwig.protocol.admin_requests import topic_ttl_ms
from hedwig.protocol.partitions import MAX_PARTITIONS

# -- topics ---------------------------------------------------------------------------------------


def add_topics(subparsers, client_options):
    return client_command(subparsers, client_options, topics)


def topics(args) -> int:
    """list the topics, each with the hub that owns it ("-": none does now)"""
    with client(args) as hub:
        owners = hub.owners()
    rows = [{"topic": name, "owner": owners[name]} for name in sorted(owners)]
    if args.json:
        print(json.dumps(rows))
        return 0
    print("\n".join(table(rows, [("topic", "topic"), ("owner", "owner")]) if rows else ["no topics"]))
    return 0


# -- hubs -----------------------------------------------------------------------------------------


def add_hubs(subparsers, client_options):
    return client_command(subparsers, client_options, hubs)


def hubs(args) -> int:
    """list the region's live hubs with their load (topics owned, messages/s)"""
    with client(args) as hub:
        rows = hub.hubs()
    return print_reply(args, rows, lambda rows: table(rows, [*HUB_COLUMNS, ("region", "region")]))


# -- create, delete -------------------------------------------------------------------------------


def add_create(subparsers, client_options):
    parser = client_command(subparsers, client_options, create)
    add_topic_argument(parser)
    parser.add_argument(
        "--compact",
        action="store_true",
        help="a compacted topic: keyed messages only, the latest message of each key kept",
    )
    parser.add_argument(
        "--partitions",
        type=partition_count,
        default=0,
        metavar="N",
        help="a topic of N partitions (Kafka's): partition K > 0 is the topic TOPIC.p-K, a keyed"
        " message goes to its key's partition as Kafka's default partitioner puts it",
    )
    parser.add_argument(
        "--ttl",
        type=topic_ttl,
        metavar="DURATION",
        help="the topic's default TTL (30s, 5m, 1d): a message published without a ttl of its"
        " own and not delivered within DURATION of its publish is not delivered (counted, and"
        " dead-lettered by a subscription that names a dead-letter topic)",
    )
    return parser


def topic_ttl(text: str) -> float:
    seconds = duration_seconds(text)
    try:
        topic_ttl_ms(seconds)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return seconds


def partition_count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_PARTITIONS:
        raise argparse.ArgumentTypeError(f"a topic has 1 to {MAX_PARTITIONS} partitions, not {text}")
    return count


def create(args) -> int:
    """create a topic (publishing to one creates it too); one that exists is left as it is"""
    with client(args) as hub:
        reply = hub.create_topic(
            args.topic, compaction=args.compact, partitions=args.partitions, ttl=args.ttl
        )
    kind = "compacted topic" if reply.get("compaction") else "topic"
    partitions = reply.get("partitions", 1)
    of = f" ({partitions} partitions)" if partitions > 1 else ""
    if reply.get("ttl_ms"):
        of += f" (messages expire {duration(reply['ttl_ms'] / 1000)} after their publish)"
    if args.json:
        print(json.dumps(reply, sort_keys=True))
    elif reply["created"]:
        print(f"created {kind} {args.topic}{of}")
    else:
        print(f"{kind} {args.topic} exists already{of}")
    return 0


def add_compact(subparsers, client_options):
    parser = client_command(subparsers, client_options, compact)
    add_topic_argument(parser)
    return parser


def compact(args) -> int:
    """compact a compacted topic now: everything published before it (its open ledger is
    closed first) keeps the latest message of each key"""
    with client(args) as hub:
        reply = hub.compact(args.topic)
    if args.json:
        print(json.dumps(reply, sort_keys=True))
    elif reply["span"] is None:
        print(f"topic {args.topic}: nothing to compact: {reply['why']}")
    else:
        first, last = reply["span"]
        passes = f", in {reply['passes']} passes" if reply["passes"] > 1 else ""
        print(
            f"topic {args.topic}: compacted seq-ids {first}..{last}: {reply['kept']} of {reply['messages']}"
            f" messages kept, in {reply['entries']} {'entry' if reply['entries'] == 1 else 'entries'} of"
            f" ledger {reply['ledger']} (replacing"
            f" ledgers {', '.join(map(str, reply['ledgers']))}){passes}"
        )
    return 0


def add_delete(subparsers, client_options):
    parser = client_command(subparsers, client_options, delete)
    add_topic_argument(parser)
    parser.add_argument("--force", action="store_true", help="delete the topic's subscriptions too")
    return parser


def delete(args) -> int:
    """delete a topic with its messages and ledgers (refused while it has subscriptions,
    unless --force deletes them too); publishing to it again starts it afresh at seq-id 1"""
    with client(args) as hub:
        try:
            reply = hub.delete_topic(args.topic, force=args.force)
        except TopicBusy as e:
            held, _, _ = e.message.partition(": unsubscribe")
            why = f"{held}: unsubscribe them, or add --force to delete them too"
            raise CommandError(f"TOPIC_BUSY: {why}") from None
    if args.json:
        print(json.dumps(reply, sort_keys=True))
        return 0
    ledgers = len(reply["ledgers"])
    line = f"deleted topic {args.topic} ({ledgers} ledger{'s' if ledgers != 1 else ''} freed"
    if reply["subscriptions"]:
        line += f"; subscriptions deleted: {', '.join(reply['subscriptions'])}"
    print(line + ")")
    return 0


# -- subscriptions, reset, unsubscribe -------------------------------------------------------------


def add_subscriptions(subparsers, client_options):
    parser = client_command(subparsers, client_options, subscriptions)
    parser.add_argument(
        "topic", nargs="?", metavar="TOPIC", help="only this topic's (default: every topic's)"
    )
    return parser


def subscriptions(args) -> int:
    """list durable subscriptions: kind, consumed seq-id, lag (messages not consumed), state,
    members attached, pending (delivered, not acknowledged) and redeliveries"""
    with client(args) as hub:
        rows = hub.subscriptions(args.topic)
    return print_reply(args, rows, lambda rows: format_subscriptions(rows, args.topic))


# A SUBSCRIPTIONS reply's columns for people: (key, heading[, render]). A region's own
# relay subscriptions (`__region__<name>`) say so in KIND.
SUBSCRIPTION_COLUMNS = [
    ("topic", "topic"),
    ("subscriber_id", "subscriber"),
    ("consumed_seq", "consumed"),
    ("last_seq", "last"),
    ("lag", "lag"),
    ("kind", "kind", lambda kind, row: f"relay to {row['relay_to']}" if row.get("relay_to") else kind),
    ("state", "state"),
    ("members", "members"),
    ("pending", "pending"),
    ("redeliveries", "redeliveries"),
]
# Shown when any subscription of the reply has a filter (its selector).
FILTER_COLUMN = ("filter", "filter", lambda text, _row: text or "-")
OWNER_COLUMN = ("owner", "owner", lambda owner, _row: owner or "- (none now)")
USER_COLUMN = ("user", "user", lambda user, _row: user or "-")


def format_subscriptions(rows, topic) -> list[str]:
    """A SUBSCRIPTIONS reply as a table for people (the users' subscriptions, then the
    hubs' relays), or one line saying there are none (to `topic`, when the command named
    one). The FILTER column is there when any has a filter; the OWNER column when the
    rows come from more than one hub (a region of several); the USER column (who made
    each) when [auth] is on."""
    if not rows:
        return ["no subscriptions" + (f" to {topic}" if topic else "")]
    rows = sorted(rows, key=lambda row: (row.get("relay_to") is not None, row["topic"], row["subscriber_id"]))
    columns = SUBSCRIPTION_COLUMNS
    if any(row.get("filter") for row in rows):
        columns = [*columns, FILTER_COLUMN]
    if len({row.get("owner") for row in rows}) > 1 or any(row.get("owner") is None for row in rows):
        columns = [*columns, OWNER_COLUMN]
    if any(row.get("user") for row in rows):
        columns = [*columns[:2], USER_COLUMN, *columns[2:]]
    # Why a state is "unknown" (the topic's owner did not answer), once per cause, below.
    errors = sorted({row["error"] for row in rows if row.get("error")})
    return table(rows, columns) + (["", *errors] if errors else [])


def add_reset(subparsers, client_options):
    parser = subscription_command(subparsers, client_options, reset)
    parser.add_argument(
        "--to",
        required=True,
        metavar="WHERE",
        help="earliest | latest | a seq-id (the next message delivered) | an ISO-8601 time",
    )
    return parser


def reset(args) -> int:
    """move a subscription (not attached) so that it next gets the message --to names"""
    try:
        start = parse_start(args.to)
    except ValueError as e:
        raise CommandError(str(e).replace("--from", "--to")) from None
    with client(args) as hub:
        reply = hub.reset_subscription(args.topic, args.subscriber_id, start)
    if args.json:
        print(json.dumps(reply, sort_keys=True))
    else:
        print(
            f"{args.subscriber_id} on {args.topic}: consumed seq-id {reply['previous_seq']} -> "
            f"{reply['consumed_seq']}; it next gets seq-id {reply['next_seq']}"
        )
    return 0


def add_unsubscribe(subparsers, client_options):
    return subscription_command(subparsers, client_options, unsubscribe)


def unsubscribe(args) -> int:
    """delete a durable subscription"""
    with client(args) as hub:
        hub.unsubscribe(args.topic, args.subscriber_id)
    if args.json:
        print(json.dumps({"topic": args.topic, "subscriber_id": args.subscriber_id, "unsubscribed": True}))
    else:
        print(f"unsubscribed {args.subscriber_id} from {args.topic}")
    return 0
