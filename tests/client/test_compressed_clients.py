"""Compressed message sets between the three clients, through a real hub process: each
kind of client publishes with each codec and another kind reads what it published, by
subscription and by READ_RANGE, decompressed transparently; the hub stores the set as it
came (a READ_RANGE shows the compressed bytes, codec bits and all)."""

import json

import pytest

from hedwig.protocol.compression import CODECS_BY_NAME, set_codec
from hedwig.protocol.entry import decode_entry_header
from tests.client.every_client import CLIENTS


def log_lines(count: int, tag: str) -> list[bytes]:
    record = {"level": "info", "service": "checkout", "tag": tag, "msg": "order placed"}
    return [json.dumps({**record, "n": n}).encode() for n in range(count)]


@pytest.fixture
def opened():
    clients = []
    yield clients
    for client in clients:
        client.close()


@pytest.mark.parametrize("codec", sorted(CODECS_BY_NAME))
@pytest.mark.parametrize("publisher_kind", CLIENTS, ids=lambda kind: kind.name)
def test_a_set_compressed_by_one_client_is_read_plain_by_another(hub, opened, publisher_kind, codec):
    reader_kind = CLIENTS[(CLIENTS.index(publisher_kind) + 1) % len(CLIENTS)]
    topic = f"compressed-{publisher_kind.name}-{codec}"
    publisher = publisher_kind(hub.address, compression=codec)
    reader = reader_kind(hub.address)
    opened += [publisher, reader]
    subscription = reader.subscribe(topic, "reader", start="earliest")
    payloads = log_lines(50, codec)
    properties = [{"host": b"web-%d" % (n % 3)} for n in range(50)]
    assert publisher.call("publish_many", topic, payloads, properties) == list(range(1, 51))
    assert publisher.call("publish", topic, b"one more", {"k": b"v"}) == 51
    assert publisher.call("publish", topic, b"bare " * 20) == 52

    received = [subscription.receive() for _ in range(52)]
    assert [(m.seq, m.payload, m.properties) for m in received] == [
        *((n + 1, payloads[n], properties[n]) for n in range(50)),
        (51, b"one more", {"k": b"v"}),
        (52, b"bare " * 20, {}),
    ]
    assert [m.payload for m in reader.call("read", topic, 1, 52)] == [*payloads, b"one more", b"bare " * 20]
    # A single publish is compressed too (the Twisted and asyncio clients batch it).
    _, _, last = reader.call("read_range", topic, 52).entries[-1]
    assert set_codec(last, decode_entry_header(last).body_offset) == CODECS_BY_NAME[codec]

    # Stored as the publisher sent it: compressed with its codec, and smaller than plain.
    reply = reader.call("read_range", topic, 1)
    _, _, entry = reply.entries[0]
    body_offset = decode_entry_header(entry).body_offset
    assert set_codec(entry, body_offset) == CODECS_BY_NAME[codec]
    assert len(entry) - body_offset < sum(map(len, payloads)) / 2


@pytest.mark.parametrize("kind", CLIENTS, ids=lambda kind: kind.name)
def test_an_uncompressed_client_still_sends_plain_sets(hub, opened, kind):
    topic = f"plain-{kind.name}"
    client = kind(hub.address)
    opened.append(client)
    client.call("publish_many", topic, log_lines(10, "plain"))
    _, _, entry = client.call("read_range", topic, 1).entries[0]
    assert set_codec(entry, decode_entry_header(entry).body_offset) == 0
