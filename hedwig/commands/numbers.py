"""How the commands write numbers for people, the same in every command (`describe`,
`stats`, `subscriptions`, `top`, `drain`): counts with thousands separators (1,234,567),
sizes in binary units (63 B, 1.5 MiB), rates per second (12,345/s), durations in the
largest units that fit (850 ms, 2.9 s, 1h 02m), and nothing (None) as "-". `--json`
prints the numbers as they are.
"""

from datetime import UTC, datetime

NOTHING = "-"


def count(n) -> str:
    """1234567 -> "1,234,567"; None -> "-"."""
    if n is None:
        return NOTHING
    if isinstance(n, float) and not n.is_integer():
        return f"{n:,.1f}"
    return f"{int(n):,}"


def size(n) -> str:
    """Bytes: 63 -> "63 B", 1536 -> "1.5 KiB"; None -> "-"."""
    if n is None:
        return NOTHING
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def rate(per_second) -> str:
    """Messages (or rows) a second: 12345.6 -> "12,346/s"; None -> "-"."""
    if per_second is None:
        return NOTHING
    return f"{per_second:,.0f}/s"


def duration(seconds) -> str:
    """0.85 -> "850 ms", 2.93 -> "2.9 s", 3725 -> "1h 02m", 90061 -> "1d 01h"; None -> "-"."""
    if seconds is None:
        return NOTHING
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s"


def moment(epoch_seconds) -> str:
    """A time as UTC ISO-8601 to the second: 1795699584.6 -> "2026-11-26T13:26:24Z"."""
    if epoch_seconds is None:
        return NOTHING
    return datetime.fromtimestamp(epoch_seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def plural(n: int, word: str, words: str | None = None) -> str:
    """1, "topic" -> "1 topic"; 3 -> "3 topics"."""
    return f"{count(n)} {word if n == 1 else (words or word + 's')}"
