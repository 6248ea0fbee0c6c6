"""Members of a shared or key_shared subscription ("workers") against a real hub, for the
work-queue tests: each a thread on a connection of its own, and a member in a process
of its own that takes messages and never acknowledges them, to be killed mid-stream."""

import subprocess
import sys
import threading
from collections import Counter, defaultdict

from hedwig.client import Client

SUBSCRIPTION = "workers"

_VICTIM = """
import sys
from hedwig.client import Client
client = Client(sys.argv[1])
subscription = client.subscribe(sys.argv[2], "workers", kind=sys.argv[3], window=int(sys.argv[4]))
while True:  # takes messages and never acknowledges them: dies mid-stream
    for message in subscription.receive_batch(timeout=0.2):
        print(message.seq, flush=True)
"""


class Member(threading.Thread):
    """One member on a connection of its own: takes batches and acknowledges each message
    once it noted it, until the members together acknowledged `total` seq-ids."""

    def __init__(self, address, topic, taken, total, kind="shared", **options):
        super().__init__(daemon=True)
        self.client = Client(address).connect()
        self.subscription = self.client.subscribe(topic, SUBSCRIPTION, kind=kind, **options)
        self.taken = taken  # the members' shared Counter: seq-id -> times acknowledged
        self.total = total
        self.got = []  # (key, seq, delivery count), in the order received
        self.error = None

    def run(self):
        try:
            while len(self.taken) < self.total:
                for message in self.subscription.receive_batch(timeout=0.2):
                    self.got.append((message.key, message.seq, message.delivery_count))
                    self.taken[message.seq] += 1  # (Counter updates are atomic enough under the GIL)
                    self.subscription.ack(message)
        except Exception as e:  # reported by the test, with its traceback
            self.error = e

    def finish(self, timeout=300):
        self.join(timeout)
        assert not self.is_alive(), "a member did not finish"
        if self.error is not None:
            raise self.error
        self.subscription.close()
        self.client.close()

    @property
    def seqs(self) -> list:
        """The seq-ids received, in order."""
        return [seq for _key, seq, _count in self.got]

    @property
    def counts(self) -> Counter:
        """delivery count -> messages received with it."""
        return Counter(count for _key, _seq, count in self.got)

    def by_key(self) -> dict:
        """key -> its seq-ids received, in order."""
        seqs = defaultdict(list)
        for key, seq, _count in self.got:
            seqs[key].append(seq)
        return seqs


def start_victim(address, topic, kind, window) -> subprocess.Popen:
    """A member in a process of its own that prints each seq-id it takes and never
    acknowledges one (kill it; read its stdout for what it held)."""
    return subprocess.Popen(
        [sys.executable, "-c", _VICTIM, address, topic, kind, str(window)], stdout=subprocess.PIPE, text=True
    )
