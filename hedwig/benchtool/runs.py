"""The three bench runs, each over blocking clients of its own (one connection each, as
separate applications would have), reporting a dict that command.py prints.

- publish: `clients` publishers share `messages`, each publishing `batch` messages per
  request (one message set, one entry); the latency is a request's, to PUBLISHED.
- subscribe: `clients` subscribers attach first (new subscriptions at the topic's end),
  then one publisher publishes `messages` in batches; each subscriber receives all of
  them, acknowledging as it goes. The latency is each message's, from its publish
  request leaving to its delivery (the publisher writes time.monotonic_ns into the first
  8 bytes of the payload: publisher and subscribers are one process, one clock).
- round-trip: one message at a time: publish it, wait for its delivery, then the next.

Subscriptions made by a run (`bench-<pid>-<n>`) are removed at its end, failed or not.
"""

import os
import struct
import threading
import time
from dataclasses import dataclass

from hedwig.benchtool.measure import Latencies, rate

STAMP = struct.Struct(">q")  # monotonic_ns at the publish, in the first 8 bytes


class BenchError(Exception):
    """A run that could not finish (a stall, a failed client): one line for the user."""


@dataclass
class BenchSettings:
    topic: str
    messages: int
    size: int = 128  # payload bytes
    batch: int = 100  # messages per publish request
    clients: int = 1  # publishers (publish) or subscribers (subscribe)
    timeout: float = 30.0  # longest wait for the next delivery before giving up


def _stamped(settings: BenchSettings, count: int) -> list:
    """`count` payloads of `size` bytes stamped with now (one stamp: one request)."""
    payload = STAMP.pack(time.monotonic_ns()) + bytes(settings.size - STAMP.size)
    return [payload] * count


def _shares(total: int, parts: int) -> list:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _run_threads(targets) -> None:
    """Run each target in a thread; re-raise the first failure once all are done."""
    failures = []

    def guarded(target):
        try:
            target()
        except BaseException as e:  # reported to the caller, whatever it was
            failures.append(e)

    threads = [threading.Thread(target=guarded, args=(t,), daemon=True) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


def _publish(client, settings: BenchSettings, count: int, latencies: Latencies, stamped: bool) -> None:
    sent = 0
    plain = [bytes(settings.size)] * settings.batch
    while sent < count:
        size = min(settings.batch, count - sent)
        payloads = _stamped(settings, size) if stamped else plain[:size]
        started = time.monotonic_ns()
        client.publish_many(settings.topic, payloads)
        latencies.add(time.monotonic_ns() - started)
        sent += size


def publish_run(connect, settings: BenchSettings) -> dict:
    latencies = [Latencies() for _ in range(settings.clients)]
    clients = [connect() for _ in range(settings.clients)]
    try:
        shares = _shares(settings.messages, settings.clients)
        started = time.monotonic()
        _run_threads(
            [
                lambda c=c, n=n, lat=lat: _publish(c, settings, n, lat, stamped=False)
                for c, n, lat in zip(clients, shares, latencies, strict=True)
            ]
        )
        seconds = time.monotonic() - started
    finally:
        for client in clients:
            client.close()
    merged = Latencies()
    for part in latencies:
        merged.extend(part)
    return {**rate(settings.messages, settings.size, seconds), "publish_latency_ms": merged.summary()}


class _Receiver:
    """One subscriber: receives `expected` messages, timing each from its stamp."""

    def __init__(self, client, subscription, expected: int, timeout: float):
        self.client = client
        self.subscription = subscription
        self.expected = expected
        self.timeout = timeout
        self.latencies = Latencies()
        self.finished = None  # monotonic time of the last delivery

    def run(self) -> None:
        received = 0
        subscription = self.subscription
        while received < self.expected:
            batch = subscription.receive_batch(timeout=self.timeout, max_messages=self.expected - received)
            now = time.monotonic_ns()
            if not batch:
                raise BenchError(
                    f"{subscription.subscriber_id}: no message for {self.timeout:g} s after {received}"
                    f" of {self.expected} (--timeout)"
                )
            for message in batch:
                self.latencies.add(now - STAMP.unpack_from(message.payload)[0])
            received += len(batch)
            subscription.ack(batch[-1])
        self.finished = time.monotonic()


def _subscriber_ids(count: int) -> list:
    return [f"bench-{os.getpid()}-{i}" for i in range(count)]


def _unsubscribe_all(connect, topic: str, subscriber_ids) -> None:
    with connect() as client:
        for subscriber_id in subscriber_ids:
            client.unsubscribe(topic, subscriber_id)


def subscribe_run(connect, settings: BenchSettings) -> dict:
    ids = _subscriber_ids(settings.clients)
    receivers = []
    publisher = connect()
    try:
        for subscriber_id in ids:
            client = connect()
            subscription = client.subscribe(settings.topic, subscriber_id, start="latest")
            receivers.append(_Receiver(client, subscription, settings.messages, settings.timeout))
        publish_latency = Latencies()
        started = time.monotonic()
        _run_threads(
            [lambda: _publish(publisher, settings, settings.messages, publish_latency, stamped=True)]
            + [receiver.run for receiver in receivers]
        )
        seconds = max(receiver.finished for receiver in receivers) - started
    finally:
        publisher.close()
        for receiver in receivers:
            receiver.client.close()
        _unsubscribe_all(connect, settings.topic, ids[: len(receivers)])
    delivered = Latencies()
    for receiver in receivers:
        delivered.extend(receiver.latencies)
    deliveries = rate(settings.messages * len(receivers), settings.size, seconds)
    return {
        **rate(settings.messages, settings.size, seconds),
        "subscribers": len(receivers),
        "deliveries": deliveries["messages"],
        "deliveries_per_s": deliveries["messages_per_s"],
        "delivery_latency_ms": delivered.summary(),
        "publish_latency_ms": publish_latency.summary(),
    }


def round_trip_run(connect, settings: BenchSettings) -> dict:
    [subscriber_id] = _subscriber_ids(1)
    latencies = Latencies()
    publisher = connect()
    listener = None
    try:
        listener = connect()
        subscription = listener.subscribe(settings.topic, subscriber_id, start="latest")
        started = time.monotonic()
        for sent in range(settings.messages):
            begun = time.monotonic_ns()
            seq = publisher.publish(settings.topic, _stamped(settings, 1)[0])
            message = subscription.receive(timeout=settings.timeout)
            while message is not None and message.seq < seq:  # (another publisher's)
                message = subscription.receive(timeout=settings.timeout)
            if message is None:
                raise BenchError(f"message {sent + 1} (seq-id {seq}) not delivered in {settings.timeout:g} s")
            latencies.add(time.monotonic_ns() - begun)
            subscription.ack(message)
        seconds = time.monotonic() - started
    finally:
        publisher.close()
        if listener is not None:
            listener.close()
            _unsubscribe_all(connect, settings.topic, [subscriber_id])
    return {**rate(settings.messages, settings.size, seconds), "round_trip_latency_ms": latencies.summary()}


RUNS = {"publish": publish_run, "subscribe": subscribe_run, "round-trip": round_trip_run}
