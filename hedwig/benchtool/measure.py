"""Latency samples and rates, summarised as a bench run reports them.

Latencies are kept as integer nanoseconds from time.monotonic_ns (one sample per request
or per message) and summarised with nearest-rank percentiles: every sample is kept, so
the tail (p99.9, max) is the measured one, not an estimate."""

import math

PERCENTILES = (50.0, 90.0, 99.0, 99.9)


class Latencies:
    """Samples in nanoseconds; `summary()` in milliseconds."""

    def __init__(self):
        self.samples = []

    def add(self, nanoseconds: int) -> None:
        self.samples.append(nanoseconds)

    def extend(self, other: "Latencies") -> None:
        self.samples.extend(other.samples)

    def summary(self) -> dict:
        """{"count", "mean", "p50", "p90", "p99", "p99.9", "max"}: milliseconds (None when empty)."""
        ordered = sorted(self.samples)
        count = len(ordered)
        summary = {"count": count}
        if not count:
            return summary | dict.fromkeys(["mean", *map(percentile_name, PERCENTILES), "max"])
        summary["mean"] = round(sum(ordered) / count / 1e6, 3)
        for point in PERCENTILES:
            rank = max(1, math.ceil(point / 100 * count))  # nearest rank
            summary[percentile_name(point)] = round(ordered[rank - 1] / 1e6, 3)
        summary["max"] = round(ordered[-1] / 1e6, 3)
        return summary


def percentile_name(point: float) -> str:
    return f"p{point:g}"


def rate(messages: int, payload_bytes: int, seconds: float) -> dict:
    """{"messages", "seconds", "messages_per_s", "mb_per_s"} (MB: 10^6 bytes of payload)."""
    per_second = messages / seconds if seconds > 0 else 0.0
    return {
        "messages": messages,
        "seconds": round(seconds, 6),
        "messages_per_s": round(per_second, 1),
        "mb_per_s": round(per_second * payload_bytes / 1e6, 3),
    }


def format_latency(summary: dict) -> str:
    """`p50 0.41 ms  p90 0.62 ms  ...  max 3.10 ms` for people."""
    keys = [percentile_name(p) for p in PERCENTILES] + ["max"]
    return "  ".join(f"{key} {summary[key]:.3f} ms" for key in keys if summary.get(key) is not None)
