"""A topic's compaction travels along the region tree with its relay, real hub processes
on 127.0.0.1 and the `hedwig` command as a user runs it: a topic created `--compact` in
one region is compacted in every region relaying it, up to the parent and down to the
children (the copies the relays and subscribers made plain before are made compacted),
and compacting a copy keeps the latest of each key at its origin seq-ids. A child hub
that does not know TOPIC_OPTIONS (an older hub: a raw link here) is never sent one and
goes on relaying."""

import pytest

from hedwig.client import Client
from hedwig.client.errors import KeyRequired
from hedwig.protocol import Op, encode_frame
from hedwig.protocol.requests import Subscribe, encode_hello, encode_subscribe_request
from hedwig.protocol.status import Status
from hedwig.region.wire import encode_region_link
from tests.hub.rawpeer import RawPeer
from tests.region.hubs import start_tree, wait_until
from tests.region.test_compacted_relay import LOG, publish_keyed, relayed
from tests.region.test_worked_example import hedwig

SHAPE = {"root": None, "east": "root", "west": "root"}


@pytest.fixture
def tree(tmp_path):
    hubs = start_tree(tmp_path, SHAPE, log=LOG)  # (LOG: a ledger every 3 entries)
    try:
        yield hubs
    finally:
        for hub in hubs.values():
            hub.stop()


def compacted(hub, topic: str) -> bool:
    with Client(hub.address, timeout=5) as client:
        return bool(client.describe(topic).get("compaction"))


@pytest.mark.parametrize("origin", ["east", "root"])
def test_a_topic_created_compact_in_one_region_is_compacted_in_every_region_relaying_it(tree, origin):
    """From east: up to the root (east's relay up), then down to west (the root's copy
    changed: it tells west). From the root: down to both children."""
    topic = "prices"
    source = tree[origin]
    assert "compacted topic" in hedwig(source, "create", topic, "--compact")
    copies = [hub for name, hub in tree.items() if name != origin]
    for hub in copies:  # a subscriber in each region: its copy is created plain here
        hub.client().subscribe(topic, "app", start="earliest")
    for hub in copies:
        wait_until(lambda h=hub: compacted(h, topic), f"{hub.name}'s {topic} compacted")
        assert "compacted: the latest message of each key is kept" in hedwig(hub, "describe", topic)
    # The copies take keyed messages only now, as the origin does ...
    with Client(tree["west"].address) as client, pytest.raises(KeyRequired):
        client.publish(topic, b"no key")
    # ... and compacting one keeps the latest of each key at its origin seq-ids.
    with Client(source.address) as client:
        for r in range(4):  # one entry each (COMPACT rolls west's open ledger first)
            publish_keyed(client, topic, [(b"k0", b"r%d-k0" % r), (b"k1", b"r%d-k1" % r)])
    west = tree["west"]
    wait_until(lambda: west.last_seq(topic) == 8, "west stored every round")
    assert "compacted seq-ids 1..8: 2 of 8 messages kept" in hedwig(west, "compact", topic)
    with Client(west.address) as client:
        kept = client.read(topic)
    assert [(m.seq, *relayed([m])[0]) for m in kept] == [
        (7, b"k0", b"r3-k0", origin, 7),
        (8, b"k1", b"r3-k1", origin, 8),
    ]


class OldChild(RawPeer):
    """A child region's hub older than TOPIC_OPTIONS, as a raw link: it relays a topic down
    (its relay subscription at the parent) and keeps every frame it is sent."""

    def __init__(self, address, topic: str):
        super().__init__(address)
        self.send(encode_frame(Op.HELLO, 1, encode_hello("hub of region old")))
        assert self.next_response()[1] is Status.SUCCESS
        self.send(encode_frame(Op.REGION_LINK, 2, encode_region_link("old")))
        assert self.next_response()[1] is Status.SUCCESS
        self.seen = []
        subscribe = Subscribe(topic, "__region__old", "create", None, 0, False)
        self.send(encode_frame(Op.SUBSCRIBE, 3, encode_subscribe_request(subscribe)))
        assert self.response_seen()[1] is Status.SUCCESS

    def frame_seen(self):
        frame = self.next_frame()
        self.seen.append(frame[0])
        return frame

    def response_seen(self):
        while True:
            op, request_id, body = self.frame_seen()
            if op == Op.RESPONSE:
                self.frames.insert(0, (op, request_id, body))
                self.seen.pop()
                return self.next_response()

    def delivery_seen(self) -> bytes:
        while True:
            op, _request_id, body = self.frame_seen()
            if op == Op.DELIVERY:
                return bytes(body)


def test_a_child_hub_that_does_not_know_topic_options_is_never_sent_one_and_goes_on_relaying(tree):
    topic = "rates"
    root, east, west = tree["root"], tree["east"], tree["west"]
    hedwig(east, "create", topic, "--compact")
    old = OldChild(root.address, topic)  # (the root's copy of the topic is created plain by it)
    try:
        west.client().subscribe(topic, "app", start="earliest")  # (east relays it up now)
        wait_until(lambda: compacted(root, topic), "the root's copy compacted")
        wait_until(lambda: compacted(west, topic), "west's copy compacted (told by the root)")
        # The root told west before anything published now reaches the old child.
        with Client(east.address) as client:
            publish_keyed(client, topic, [(b"k", b"after")])
        assert b"after" in old.delivery_seen()
        assert Op.TOPIC_OPTIONS not in old.seen and Op.DELIVERY in old.seen
    finally:
        old.close()
