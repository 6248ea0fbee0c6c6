"""`hedwig describe` and `hedwig stats`: the hub's JSON replies, or lines for people."""

import json

from hedwig.commands.common import client, client_command
from hedwig.commands.output import print_reply, readable


def add_describe(subparsers, client_options):
    parser = client_command(subparsers, client_options, describe)
    parser.add_argument("topic", metavar="TOPIC")
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
    ledgers = info.get("ledgers") or []
    lines.append(f"ledgers:  {len(ledgers)}")
    for ledger in ledgers:
        held = _ledger_range(ledger.get("first_seq"), ledger.get("last_seq"))
        lines.append(f"  ledger {ledger.get('ledger_id')}: {held}, {ledger.get('bytes')} bytes")
        if ledger.get("location"):
            lines.append(f"    in {ledger['location']}")
    subscribers = info.get("subscribers") or []
    lines.append(f"subscribers: {len(subscribers)}")
    for sub in subscribers:
        window = sub.get("window")
        lines.append(
            f"  {sub.get('subscriber_id')}: consumed {_consumed(sub.get('consumed_seq'))}, "
            f"delivered {_consumed(sub.get('delivered_seq'))}, backlog {sub.get('backlog')}, "
            f"window {window if window else 'unlimited'}, {sub.get('state')}"
        )
        lines.extend(_work_queue_lines(sub))
    relays = info.get("relays")
    if relays:  # region relays (hedwig.region): one line per link of the topic
        lines.append(f"relays:   {len(relays)}")
        for relay in relays:
            arrow = "to" if relay.get("direction") == "out" else "from"
            lag = relay.get("lag")
            lines.append(
                f"  {arrow} region {relay.get('peer')}: consumed {_consumed(relay.get('consumed_seq'))}, "
                f"lag {'unknown' if lag is None else lag}, {relay.get('state')}"
            )
    shown = {"topic", "owner", "first_seq", "last_seq", "ledgers", "subscribers", "relays"}
    for key in sorted(set(info) - shown):
        value = info[key]
        lines.append(f"{readable(key)}: {value if isinstance(value, str | int) else json.dumps(value)}")
    return lines


def _work_queue_lines(sub: dict) -> list[str]:
    """A shared or pull subscription's members, pending and redeliveries (and its dead
    letters and settings), and what a message bound skipped, as an indented line each."""
    lines = []
    if sub.get("kind") == "shared" or sub.get("delivery") == "pull":
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
    if sub.get("message_bound"):
        lines.append(f"    message bound {sub.get('message_bound')}: {sub.get('skipped_by_bound')} skipped")
    return lines


def describe(args) -> int:
    """a topic's seq-ids, ledgers and subscribers (consumed seq-id, backlog)"""
    with client(args) as hub:
        info = hub.describe(args.topic)
    return print_reply(args, info, format_description)


def add_stats(subparsers, client_options):
    return client_command(subparsers, client_options, stats)


def format_stats(counters: dict) -> list[str]:
    """A STATS reply as lines for people: the hub, the operations that ran (count and
    latency), then every other section's counters."""
    hub = counters.get("hub", {})
    lines = [
        f"hub {hub.get('name')} (region {hub.get('region')}): up {hub.get('uptime_s')} s, "
        f"{hub.get('topics_open')} topics open{', stopping' if hub.get('stopping') else ''}"
    ]
    ops = {name: op for name, op in (counters.get("ops") or {}).items() if op.get("ok") or op.get("failed")}
    if ops:
        lines.append("operations:    ok  failed   p50 us   p99 us   max us")
        for name, op in sorted(ops.items()):
            latency = op.get("latency_us", {})
            lines.append(
                f"  {name:<22} {op.get('ok'):>6} {op.get('failed'):>7} {latency.get('p50'):>8} "
                f"{latency.get('p99'):>8} {latency.get('max'):>8}"
            )
    for section in sorted(set(counters) - {"hub", "ops"}):
        value = counters[section]
        if isinstance(value, dict):
            lines.append(f"{readable(section)}:")
            for key in sorted(value):
                shown = value[key] if not isinstance(value[key], dict | list) else json.dumps(value[key])
                lines.append(f"  {readable(key)}: {shown}")
        else:
            lines.append(f"{readable(section)}: {value}")
    return lines


def stats(args) -> int:
    """the hub's counters: operations, connections, cache, delivery"""
    with client(args) as hub:
        counters = hub.stats()
    return print_reply(args, counters, format_stats)
