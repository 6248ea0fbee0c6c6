"""Compacted topics between regions, real hub processes on 127.0.0.1: a region whose
relay of a compacted topic was behind when its neighbour (parent or child) compacted it gets the latest of
every key with each message's own origin seq-id (the origin's gaps kept), then follows
the tail; a compacted topic receiving a relay takes it, and compacting the relayed copy
keeps every message's origin seq-id (the copy's own seq-ids have other gaps)."""

import pytest

from hedwig.client import Client
from hedwig.protocol import Op
from hedwig.protocol.messageset import encode_message_set
from tests.region.hubs import start_tree, wait_until

SHAPE = {"root": None, "leaf": "root"}
# A ledger every 3 entries, so that compaction finds sealed ledgers; no background compaction.
LOG = {"max_ledger_entries": 3, "compaction_interval_s": 0}


@pytest.fixture
def tree(tmp_path):
    hubs = start_tree(tmp_path, SHAPE, log=LOG)
    yield hubs
    for hub in hubs.values():
        hub.stop()


def publish_keyed(client, topic: str, pairs):
    """Publish (key, payload) pairs as one message set; (first, last) seq-ids."""
    message_set = encode_message_set([payload for _, payload in pairs], None, [key for key, _ in pairs])
    return client._call(Op.PUBLISH, topic, topic, message_set)


def relayed(messages):
    return [(bytes(m.key), bytes(m.payload), m.origin_region, m.origin_seq) for m in messages]


@pytest.mark.parametrize("compacting, behind", [("root", "leaf"), ("leaf", "root")])
def test_a_region_behind_a_compaction_gets_the_latest_of_each_key_at_its_origin_seq_ids(
    tree, compacting, behind
):
    """Down (the parent compacts, the child's relay subscription there is behind) and up
    (the child compacts, its relay to the parent is behind: RELAY_PUBLISH of sparse entries)."""
    topic = f"table-{compacting}-to-{behind}"
    source, copy = tree[compacting], tree[behind]
    with Client(source.address) as client:
        client.create_topic(topic, compaction=True)
    copy.client().subscribe(topic, "app", start="earliest")  # (the interest)
    wait_until(lambda: source.relays_out_to(topic) >= {behind}, f"{compacting} relaying to {behind}")
    with Client(source.address) as client:
        publish_keyed(client, topic, [(b"k0", b"r0-k0"), (b"k1", b"r0-k1")])
    wait_until(lambda: copy.last_seq(topic) == 2, f"{behind} stored the first round")
    # The copy's region is away while the source publishes more rounds and compacts them:
    # its relay subscription stays at seq-id 2, before what the compaction rewrites.
    copy.stop()
    with Client(source.address) as client:
        for r in range(1, 10):
            publish_keyed(client, topic, [(b"k%d" % k, b"r%d-k%d" % (r, k)) for k in range(3)])
        report = client.compact(topic)
        assert report["span"] is not None and report["span"][0] == 1
        at_source = client.read(topic)
    kept = [m.seq for m in at_source]
    assert len(kept) < at_source[-1].seq  # (compacted: the source's seq-ids have gaps)
    copy.start()
    wait_until((tree["leaf"].linked), "leaf linked again")
    subscription = copy.client().subscribe(topic, "app")
    want = [(b"k0", b"r0-k0", compacting, 1), (b"k1", b"r0-k1", compacting, 2)]
    want += relayed(m for m in at_source if m.seq > 2)
    got = [subscription.receive(timeout=30) for _ in want]
    assert relayed(got) == want
    assert [m.seq for m in got] == list(range(1, len(want) + 1))  # (the copy's own, dense)
    # ... then the tail, at its origin seq-id.
    with Client(source.address) as client:
        first, _ = publish_keyed(client, topic, [(b"k1", b"tail")])
    assert relayed([subscription.receive(timeout=30)]) == [(b"k1", b"tail", compacting, first)]


def test_a_compacted_topic_takes_a_relay_and_compacting_it_keeps_origin_seq_ids(tree):
    topic = "table-copy"
    root, leaf = tree["root"], tree["leaf"]
    with Client(leaf.address) as client:
        client.create_topic(topic, compaction=True)
        for n in range(6):  # leaf seq-ids 1..6, all but the latest gone at compaction
            publish_keyed(client, topic, [(b"own", b"own-%d" % n)])
    leaf.client().subscribe(topic, "app", start="earliest")
    wait_until(lambda: root.relays_out_to(topic) >= {"leaf"}, "root relaying to leaf")
    with Client(root.address) as client:
        publish_keyed(client, topic, [(b"first-a", b"a"), (b"first-b", b"b")])  # root seq-ids 1, 2
    wait_until(lambda: leaf.last_seq(topic) == 8, "leaf stored the relayed entry")
    with Client(leaf.address) as client:
        for n in range(6, 12):  # sealing ledgers past the relayed entry
            publish_keyed(client, topic, [(b"own", b"own-%d" % n)])
        report = client.compact(topic)
        assert report["span"] is not None and report["span"][0] == 1 and report["span"][1] >= 8
        messages = client.read(topic)
    from_root = [m for m in messages if m.origin_region == "root"]
    # Kept at leaf seq-ids 7 and 8, after a gap of 6, with the root's seq-ids.
    assert [(m.seq, *relayed([m])[0]) for m in from_root] == [
        (7, b"first-a", b"a", "root", 1),
        (8, b"first-b", b"b", "root", 2),
    ]
    assert 1 not in [m.seq for m in messages]
    # Restarted, the leaf learns what it holds of the root from the compacted copy (its
    # origin seq-ids): the root's next message is new, stored once at its origin seq-id.
    leaf.stop()
    leaf.start()
    wait_until(leaf.linked, "leaf linked again")
    with Client(root.address) as client:
        first, _ = publish_keyed(client, topic, [(b"first-a", b"a2")])
    wait_until(lambda: leaf.last_seq(topic) == 15, "leaf stored the next relayed message")
    with Client(leaf.address) as client:
        last = client.read(topic, 15)
    assert relayed(last) == [(b"first-a", b"a2", "root", first)]
