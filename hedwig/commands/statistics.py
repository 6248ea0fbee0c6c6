"""`hedwig stats` for people: a STATS reply (docs/protocol.md) laid out to be read.

The hub first (name, region, uptime, topics), what it moved (messages published and
delivered: one figure each, since the hub started), then a table of the operations that
ran, then each section (connections, cache, delivery, intake, regions, zookeeper) as
aligned "label  value" lines. Keys are shown by what they mean (LABELS; one not listed
by its own name, underscores as spaces), values by what they are (numbers.py: counts,
sizes, durations), nested values as lines of their own, never as Python or raw JSON.
`--json` prints the reply as it is.
"""

from hedwig.commands.numbers import NOTHING, count, duration, moment, plural, size
from hedwig.commands.output import table

# What a section's key means, for the keys whose names are the code's, not a user's.
LABELS = {
    "cache": {
        "bytes": "held",
        "max_bytes": "budget ([cache] cache_bytes)",
        "entries": "entries held",
        "topics": "topics cached",
        "published": "entries added by publishes",
        "hits": "reads answered from memory",
        "misses": "reads that went to the ledgers",
        "tail_waits": "subscribers waiting at a topic's end",
        "stubs": "entries being read or awaited",
        "stub_waiters": "readers waiting for them",
        "reads_in_flight": "ledger reads in progress",
        "entries_in_flight": "entries those reads ask for",
        "range_reads": "ledger reads",
        "lookahead_reads": "read-ahead reads",
        "entries_read": "entries read from the ledgers",
        "read_failures": "ledger reads failed",
        "read_seconds": "time spent reading the ledgers",
        "evicted_fifo": "entries evicted, oldest first (over budget)",
        "evicted_pruned": "entries dropped once consumed",
        "uncacheable": "entries too large to cache",
    },
    "connections": {
        "open": "open",
        "opened": "opened since the start",
        "closed": "closed",
        "protocol_errors": "closed for protocol errors",
        "unknown_operations": "unknown operations asked",
        "frame_timeouts": "closed for a stalled request",
        "hello_timeouts": "closed for no HELLO",
    },
    "delivery": {
        "topics": "topics with subscriptions loaded",
        "subscriptions": "subscriptions",
        "attached": "attached now",
        "ack_only": "attached for acknowledgements only",
        "shared_members": "members of shared subscriptions attached",
        "paused_channels": "connections paused (their socket full)",
        "subscribes": "subscribes",
        "consumes": "acknowledgements (CONSUME)",
        "pointer_writes": "consumed seq-ids written",
        "pointer_write_failures": "consumed seq-ids that failed to be written",
        "read_retries": "ledger reads retried",
        "skipped_by_retention": "messages removed by retention before they were consumed",
        "skipped_by_bound": "messages skipped by message bounds",
        "forced_closes": "subscriptions forced closed (attached elsewhere)",
        "channel_errors": "connections that failed a delivery",
        "acked": "messages acknowledged one by one (shared, pull)",
        "nacked": "messages given back (NACK)",
        "redelivered": "messages delivered again",
        "expired": "messages whose ack timeout passed",
        "dead_lettered": "messages sent to a dead-letter topic",
        "fetches": "fetches (pull)",
        "ttl_expired": "messages whose TTL passed undelivered",
        "filtering_entries": "large entries being filtered, a step at a time",
        "filtered_in_steps": "large entries filtered a step at a time",
        "filter_compiles_waiting": "new filters waiting for their user's turn to be compiled",
    },
    "intake": {
        "max_bytes": "budget for requests still arriving",
        "reserved_bytes": "reserved now",
        "holders": "connections with a request arriving",
        "waiting": "connections waiting for room",
        "waits": "times a connection waited for room",
        "client_error_lines_left_out": "client errors not logged (one line per peer per interval)",
    },
    "zookeeper": {
        "session": "session",
        "session_id": "session id",
        "sessions": "sessions since the start",
        "hubs": "hubs of the region",
        "owned": "topics owned here",
        "acks_held": "acknowledgements held (connection lost)",
        "claims": "topics claimed here",
        "releases": "topics released from here",
        "redirects": "requests redirected",
        "taken_over_here": "topics taken over here from another hub",
        "taken_over_from": "taken over from",
        "released_to": "released to",
        "taken_over_by_others": "topics taken over from here by another hub",
        "recent_moves": "recent moves",
    },
    "regions": {
        "path": "path to the root",
        "parent": "parent link",
        "parent_links": "links to the parent's hubs",
        "children": "children linked",
        "interest_topics": "topics subscribed here (relayed in)",
        "refused_links": "links refused",
        "relay": "relayed",
    },
}
# Keys shown as sizes and as durations, whatever their section.
_SIZES = ("bytes", "max_bytes", "reserved_bytes", "pending_bytes")
_DURATIONS = ("read_seconds", "uptime_s", "retry_in_s")
# Shown elsewhere: the delivery manager's counts of the subscribers attached now, which
# the hub's own "delivered" (every delivery since the start) supersedes.
_SHOWN_ELSEWHERE = {"delivery": {"delivered_entries", "delivered_messages"}}


def label(section: str, key: str) -> str:
    return LABELS.get(section, {}).get(key) or key.replace("_", " ")


def value_text(key: str, value) -> str:
    """A scalar as people read it (a size, a duration, a count, yes/no, "-")."""
    if value is None:
        return NOTHING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        if key in _SIZES:
            return size(value)
        if key in _DURATIONS:
            return duration(value)
        return count(value)
    return str(value)


def _entries(section: str, values: dict, indent: str) -> list[tuple[str, str]]:
    """(label, value) lines of a section; nested dicts and lists as indented lines."""
    hidden = _SHOWN_ELSEWHERE.get(section, set())
    known = list(LABELS.get(section, {}))
    out = []
    for key in sorted(values, key=lambda k: (known.index(k) if k in known else len(known), k)):
        if key in hidden:
            continue
        value = values[key]
        name = f"{indent}{label(section, key)}"
        if key == "recent_moves":
            out.append((name, NOTHING if not value else ""))
            for move in value:
                out.append((f"{indent}  {moment(move.get('at'))}", _move(move)))
        elif isinstance(value, dict):
            if not value:
                out.append((name, NOTHING))
            elif all(not isinstance(v, dict | list) for v in value.values()):
                shown = ", ".join(f"{label(section, k)} {value_text(k, v)}" for k, v in sorted(value.items()))
                out.append((name, shown))
            else:
                out.append((name, ""))
                out.extend(_entries(section, value, indent + "  "))
        elif isinstance(value, list):
            if not value:
                out.append((name, NOTHING))
            elif key == "path":
                out.append((name, " -> ".join(map(str, value))))
            elif all(isinstance(item, dict) for item in value):
                out.append((name, ""))
                for item in value:
                    title = item.get("region") or item.get("hub") or item.get("address") or ""
                    rest = {k: v for k, v in item.items() if v != title}
                    out.append(
                        (
                            f"{indent}  {title}",
                            ", ".join(
                                f"{k.replace('_', ' ')} {value_text(k, v)}" for k, v in sorted(rest.items())
                            ),
                        )
                    )
            else:
                out.append((name, ", ".join(map(str, value))))
        else:
            out.append((name, value_text(key, value)))
    return out


def _move(move: dict) -> str:
    return f"{move.get('topic')}: {move.get('from')} -> {move.get('to')} ({move.get('why')})"


def _aligned(pairs) -> list[str]:
    width = max((len(name) for name, _ in pairs), default=0)
    return [f"  {name.ljust(width)}  {shown}".rstrip() for name, shown in pairs]


def format_stats(counters: dict, hubs=None) -> list[str]:
    """A STATS reply as lines for people (see the module docstring); `hubs`: the region's
    live hubs (LIST_HUBS), shown as a table for a hub of a region of several."""
    hub = counters.get("hub", {})
    state = ", stopping" if hub.get("stopping") else ""
    lines = [
        f"hub {hub.get('name')}, region {hub.get('region')}, up {duration(hub.get('uptime_s'))},"
        f" {plural(hub.get('topics_open') or 0, 'topic')} open{state}"
    ]
    if hub.get("ledgers"):
        lines.append(f"ledgers in {hub['ledgers']}")
    if hub.get("http"):
        lines.append(f"status page {hub['http']}")
    published = counters.get("published") or {}
    delivered = counters.get("delivered") or {}
    lines.append(
        f"published {plural(published.get('messages') or 0, 'message')} ({size(published.get('bytes'))}),"
        f" delivered {plural(delivered.get('messages') or 0, 'message')}"
        f" in {plural(delivered.get('entries') or 0, 'entry', 'entries')},"
        f" redirected {plural(counters.get('redirected') or 0, 'request')} (since the start)"
    )
    if hubs:
        lines += ["", "hubs of the region:"]
        lines += ["  " + line for line in table(hubs, HUB_COLUMNS)]
    ops = {
        name: op
        for name, op in (counters.get("ops") or {}).items()
        if op.get("ok") or op.get("failed") or op.get("redirected")
    }
    if ops:
        rows = [
            {
                "op": name,
                "ok": op.get("ok"),
                "redirected": op.get("redirected") or 0,
                "failed": op.get("failed"),
                **(op.get("latency_us") or {}),
            }
            for name, op in sorted(ops.items())
        ]
        redirects = any(row["redirected"] for row in rows)  # (a hub of a region's: a column of its own)
        columns = [c for c in _OP_COLUMNS if redirects or c[0] != "redirected"]
        lines += ["", *table(rows, columns)]
    for section in sorted(set(counters) - {"hub", "ops", "published", "delivered", "redirected"}):
        value = counters[section]
        lines.append("")
        if isinstance(value, dict):
            lines.append(f"{section}:")
            lines += _aligned(_entries(section, value, ""))
        else:
            lines.append(f"{label('', section)}: {value_text(section, value)}")
    return lines


_OP_COLUMNS = [
    ("op", "operation"),
    ("ok", "ok"),
    ("redirected", "redirected"),
    ("failed", "failed"),
    ("p50", "p50 us"),
    ("p99", "p99 us"),
    ("max", "max us"),
]
HUB_COLUMNS = [
    ("hub", "hub"),
    ("topics", "topics"),
    ("messages_per_s", "messages/s", lambda v, _row: NOTHING if v is None else f"{v:,.0f}"),
    ("started_us", "started", lambda v, _row: moment(v / 1e6) if v else NOTHING),
    ("http", "status page"),
    ("tls_port", "tls port"),
]
