"""What the drain shows while it runs: each micro-batch, a progress bar, a summary.

Spark's StreamingQuery keeps the progress of its recent micro-batches
(`recentProgress`: batchId, numInputRows, durationMs, processedRowsPerSecond). At each
tick the drain hands BatchProgress the query and the lag it just asked the hub for;
BatchProgress says one line per micro-batch completed since the last tick (rows, rows/s,
the lag left), or, on a terminal, redraws one progress bar in place (drained of drained
+ lag). At the end, `summary` is the run in one line: messages, batches, time, rate, lag.
"""

import sys
import time

BAR_WIDTH = 30


class BatchProgress:
    def __init__(self, say, terminal: bool = False, stream=None, clock=time.monotonic):
        """`say(line)` reports a line; with `terminal`, the bar is written to `stream`
        (standard error) instead of the per-batch lines."""
        self.say = say
        self.terminal = terminal
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.started = clock()
        self.query = None  # the running StreamingQuery, once started
        self.last_batch = -1
        self.batches = 0  # micro-batches that read rows, this run
        self._bar_shown = False

    def new_batches(self) -> list:
        """Progress dicts of the micro-batches completed since the last call, in order."""
        if self.query is None:
            return []
        try:
            recent = self.query.recentProgress or []
        except Exception:  # a query gone away: nothing more to tell
            return []
        fresh = [p for p in recent if p.get("batchId", -1) > self.last_batch]
        if fresh:
            self.last_batch = fresh[-1]["batchId"]
        return fresh

    def tick(self, drained: int, lag: dict) -> bool:
        """Report what happened since the last tick; True when it said anything."""
        fresh = [p for p in self.new_batches() if p.get("numInputRows", 0)]
        self.batches += len(fresh)
        if self.terminal:
            self._draw(drained, lag, fresh[-1] if fresh else None)
            return True
        for batch in fresh:
            self.say(batch_line(batch, lag))
        return bool(fresh)

    def _draw(self, drained: int, lag: dict, batch) -> None:
        remaining = sum(lag.values())
        total = drained + remaining
        done = drained / total if total else 1.0
        filled = int(done * BAR_WIDTH)
        rate = f"{rows_per_second(batch):,.0f} rows/s" if batch else "waiting"
        self.stream.write(
            f"\r\033[Khedwig drain [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done:6.1%}"
            f" drained {drained:,} of {total:,}, lag {remaining:,}, {rate}, {self.batches} batches"
        )
        self.stream.flush()
        self._bar_shown = True

    def summary(self, drained: int, lag: dict, stopped: bool) -> str:
        """The run in one line (the bar, if any, ends first)."""
        if self._bar_shown:
            self.stream.write("\n")
            self.stream.flush()
            self._bar_shown = False
        elapsed = max(self.clock() - self.started, 1e-9)
        how = "stopped" if stopped else "done"
        return (
            f"{how}: drained {drained:,} messages in {self.batches} batch{'' if self.batches == 1 else 'es'},"
            f" {elapsed:.1f} s"
            f" ({drained / elapsed:,.0f} messages/s); lag {_lags(lag)}"
        )


def rows_per_second(batch: dict) -> float:
    """A micro-batch's rows over its own time (Spark's processedRowsPerSecond, or the
    rows over the trigger's execution time when Spark gives none)."""
    rate = batch.get("processedRowsPerSecond")
    if rate:
        return float(rate)
    millis = (batch.get("durationMs") or {}).get("triggerExecution") or 0
    return batch.get("numInputRows", 0) * 1000.0 / millis if millis else 0.0


def batch_line(batch: dict, lag: dict) -> str:
    millis = (batch.get("durationMs") or {}).get("triggerExecution") or 0
    return (
        f"batch {batch['batchId']}: {batch.get('numInputRows', 0):,} rows in {millis / 1000:.1f} s"
        f" ({rows_per_second(batch):,.0f} rows/s); lag {_lags(lag)}"
    )


def _lags(lag: dict) -> str:
    return " ".join(f"{topic}={n:,}" for topic, n in lag.items()) or "unknown"
