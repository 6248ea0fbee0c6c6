"""A PUBLISH whose properties a reader could not decode, against a real hub process over a
raw socket: refused with MALFORMED_REQUEST before anything is stored, so the topic stays
readable for every subscriber, and the connection and other topics go on."""

import pytest

from hedwig.client import Client
from hedwig.protocol import Op, Status, encode_frame, encode_message_set
from hedwig.protocol.requests import encode_hello, encode_publish
from tests.hub.rawpeer import RawPeer
from tests.protocol.test_messageset_validation import raw_set
from tests.receiving import receive_all

_KV = b"\x00\x01k\x00\x00\x00\x01v"

HOSTILE = {
    "key-length-past-the-blob": raw_set([b"a"], [b"\x00\x09k\x00\x00\x00\x01v"]),
    "value-length-past-the-blob": raw_set([b"a"], [b"\x00\x01k\x00\x00\x00\x09v"]),
    "key-not-utf8": raw_set([b"a"], [b"\x00\x02\xff\xfe\x00\x00\x00\x01v"]),
    "key-into-the-next-blob": raw_set([b"a", b"b"], [b"\x00\x05k", b"\x00\x00\x00\x00" + _KV]),
    "second-message-bad": raw_set([b"a", b"b"], [_KV, b"\x00"]),
}


@pytest.fixture
def peer(hub):
    peer = RawPeer(hub.address)
    peer.send(encode_frame(Op.HELLO, 1, encode_hello("hostile")))
    assert peer.response()[1].status is Status.SUCCESS
    yield peer
    peer.close()


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_publish_with_undecodable_properties_is_refused_and_the_topic_stays_readable(hub, peer, case):
    topic = f"hostile-{case}"
    with Client(hub.address) as client:
        early = client.subscribe(topic, "early", start="earliest")  # attached before the bad publish
        peer.send(encode_frame(Op.PUBLISH, 2, encode_publish(topic, HOSTILE[case])))
        request_id, refused = peer.response()
        assert (request_id, refused.status) == (2, Status.MALFORMED_REQUEST), refused
        assert "propert" in refused.message
        # The same connection goes on, on this topic and another; nothing refused took a seq-id.
        good = encode_message_set([b"fine"], [{"k": b"v"}])
        peer.send(encode_frame(Op.PUBLISH, 3, encode_publish(topic, good)))
        peer.send(encode_frame(Op.PUBLISH, 4, encode_publish(f"{topic}-other", good)))
        answers = [peer.response() for _ in range(2)]
        assert [(i, r.status, r.value.first_seq) for i, r in answers] == [
            (3, Status.SUCCESS, 1),
            (4, Status.SUCCESS, 1),
        ]
        # Every reader decodes the topic: a read, the subscriber attached before, a new one.
        [stored] = client.read(topic)
        assert (stored.seq, stored.payload, stored.properties) == (1, b"fine", {"k": b"v"})
        [pushed] = receive_all(early, 1, ack=False)
        assert (pushed.seq, pushed.payload, pushed.properties) == (1, b"fine", {"k": b"v"})
        late = client.subscribe(topic, "late", start="earliest")
        [pulled] = receive_all(late, 1, ack=False)
        assert (pulled.seq, pulled.properties) == (1, {"k": b"v"})
        assert client.describe(topic)["last_seq"] == 1
