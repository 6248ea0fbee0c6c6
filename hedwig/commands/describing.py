"""`hedwig describe` and `hedwig stats`: the hub's JSON replies, or lines for people."""

import json

from hedwig.commands.common import add_topic_argument, client, client_command
from hedwig.commands.numbers import count, duration, size
from hedwig.commands.output import print_reply, readable
from hedwig.commands.statistics import format_stats


def add_describe(subparsers, client_options):
    parser = client_command(subparsers, client_options, describe)
    add_topic_argument(parser)
    return parser


def _seq_range(first, last) -> str:
    """A topic's or ledger's retained seq-ids as people read them."""
    if first is None or last is None:
        return "unknown"
    if last < first:  # nothing retained: empty, or every message consumed and collected
        return (
            "none yet (the next is 1)"
            if last == 0
            else f"none retained (last was {last}, the next is {last + 1})"
        )
    return f"{first}..{last}"


def _ledger_range(first, last) -> str:
    if first is None or last is None:
        return "seq-ids unknown"
    return "empty" if last < first else f"seq-ids {first}..{last}"


def _consumed(seq) -> str:
    return "nothing yet" if not seq else str(seq)


def format_description(info: dict) -> list[str]:
    """A DESCRIBE_TOPIC reply as lines for people (docs/protocol.md lists its fields)."""
    lines = [
        f"topic:    {info.get('topic')}",
        f"owner:    {info.get('owner')}",
        f"seq-ids:  {_seq_range(info.get('first_seq'), info.get('last_seq'))}",
    ]
    if info.get("compaction"):
        lines.append("compacted: the latest message of each key is kept")
    if info.get("ttl_ms"):
        lines.append(
            f"ttl:      {duration(info['ttl_ms'] / 1000)} (a message published without a ttl of its own"
            " and not delivered within it is not delivered)"
        )
    partitions = info.get("partitions") or 1
    if partitions > 1:
        topic = info.get("topic")
        lines.append(
            f"partitions: {partitions} ({topic} is partition 0, {topic}.p-1 .. {topic}.p-{partitions - 1}"
            " the others; what this describes is partition 0)"
        )
    ledgers = info.get("ledgers") or []
    lines.append(f"ledgers:  {len(ledgers)}")
    for ledger in ledgers:
        held = _ledger_range(ledger.get("first_seq"), ledger.get("last_seq"))
        lines.append(f"  ledger {ledger.get('ledger_id')}: {held}, {size(ledger.get('bytes'))}")
        if ledger.get("location"):
            lines.append(f"    in {ledger['location']}")
    subscribers = info.get("subscribers") or []
    lines.append(f"subscribers: {len(subscribers)}")
    for sub in subscribers:
        window = sub.get("window")
        lines.append(
            f"  {sub.get('subscriber_id')}: consumed {_consumed(sub.get('consumed_seq'))}, "
            f"delivered {_consumed(sub.get('delivered_seq'))}, backlog {count(sub.get('backlog'))}, "
            f"window {count(window) if window else 'unlimited'}, {sub.get('state')}"
        )
        lines.extend(_work_queue_lines(sub))
    relays = info.get("relays")
    if relays:  # region relays (hedwig.region): one line per link of the topic
        lines.append(f"relays:   {len(relays)}")
        for relay in relays:
            lines.append(_relay_line(relay, info.get("topic")))
    shown = {
        "topic",
        "owner",
        "first_seq",
        "last_seq",
        "ledgers",
        "subscribers",
        "relays",
        "compaction",
        "ttl_ms",
    }
    for key in sorted(set(info) - shown):
        value = info[key]
        lines.append(f"{readable(key)}: {value if isinstance(value, str | int) else json.dumps(value)}")
    return lines


def _relay_line(relay: dict, topic) -> str:
    """One relay link of the topic. A link from a child region has its pointer at the
    child: here, what arrived of the child's messages, and where to ask for the rest."""
    arrow = "to" if relay.get("direction") == "out" else "from"
    head = f"  {arrow} region {relay.get('peer')}: "
    if "received_origin_seq" in relay:
        received = relay.get("received_origin_seq")
        got = "nothing received yet" if not received else f"received up to its seq-id {received}"
        hubs = relay.get("peer_hubs") or []
        asked = f"hedwig --hub {hubs[0]} describe {topic}" if hubs else f"`hedwig describe {topic}` there"
        where = f" (its pointer and lag: {asked})"
        return f"{head}{got}{where}, {relay.get('state')}"
    lag = relay.get("lag")
    return (
        f"{head}consumed {_consumed(relay.get('consumed_seq'))}, "
        f"lag {'unknown' if lag is None else count(lag)}, {relay.get('state')}"
    )


def _work_queue_lines(sub: dict) -> list[str]:
    """A shared or pull subscription's members, pending and redeliveries (and its dead
    letters and settings, and the delayed messages it holds), what a message bound
    skipped, and its filter, as an indented line each."""
    lines = []
    if sub.get("kind") in ("shared", "key_shared") or sub.get("delivery") == "pull":
        lines.append(
            f"    {sub.get('kind')} {sub.get('delivery')}: {sub.get('members')} member(s), "
            f"pending {sub.get('pending')}, queued {sub.get('queued')}, "
            f"acknowledged above consumed {sub.get('acked_above')}, redeliveries {sub.get('redeliveries')}"
        )
        dead = sub.get("dead_letter_topic")
        letters = "no dead-letter topic"
        if dead:
            letters = f"to {dead} after {sub.get('max_deliveries')} deliveries: {sub.get('dead_lettered')}"
        lines.append(f"    ack timeout {sub.get('ack_timeout_ms') / 1000:g} s, dead letters {letters}")
        if sub.get("delayed"):
            lines.append(f"    delayed {sub.get('delayed')}: held until their time")
    if sub.get("message_bound"):
        lines.append(f"    message bound {sub.get('message_bound')}: {sub.get('skipped_by_bound')} skipped")
    if sub.get("filter"):
        lines.append(f"    filter: {sub.get('filter')}")
    return lines


def describe(args) -> int:
    """a topic's seq-ids, ledgers and subscribers (consumed seq-id, backlog)"""
    with client(args) as hub:
        info = hub.describe(args.topic)
    return print_reply(args, info, format_description)


def add_stats(subparsers, client_options):
    return client_command(subparsers, client_options, stats)


def stats(args) -> int:
    """the hub's counters: messages, operations, connections, cache, delivery; in a region of
    several hubs, its hubs and the topics that moved between them"""
    with client(args) as hub:
        counters = hub.stats()
        hubs = hub.hubs() if "zookeeper" in counters and not args.json else None
    return print_reply(args, counters, lambda counters: format_stats(counters, hubs))
