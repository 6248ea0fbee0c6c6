"""A topic's default TTL (issue 39: "publish(..., ttl=seconds) and a topic default"):
`hedwig create T --ttl DURATION` and `hedwig describe T`, run as their own processes
against a real hub process; messages published without a ttl of their own expire by
the topic's, those with one by their own."""

import pytest

from hedwig.client import Client
from hedwig.client.errors import TopicExists
from hedwig.protocol.admin_requests import (
    CreateTopic,
    decode_create_topic,
    encode_create_topic,
    topic_ttl_ms,
)
from hedwig.protocol.layouts import RequestRefused
from tests.cli.test_cli import hedwig, lines


def test_create_with_a_ttl_says_it_and_describe_shows_it(hub):
    """docs/operations.md's `hedwig create jobs --ttl 30s`, as a user runs it."""
    assert lines(hedwig("create", "jobs", "--ttl", "30s", hub=hub)) == [
        "created topic jobs (messages expire 30.0 s after their publish)"
    ]
    assert lines(hedwig("create", "jobs", "--ttl", "30s", hub=hub)) == [
        "topic jobs exists already (messages expire 30.0 s after their publish)"
    ]
    described = lines(hedwig("describe", "jobs", hub=hub))
    assert (
        "ttl:      30.0 s (a message published without a ttl of its own and not delivered within it"
        " is not delivered)"
    ) in described
    other = hedwig("create", "jobs", "--ttl", "1m", hub=hub)
    assert other.returncode != 0 and b"exists already with a ttl of 30000 ms: it keeps it" in other.stderr
    plain = hedwig("create", "orders.plain", hub=hub)
    assert lines(plain) == ["created topic orders.plain"]
    assert not any(line.startswith("ttl:") for line in lines(hedwig("describe", "orders.plain", hub=hub)))
    refused = hedwig("create", "orders.none", "--ttl", "0s", hub=hub)
    assert refused.returncode == 2 and b"a topic's ttl is a number of seconds > 0" in refused.stderr


def test_messages_without_a_ttl_of_their_own_expire_by_the_topics(hub):
    """Each published with the CLI: one delayed past the topic's TTL expires undelivered
    (dead-lettered by a shared subscription that names a dead-letter topic, passed over
    by an exclusive one, counted by both), one with a ttl of its own outlives the
    topic's, one without either is delivered at once to the shared subscription (and
    expires behind the delayed ones for the exclusive one, which takes them in order)."""
    lines(hedwig("create", "jobs.ttl", "--ttl", "2s", hub=hub))
    with Client(hub.address) as client:
        before = client.stats()["delivery"]["ttl_expired"]
        member = client.subscribe("jobs.ttl", "w", kind="shared", dead_letter_topic="jobs.ttl.dlq")
        letters = client.subscribe("jobs.ttl.dlq", "reader", start="earliest")
        exclusive = client.subscribe("jobs.ttl", "x")
        lines(hedwig("publish", "jobs.ttl", "too late", "--delay", "3s", hub=hub))
        lines(hedwig("publish", "jobs.ttl", "own ttl", "--delay", "3s", "--ttl", "1h", hub=hub))
        lines(hedwig("publish", "jobs.ttl", "now", hub=hub))
        got = []
        while len(got) < 2:
            message = member.receive(timeout=30)
            assert message is not None, f"only {got} came"
            got.append(message.payload)
            member.ack(message)
        assert got == [b"now", b"own ttl"]
        letter = letters.receive(timeout=30)
        assert letter.payload == b"too late" and letter.properties["hedwig.original_seq"] == b"1"
        # The exclusive subscriber takes them in seq-id order: "now" waits behind the
        # delayed ones, and its TTL (the topic's) passes meanwhile; the next message after
        # it shows it was passed over.
        taken = exclusive.receive(timeout=30)
        assert (taken.seq, taken.payload) == (2, b"own ttl")
        client.publish("jobs.ttl", b"after", ttl=3600)
        taken = exclusive.receive(timeout=30)
        assert (taken.seq, taken.payload) == (4, b"after")
        exclusive.ack(taken)
        assert client.stats()["delivery"]["ttl_expired"] == before + 3
        assert client.describe("jobs.ttl")["ttl_ms"] == 2000
        with pytest.raises(TopicExists, match="ttl of 2000 ms"):
            client.create_topic("jobs.ttl", ttl=5)
        assert client.create_topic("parts.ttl", partitions=2, ttl=5)["ttl_ms"] == 5000
        assert client.describe("parts.ttl.p-1")["ttl_ms"] == 5000, "every partition has it"


def test_create_topic_carries_a_ttl_after_the_partition_count_and_refuses_a_bad_one():
    body = encode_create_topic("t", partitions=3, ttl_ms=topic_ttl_ms(1.5))
    assert decode_create_topic(body) == CreateTopic("t", False, 3, 1500)
    assert decode_create_topic(encode_create_topic("t", ttl_ms=1)) == CreateTopic("t", False, 0, 1)
    assert encode_create_topic("t") == b"\x01t", "a plain creation is the body of old"
    with pytest.raises(RequestRefused, match="ttl is 1 ms"):
        decode_create_topic(b"\x01t\x04" + bytes(8))
    with pytest.raises(ValueError, match="seconds > 0"):
        topic_ttl_ms(0)
    assert topic_ttl_ms(None) == 0 and topic_ttl_ms(0.0001) == 1
