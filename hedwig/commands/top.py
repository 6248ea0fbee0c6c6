"""`hedwig top`: a live terminal view of one hub, read from its HTTP listener.

It fetches /api/status (hedwig.observe: the status page's JSON) every --interval and shows
the hub's rates, then its topics by publish rate and its subscriptions by lag. On a
terminal it redraws in place (the alternate screen, as top does, left on exit); on a pipe
or a file it prints plain lines, one block per refresh, so `hedwig top --count 1` is a
snapshot a script can read. Registered in hedwig/commands/main.py.

Which hub: the one --hub names, as for every other command. Its HTTP listener's address
is asked of the hub itself (STATS says where it listens: `[http] port` may be anything),
so `hedwig --hub HOST:PORT top` needs only the hub's own port; --url (or $HEDWIG_HTTP)
names the listener directly. A hub that cannot be reached, or a URL that does not answer
in HTTP, is one line and exit status 1 (a CommandError, which the command's main reports).
"""

import base64
import http.client
import json
import os
import shutil
import signal
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from hedwig.commands.common import CommandError, client
from hedwig.commands.numbers import count, duration, rate, size

FETCH_TIMEOUT_S = 10.0

_ENTER, _LEAVE, _HOME_CLEAR = "\x1b[?1049h\x1b[?25l", "\x1b[?25h\x1b[?1049l", "\x1b[H\x1b[2J"


def add_top(subparsers, client_options):
    parser = subparsers.add_parser("top", parents=[client_options], help=top.__doc__, description=top.__doc__)
    parser.add_argument(
        "--url",
        default=os.environ.get("HEDWIG_HTTP") or None,
        metavar="URL",
        help="the hub's HTTP listener, when it is not to be asked of --hub (or $HEDWIG_HTTP);"
        " https:// verifies with --tls-ca",
    )
    parser.add_argument("--interval", type=float, default=2.0, metavar="S", help="seconds between refreshes")
    parser.add_argument("--count", type=int, metavar="N", help="stop after N refreshes")
    parser.add_argument("--rows", type=int, default=20, metavar="N", help="rows of each table (default 20)")
    parser.set_defaults(run=top)


def listener_of(args) -> str:
    """The URL of the HTTP listener of the hub --hub names, as the hub says (STATS)."""
    from hedwig.protocol.addresses import parse_addresses

    with client(args) as hub:
        stats = hub.stats()
    host = parse_addresses(args.hub)[0][0]
    name = stats.get("hub", {}).get("name")
    url = stats.get("hub", {}).get("http")
    if not url:
        raise CommandError(f"hub {name} has no HTTP listener ([http] port 0): start it with --http-port")
    parts = urllib.parse.urlsplit(url)
    if parts.hostname in ("0.0.0.0", "::") and host:  # (listening on every address: reach it as the hub)
        url = parts._replace(netloc=f"{host}:{parts.port}").geturl()
    return url


def fetch_status(url: str, ca_file: str = "", credentials=None, part: str = "status") -> dict:
    """The hub's /api/status (or /api/`part`); CommandError (one line) when it cannot be had."""
    context = ssl.create_default_context(cafile=ca_file or None) if url.startswith("https:") else None
    target = url.rstrip("/") + "/api/" + part
    request = urllib.request.Request(target)
    if credentials is not None:  # ([auth] on: the listener takes an admin's Basic credentials)
        pair = f"{credentials.user}:{credentials.password}".encode()
        request.add_header("Authorization", "Basic " + base64.b64encode(pair).decode("ascii"))
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S, context=context) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as e:
        raise CommandError(f"{target}: HTTP {e.code} {e.reason}") from None
    except http.client.HTTPException:
        raise CommandError(
            f"{target} does not answer in HTTP: is it a hub's hedwig port? (`hedwig --hub HOST:PORT top`"
            " finds the hub's HTTP listener by itself)"
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise CommandError(f"could not read {target}: {reason}") from None


def fetch_region(url: str, ca_file: str = "", credentials=None) -> dict | None:
    """The region's topics with their owners (/api/region, which asks the region's other
    hubs); None when that cannot be had now (the hub's own view is shown all the same)."""
    try:
        return fetch_status(url, ca_file, credentials, "region")
    except CommandError:
        return None


def _table(headers, rows, width: int) -> list:
    cells = [headers, *rows]
    widths = [max(len(str(row[i])) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        padded = [
            str(value).ljust(w) if i == 0 else str(value).rjust(w)
            for i, (value, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(padded)[:width])
    return lines


def _topic_row(r: dict) -> tuple:
    seq_ids = f"{r['first_seq']}..{r['last_seq']}"
    messages, subscriptions = count(r["messages"]), count(r["subscriptions"])
    return r["topic"], count(round(r["rate"])), seq_ids, messages, size(r["bytes"]), subscriptions


def _subscription_row(r: dict) -> tuple:
    return r["topic"], r["subscriber_id"], count(r["backlog"]), r["consumed_seq"], r["state"]


def _region_lines(zk: dict, region: dict | None, rows: int, width: int) -> list:
    """A region's hubs (the one asked marked) and, when /api/region answered, its topics
    with their owners: what the status page's region view shows."""
    owned = {}
    for row in (region or {}).get("topics") or ():
        if row.get("owner"):
            owned[row["owner"]] = owned.get(row["owner"], 0) + 1
    hubs = [
        (
            h["hub"] + (" *" if h.get("here") else ""),
            count(owned.get(h["hub"], 0) if region else h.get("topics") or 0),
            count(round(h.get("messages_per_s") or 0)),
            h.get("http") or "-",
        )
        for h in zk["hubs"]
    ]
    where = f"ZooKeeper {zk['zookeeper']['servers']}{zk['zookeeper']['root']}"
    lines = [f"region of {len(hubs)} hubs on {where} (* this hub)"[:width]]
    lines += _table(("HUB", "TOPICS", "MSG/S", "STATUS PAGE"), hubs, width)
    if region is not None:
        topics = region.get("topics") or []
        lines.append("")
        shown = [(r["topic"], r.get("owner") or "-") for r in topics[:rows]]
        lines += _table(("REGION TOPIC", "OWNER"), shown, width)
        if len(topics) > rows:
            lines.append(f"... and {count(len(topics) - rows)} more")
    return [*lines, ""]


def render(status: dict, rows: int = 20, width: int = 120, region: dict | None = None) -> list:
    """The lines of one refresh (`region`: /api/region, for a hub of a region of several)."""
    hub, totals = status["hub"], status["totals"]
    last = status["history"][-1] if status["history"] else {}
    publish, deliver = last.get("publish_rate", 0), last.get("delivery_rate", 0)
    rates = f"publish {rate(publish)}  deliver {rate(deliver)}"
    lines = [
        f"hedwig {hub['name']}  region {hub['region']}  version {hub['version']}"
        f"  up {duration(hub['uptime_s'])}",
        f"{rates}  backlog {count(totals['backlog'])}  topics {count(totals['topics'])}"
        f"  subscriptions {count(totals['subscriptions'])}  connections {count(totals['connections'])}"
        f"  cache {size(totals['cache_bytes'])}",
    ]
    lines = [line[:width] for line in lines] + [""]
    if status.get("region"):
        lines += _region_lines(status["region"], region, rows, width)
    topics = sorted(status["topics"], key=lambda r: (-r["rate"], r["topic"]))[:rows]
    headers = ("TOPIC", "MSG/S", "SEQ-IDS", "MESSAGES", "SIZE", "SUBS")
    lines += _table(headers, [_topic_row(r) for r in topics], width)
    lines.append("")
    subscriptions = sorted(status["subscriptions"], key=lambda r: (-r["backlog"], r["topic"]))[:rows]
    headers = ("TOPIC", "SUBSCRIBER", "LAG", "CONSUMED", "STATE")
    lines += _table(headers, [_subscription_row(r) for r in subscriptions], width)
    return lines


def top(args) -> int:
    """a live view of a hub: topics by rate, subscriptions by lag (from its HTTP listener, which
    --hub's hub names)"""
    if args.interval <= 0 or (args.count is not None and args.count < 1) or args.rows < 1:
        raise CommandError("--interval must be more than 0, --count and --rows at least 1")
    from hedwig.auth.client_options import credentials_from

    url = args.url or listener_of(args)
    out = sys.stdout
    on_terminal = out.isatty()
    ca_file = getattr(args, "tls_ca", "") or ""
    credentials = credentials_from(args)
    shown = 0
    status = fetch_status(url, ca_file, credentials)  # (a hub that is not there: before the screen)
    region_url = url if status.get("region") else None  # (a region's hub: the region's topics too)
    if on_terminal:
        # SIGTERM ends it as Ctrl-C does, through the `finally` below: the terminal gets its
        # screen and cursor back (Python's default for SIGTERM exits without unwinding).
        previous = signal.signal(signal.SIGTERM, _interrupted)
        out.write(_ENTER)
    try:
        while True:
            width = shutil.get_terminal_size().columns if on_terminal else 200
            region = fetch_region(region_url, ca_file, credentials) if region_url else None
            lines = render(status, args.rows, width, region)
            if on_terminal:
                out.write(_HOME_CLEAR + "\n".join(lines) + "\n")
            else:
                out.write(time.strftime("%Y-%m-%dT%H:%M:%S ") + "\n".join(lines) + "\n\n")
            out.flush()
            shown += 1
            if args.count is not None and shown >= args.count:
                return 0
            time.sleep(args.interval)
            status = fetch_status(url, ca_file, credentials)
    finally:
        if on_terminal:
            out.write(_LEAVE)
            out.flush()
            signal.signal(signal.SIGTERM, previous)


def _interrupted(signum, frame):
    raise KeyboardInterrupt
