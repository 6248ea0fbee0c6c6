"""Publishers and subscribers running against a region while a test breaks it, and the
check that nothing acknowledged was lost, duplicated or reordered.

Each publisher thread owns one topic and publishes unique payloads one set at a time
through a client of every hub of the region (a failed attempt is never sent again: the
next attempt has a payload of its own, so a duplicate in the log would show). Each
subscriber thread holds a durable subscription of one topic and acknowledges what it
receives; the client resubscribes from its last acknowledgement wherever the topic goes.
"""

import threading
import time

from hedwig.client import Client
from hedwig.client.errors import HedwigError
from hedwig.testing.polling import wait_until


class Load:
    def __init__(self, addresses: str, topics, *, subscribers: bool = True, timeout: float = 10.0):
        self.addresses = addresses
        self.topics = list(topics)
        self.timeout = timeout
        self.acked = {topic: [] for topic in self.topics}  # [(seq, payload)] in publish order
        self.attempts = {topic: 0 for topic in self.topics}
        self.failures = {topic: [] for topic in self.topics}  # (time, error) of failed attempts
        self.received = {topic: [] for topic in self.topics}  # [(seq, payload)] as delivered
        self._stop = threading.Event()  # publishers stop ...
        self._done = threading.Event()  # ... then subscribers, once they have it all
        self._publishers = [self._thread(self._publish, topic) for topic in self.topics]
        self._subscribers = (
            [self._thread(self._subscribe, topic) for topic in self.topics] if subscribers else []
        )
        self._subscribed = threading.Barrier(len(self.topics) + 1) if subscribers else None
        self._go = threading.Event()  # publishing starts once every subscriber is attached
        self.errors = []  # what ended a thread early (a test failure)

    @staticmethod
    def _thread(target, topic):
        return threading.Thread(target=target, args=(topic,), daemon=True)

    def start(self) -> "Load":
        for thread in self._publishers + self._subscribers:
            thread.start()
        if self._subscribed is not None:
            self._subscribed.wait(60)  # subscribed before anything is published
        self._go.set()
        return self

    def _publish(self, topic: str) -> None:
        self._go.wait(60)
        try:
            with Client(self.addresses, timeout=self.timeout, reconnect_timeout=120) as client:
                while not self._stop.is_set():
                    attempt = self.attempts[topic]
                    self.attempts[topic] += 1
                    payload = b"%s/%08d" % (topic.encode(), attempt)
                    try:
                        (seq,) = client.publish_many(topic, [payload])
                    except HedwigError as e:
                        self.failures[topic].append((time.monotonic(), repr(e)))
                        time.sleep(0.05)  # (the pace of a publisher retrying, not a synchronisation)
                        continue
                    self.acked[topic].append((seq, payload))
        except Exception as e:  # reported by check()
            self.errors.append(f"publisher of {topic}: {e!r}")

    def _subscribe(self, topic: str) -> None:
        try:
            with Client(self.addresses, timeout=self.timeout, reconnect_timeout=120) as client:
                subscription = client.subscribe(topic, "load", start="earliest")
                self._subscribed.wait(60)
                while not self._done.is_set() or self._behind(topic):
                    for message in subscription.receive_batch(timeout=0.5):
                        self.received[topic].append((message.seq, message.payload))
                        subscription.ack(message)
        except Exception as e:  # reported by check()
            self.errors.append(f"subscriber of {topic}: {e!r}")

    def _behind(self, topic: str) -> bool:
        acked, received = self.acked[topic], self.received[topic]
        return bool(acked) and (not received or received[-1][0] < acked[-1][0])

    def count(self, topic: str) -> int:
        return len(self.acked[topic])

    def wait_for_more(self, count: int, what: str, timeout: float = 60.0) -> None:
        """Until every topic has `count` more acknowledged sets than now."""
        marks = {topic: self.count(topic) + count for topic in self.topics}
        wait_until(lambda: all(self.count(t) >= marks[t] for t in self.topics) or self.errors, what, timeout)
        assert not self.errors, self.errors

    def stop(self) -> None:
        self._stop.set()
        for thread in self._publishers:
            thread.join(180)
        self._done.set()
        for thread in self._subscribers:
            thread.join(180)
        threads = self._publishers + self._subscribers
        assert not any(thread.is_alive() for thread in threads), "a load thread did not end"

    def check(self, client: Client) -> dict:
        """Every acknowledged set is in the log, once, at its seq-id, in publish order; the
        log's seq-ids are dense and no payload is there twice; each subscriber received
        the log in order, with no gap and no duplicate, up to the last acknowledged."""
        assert not self.errors, self.errors
        logs = {}
        for topic in self.topics:
            messages = client.read(topic)
            log = [(m.seq, m.payload) for m in messages]
            assert [seq for seq, _ in log] == list(range(1, len(log) + 1)), f"{topic}: seq-ids not dense"
            payloads = [payload for _, payload in log]
            assert len(set(payloads)) == len(payloads), f"{topic}: a payload stored twice"
            at = dict(log)
            acked = self.acked[topic]
            missing = [(seq, payload) for seq, payload in acked if at.get(seq) != payload]
            assert not missing, f"{topic}: {len(missing)} acknowledged sets lost or moved: {missing[:5]}"
            assert [seq for seq, _ in acked] == sorted(seq for seq, _ in acked), f"{topic}: acks out of order"
            if self._subscribed is not None:
                received = self.received[topic]
                assert received == log[: len(received)], f"{topic}: the subscriber saw a gap or duplicate"
                assert received[-1][0] >= acked[-1][0], f"{topic}: the subscriber stopped short"
            logs[topic] = log
        return logs
