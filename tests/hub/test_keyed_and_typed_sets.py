"""Keys and typed property values against a real hub process: a set carrying them is
stored and delivered as sent (push, read, a late subscriber, compressed too), an old
publisher's set is accepted and read as before, a malformed one is refused before
anything is stored, and a client's typed properties come back with their types."""

import pytest

from hedwig.client import Client
from hedwig.protocol import Op, Status, encode_frame
from hedwig.protocol.compression import compress_message_set
from hedwig.protocol.messageset import encode_message_set
from hedwig.protocol.requests import encode_hello, encode_publish
from tests.hub.rawpeer import RawPeer
from tests.protocol.test_keys_and_typed_properties import OLD_SETS, _extended, _typed_pair
from tests.receiving import receive_all

PROPERTIES = [{"n": 150, "price": 9.5, "ok": True, "color": "red", "raw": b"\xff"}, None, {"b": b"x"}]
KEYS = [b"user-1", None, "k\u00e9"]


@pytest.fixture
def peer(hub):
    peer = RawPeer(hub.address)
    peer.send(encode_frame(Op.HELLO, 1, encode_hello("keyed")))
    assert peer.response()[1].status is Status.SUCCESS
    yield peer
    peer.close()


def publish(peer, topic: str, message_set: bytes, request_id: int = 2):
    peer.send(encode_frame(Op.PUBLISH, request_id, encode_publish(topic, message_set)))
    answered_id, response = peer.response()
    assert answered_id == request_id
    return response


def seen(messages) -> list:
    return [(m.seq, bytes(m.payload), m.properties, m.key) for m in messages]


EXPECTED = [
    (1, b"a", PROPERTIES[0], b"user-1"),
    (2, b"b", {}, None),
    (3, b"c", {"b": b"x"}, "k\u00e9".encode()),
]


@pytest.mark.parametrize("codec", [None, "zstd"])
def test_a_keyed_typed_set_reaches_every_reader_as_sent(hub, peer, codec):
    topic = f"keyed-{codec}"
    message_set = encode_message_set([b"a", b"b", b"c"], PROPERTIES, KEYS)
    if codec:
        message_set = compress_message_set(message_set, codec)
    with Client(hub.address) as client:
        early = client.subscribe(topic, "early", start="earliest")
        response = publish(peer, topic, message_set)
        assert (response.status, response.value.first_seq, response.value.last_seq) == (Status.SUCCESS, 1, 3)
        assert seen(receive_all(early, 3)) == EXPECTED
        assert seen(client.read(topic)) == EXPECTED
        late = client.subscribe(topic, "late", start="earliest")
        assert seen(receive_all(late, 3)) == EXPECTED


@pytest.mark.parametrize(("hex_set", "payloads", "properties"), OLD_SETS)
def test_an_old_publishers_set_is_accepted_and_read_as_before(hub, peer, hex_set, payloads, properties):
    topic = f"old-{len(hex_set)}"
    response = publish(peer, topic, bytes.fromhex(hex_set))
    assert response.status is Status.SUCCESS
    with Client(hub.address) as client:
        assert [(bytes(m.payload), m.properties, m.key) for m in client.read(topic)] == [
            (payload, props, None) for payload, props in zip(payloads, properties, strict=True)
        ]


HOSTILE = {
    "unknown-type": _extended([b"a"], [_typed_pair(b"k", 9, b"")]),
    "short-int": _extended([b"a"], [_typed_pair(b"k", 2, b"\x00")]),
    "boolean-2": _extended([b"a"], [_typed_pair(b"k", 4, b"\x02")]),
    "string-not-utf8": _extended([b"a"], [_typed_pair(b"k", 1, b"\xff")]),
    "typed-without-properties": _extended([b"a"], None, [b"k"], flags=0x30),
    "flag-bit-6": _extended([b"a"], None, [b"k"], flags=0x50),
    "keys-short": _extended([b"a", b"b"], None, [b"k", b"l"])[:-1],
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_malformed_extended_set_is_refused_and_the_topic_stays_readable(hub, peer, case):
    topic = f"hostile-ext-{case}"
    refused = publish(peer, topic, HOSTILE[case])
    assert refused.status is Status.MALFORMED_REQUEST, refused
    good = encode_message_set([b"fine"], [{"n": 1}], [b"k"])
    accepted = publish(peer, topic, good, request_id=3)
    assert (accepted.status, accepted.value.first_seq) == (Status.SUCCESS, 1)
    with Client(hub.address) as client:
        assert seen(client.read(topic)) == [(1, b"fine", {"n": 1}, b"k")]


def test_a_clients_typed_properties_come_back_with_their_types(hub):
    with Client(hub.address) as client:
        subscription = client.subscribe("typed-client", "s", start="earliest")
        client.publish("typed-client", b"one", properties=PROPERTIES[0])
        client.publish_many("typed-client", [b"two", b"three"], [{"s": "text"}, {"f": -0.5, "i": -(2**63)}])
        got = receive_all(subscription, 3)
    assert [m.properties for m in got] == [PROPERTIES[0], {"s": "text"}, {"f": -0.5, "i": -(2**63)}]
    assert type(got[0].properties["ok"]) is bool and type(got[0].properties["n"]) is int
