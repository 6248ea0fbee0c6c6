"""Keys and typed properties between regions, real hub processes on 127.0.0.1: a set
published with keys and typed properties in one region reaches another region's
subscriber as it was published, and a filtered subscriber there is sent only what its
filter selects of the relayed messages."""

from hedwig.client import Client
from tests.region import test_compressed_relay
from tests.region.hubs import wait_for_interest

SHAPE = test_compressed_relay.SHAPE
tree = test_compressed_relay.tree  # the fixture: a root region and a leaf region


def test_keys_and_typed_properties_cross_regions_and_filters_select_among_them(tree):
    topic = "keyed-across"
    everything = tree["root"].client().subscribe(topic, "all", start="earliest")
    red = tree["root"].client().subscribe(topic, "red", start="earliest", filter="color = 'red' AND n > 1")
    tree["leaf"].client().subscribe(topic, "local", start="earliest")  # (both ways wanted)
    wait_for_interest(tree, SHAPE, topic)
    properties = [
        {"color": "red", "n": 2, "price": 1.5, "ok": True},
        {"color": "blue", "n": 3},
        {"color": "red", "n": 1},
        {"color": "red", "n": 10, "raw": b"\xff"},
    ]
    with Client(tree["leaf"].address) as publisher:
        publisher.publish_many(topic, [b"a", b"b", b"c", b"d"], properties, ["k-a", None, "k-c", b"k-d"])
    got = [everything.receive(timeout=30) for _ in range(4)]
    assert [(m.payload, m.key, m.properties, m.origin_region) for m in got] == [
        (b"a", b"k-a", properties[0], "leaf"),
        (b"b", None, properties[1], "leaf"),
        (b"c", b"k-c", properties[2], "leaf"),
        (b"d", b"k-d", properties[3], "leaf"),
    ]
    assert type(got[0].properties["price"]) is float and got[0].properties["ok"] is True
    selected = [red.receive(timeout=30) for _ in range(2)]
    assert [(m.payload, m.key) for m in selected] == [(b"a", b"k-a"), (b"d", b"k-d")]
