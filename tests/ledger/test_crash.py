"""A writer process killed with SIGKILL at random moments never loses an acknowledged
entry, and what it leaves is always a valid prefix of what it appended.

The child (crash_child.py) appends with up to 8 appends in flight and reports each
acknowledgement on a pipe; the test kills it after a random number of acknowledgements
(sometimes before the first, while it is still recovering), then reopens the store in
this process and checks every ledger entry by entry. Half the runs use fsync "always",
so kills also land in the middle of group commits and ledger closes.
"""

import os
import random
import signal
import subprocess
import sys

from hedwig.ledger.mmap_store import MmapLedgerStore
from hedwig.testing.deferreds import fired as result_of
from hedwig.testing.reactors import InlineThreadsReactor
from tests.ledger.crash_child import OPTIONS, payload

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crash_child.py")
KILLS = 60


def _run_and_kill(directory: str, seed: int, fsync: str, acks_wanted: int) -> list[tuple[int, int]]:
    """Start a writer, read acknowledgements until `acks_wanted`, SIGKILL it; every
    acknowledgement it wrote before dying."""
    child = subprocess.Popen(
        [sys.executable, CHILD, directory, str(seed), fsync],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    acks = []
    try:
        while len(acks) < acks_wanted:
            line = child.stdout.readline()
            if not line:
                error = child.stderr.read().decode()
                raise AssertionError(f"the writer exited early ({child.wait()}): {error}")
            ledger, entry = map(int, line.split())
            acks.append((ledger, entry))
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    # Acknowledgements already in the pipe were made before the kill: they count too.
    acks.extend(tuple(map(int, line.split())) for line in child.stdout.read().splitlines())
    child.stdout.close()
    child.stderr.close()
    return acks


def test_sigkill_loses_no_acknowledged_entry(tmp_path):
    directory = str(tmp_path / "ledgers")
    rng = random.Random(20240611)
    verified = {}  # ledger -> entries checked in earlier rounds (they may not shrink)
    acknowledged = {}  # ledger -> highest acknowledged entry id
    kills_with_acks = 0
    for run in range(KILLS):
        fsync = "always" if run % 2 else "never"
        wanted = 0 if run % 15 == 7 else rng.randrange(1, 120)
        acks = _run_and_kill(directory, rng.randrange(1 << 30), fsync, wanted)
        kills_with_acks += bool(acks)
        for ledger, entry in acks:
            acknowledged[ledger] = max(acknowledged.get(ledger, -1), entry)

        store = MmapLedgerStore(directory, reactor=InlineThreadsReactor(), **OPTIONS)
        try:
            ledgers = store.list_ledgers()
            for ledger, highest in acknowledged.items():
                assert ledger in ledgers, f"run {run}: ledger {ledger} with acknowledged entries is gone"
                assert store.last_entry_id(ledger) >= highest, (
                    f"run {run}: ledger {ledger} ends at {store.last_entry_id(ledger)}, "
                    f"entry {highest} was acknowledged"
                )
            for ledger in ledgers:
                count = store.last_entry_id(ledger) + 1
                assert count >= verified.get(ledger, 0), f"run {run}: ledger {ledger} shrank"
                # A valid prefix: the new entries, and a few already seen, are exactly
                # what the writer appended, in order.
                start = max(0, verified.get(ledger, 0) - 3)
                if count > start:
                    got = result_of(store.read(ledger, start, count - 1))
                    assert got == [payload(ledger, e) for e in range(start, count)], (
                        f"run {run}: ledger {ledger} differs from what was appended"
                    )
                verified[ledger] = count
        finally:
            result_of(store.close())
    assert kills_with_acks >= 50
    assert len(verified) > 3  # the writers rolled ledgers along the way
