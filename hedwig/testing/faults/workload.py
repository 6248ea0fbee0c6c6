"""Producers and subscribers that record a History while faults happen.

Each topic has one producer: an idempotent client (its sets numbered, sent again after a
lost connection until stored once) publishing unique payloads one at a time, each
attempt recorded as acknowledged at its seq-id or indeterminate (it raised). Each topic
has one durable subscriber, acknowledging what it receives; its client attaches again
from its last acknowledgement wherever the topic goes. Every client runs in threads
inside the clients' node, so that a partition may cut them off from a hub.
"""

import threading
import time

from hedwig.client import Client
from hedwig.testing.faults.history import History
from hedwig.testing.polling import wait_until

PUBLISH_PACE_S = 0.01  # between a producer's attempts: a steady load that leaves CPU to the hubs
RETRY_PACE_S = 0.2  # between a subscriber's attempts to attach again


class Workload:
    def __init__(self, node, addresses: str, topics, history: History, *, timeout: float = 5.0):
        """`node`: where the clients run; `addresses`: every hub of the region."""
        self.node = node
        self.addresses = addresses
        self.topics = list(topics)
        self.history = history
        self.timeout = timeout
        self.errors: list = []  # what ended a thread early (the run is then invalid)
        self._stop = threading.Event()
        self._caught_up: dict[str, int] = {}  # topic -> the log's last seq-id, once read
        self._subscribed = threading.Barrier(len(self.topics) + 1)
        self._threads = [node.thread(self._produce, topic, name=f"produce {topic}") for topic in self.topics]
        self._subscribers = [node.thread(self._subscribe, topic, name=topic) for topic in self.topics]

    def client(self, **options) -> Client:
        options.setdefault("timeout", self.timeout)
        options.setdefault("reconnect_timeout", 4 * self.timeout)
        return Client(self.addresses, **options)

    def start(self) -> "Workload":
        for thread in self._subscribers:
            thread.start()
        self._subscribed.wait(120)  # every subscription made before anything is published
        for thread in self._threads:
            thread.start()
        return self

    def _produce(self, topic: str) -> None:
        attempt = 0
        try:
            with self.client(idempotent=True) as client:
                while not self._stop.is_set():
                    attempt += 1
                    publish = self.history.invoke(topic, b"%s/%08d" % (topic.encode(), attempt))
                    try:
                        seq = client.publish(topic, publish.payload)
                    except Exception as e:  # it may or may not have been stored
                        self.history.indeterminate(publish, repr(e))
                    else:
                        self.history.acknowledged(publish, seq)
                    time.sleep(PUBLISH_PACE_S)  # (the pace of the load, not a synchronisation)
        except Exception as e:
            self.errors.append(f"producer of {topic}: {e!r}")

    def _subscribe(self, topic: str) -> None:
        subscribed = False
        highest = 0
        with self.client() as client:
            while topic not in self._caught_up or highest < self._caught_up[topic]:
                try:
                    subscription = client.subscribe(topic, "faults", start="earliest")
                    if not subscribed:
                        subscribed = True
                        self._subscribed.wait(120)
                    while topic not in self._caught_up or highest < self._caught_up[topic]:
                        for message in subscription.receive_batch(timeout=0.5):
                            self.history.receive(topic, "faults", message.seq, message.payload)
                            highest = max(highest, message.seq)
                            subscription.ack(message)
                except Exception as e:  # the client gave up reattaching: attach again
                    if not subscribed:
                        self.errors.append(f"subscriber of {topic}: {e!r}")
                        return
                    time.sleep(RETRY_PACE_S)  # (the pace of a subscriber retrying)

    def acks(self, topic: str) -> int:
        return sum(1 for p in self.history.publishes if p.topic == topic and p.outcome == "ok")

    def wait_for_acks(self, count: int, what: str, timeout: float = 120.0) -> None:
        """Until every topic has `count` acknowledgements more than now."""
        marks = {topic: self.acks(topic) + count for topic in self.topics}
        wait_until(lambda: all(self.acks(t) >= marks[t] for t in self.topics) or self.errors, what, timeout)
        assert not self.errors, self.errors

    def stop(self, timeout: float = 180.0) -> None:
        """Producers stopped; every topic's log read into the history; subscribers stopped
        once they received up to its end (or at `timeout`: a gap the checker reports)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)
        for topic in self.topics:
            read = lambda topic=topic: self.node.call(self._read, topic)  # noqa: E731
            log = wait_until(read, f"the log of {topic}", timeout)
            self.history.record_log(topic, log[1])
            self._caught_up[topic] = log[0]
        for thread in self._subscribers:
            thread.join(timeout)
        self._caught_up.update({topic: 0 for topic in self.topics})  # a subscriber left behind stops

    def _read(self, topic: str):
        """(last seq-id, [(seq, payload)]) of `topic`'s log: (-1, ...) so that an empty log
        is still an answer."""
        with self.client() as client:
            log = [(message.seq, message.payload) for message in client.read(topic)]
        return (log[-1][0] if log else 0, log)
