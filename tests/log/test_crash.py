"""Process death: a child appending through the whole log stack (mmap ledgers, SQLite
metadata, rolls every 25 entries) is killed with SIGKILL at random moments; after each
kill every entry it reported acknowledged is there and intact, and seq-ids are dense."""

import os
import random
import signal
import subprocess
import sys

import pytest

from hedwig.config import LogSettings
from tests.log.harness import HAVE_MMAP, LogStack, message_set, settle

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KILLS = 20

pytestmark = pytest.mark.skipif(not HAVE_MMAP, reason="hedwig.ledger.mmap_store is not in the tree")


def run_child_until_killed(
    directory: str, seed: int, acks_before_kill: int
) -> list[tuple[int, int, int, int]]:
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.log.crash_child", directory, str(seed)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    acked = []
    try:
        for line in child.stdout:
            acked.append(tuple(map(int, line.split())))
            if len(acked) >= acks_before_kill:
                break
        child.send_signal(signal.SIGKILL)
        # the child went on appending while we read: take what it reported before dying
        rest, errors = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL, errors
    acked.extend(tuple(map(int, line.split())) for line in rest.splitlines() if line.count(" ") == 3)
    return acked


def test_acknowledged_entries_survive_sigkill(tmp_path):
    rng = random.Random(2024)
    directory = str(tmp_path)
    reported = {}  # first_seq -> (last_seq, count, size)
    for kill in range(KILLS):
        for first, last, count, size in run_child_until_killed(directory, kill * 1000, rng.randint(1, 120)):
            reported[first] = (last, count, size)
        stack = LogStack(
            "mmap", directory, LogSettings(max_ledger_entries=25), page_bytes=64 << 10, index_page_records=256
        )
        try:
            topic_log = settle(stack, stack.manager().open("t"))
            entries = settle(stack, topic_log.read(1, 1 << 30, 1 << 40)) if topic_log.last_seq else []
            # a valid prefix: dense from 1, each entry what its header says
            assert [e.first_seq for e in entries] == [1] + [e.last_seq + 1 for e in entries[:-1]]
            found = {e.first_seq: e for e in entries}
            for first, (last, count, size) in reported.items():
                entry = found.get(first)
                assert entry is not None, f"acknowledged entry {first}..{last} lost after kill {kill}"
                assert entry.last_seq == last
                assert entry.data.endswith(message_set(count, size, first))
        finally:
            stack.close()
    assert len(reported) > KILLS
