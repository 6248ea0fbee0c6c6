"""TOPIC_OPTIONS byte for byte over StringTransports (the region harness: real topic logs,
metadata and region manager): a child tells its parent a topic's options as its link
starts relaying the topic and takes the parent's answer; a parent takes a child's
compaction for a topic it relays with that child only, answers with its own, and tells
the other children that speak the op when its copy changes; an older parent
(UNKNOWN_OPERATION) leaves the link relaying as before; a relayed set without keys is
stored in a compacted copy."""

from hedwig.protocol import Op
from hedwig.protocol.admin_requests import encode_create_topic
from hedwig.protocol.framing import frame_header
from hedwig.protocol.requests import encode_published, encode_subscribe
from hedwig.protocol.responses import response_frame, split_response
from hedwig.protocol.status import Status
from hedwig.region import link as states
from hedwig.region.wire import (
    COMPACTION,
    InterestKind,
    decode_topic_options,
    encode_topic_options,
    interest_frames,
    topic_options_frame,
)
from tests.region.harness import RegionHarness, entry, fired
from tests.region.test_link import ParentEnd, leaf, reactor  # noqa: F401 (a fixture)
from tests.region.test_parent_side import link, relay_publish


def compacted(harness, topic) -> bool:
    return harness.log(topic).compaction


def recorded(harness, topic) -> bool:
    """What the topic's metadata record says (what a restarted or another hub reads)."""
    return bool((fired(harness.metadata.get_topic(topic)).options or {}).get("compaction"))


def ask(peer, topic, options, request_id=77):
    peer.send(Op.TOPIC_OPTIONS, encode_topic_options(topic, options), request_id)
    [(op, answered, body)] = [f for f in peer.frames() if f[0] == Op.RESPONSE]
    assert (op, answered) == (Op.RESPONSE, request_id)
    _op, status, message, payload = split_response(body)
    return status, message, bytes(payload)


def pushed(peer) -> list:
    return [decode_topic_options(body) for op, _id, body in peer.frames() if op == Op.TOPIC_OPTIONS]


def relay_subscription(peer, topic, region="leaf"):
    peer.send(Op.SUBSCRIBE, encode_subscribe(topic, f"__region__{region}", "create", window=0))
    [body] = [body for op, _id, body in peer.frames() if op == Op.RESPONSE]  # (and interest)
    assert split_response(body)[1] is Status.SUCCESS


# -- the parent's side --------------------------------------------------------------------------


def test_a_parent_takes_a_childs_compaction_for_a_topic_it_relays_and_tells_its_other_children(tmp_path):
    world = RegionHarness(tmp_path, name="world").start()
    leaf_peer, _ = link(world, "leaf")
    other, _ = link(world, "other")  # a child that spoke TOPIC_OPTIONS: it is told
    older, _ = link(world, "older")  # one that never did (an older hub): never sent one
    world.clock.advance(0)
    for peer in (leaf_peer, other, older):
        peer.frames()
    relay_subscription(other, "prices", "other")  # other relays it down ...
    relay_subscription(older, "prices", "older")  # ... older too: the world wants it from leaf
    assert ask(other, "prices", 0) == (Status.SUCCESS, "", b"\x00")
    world.clock.advance(0)
    for peer in (leaf_peer, other, older):
        peer.frames()
    assert not compacted(world, "prices")
    assert ask(leaf_peer, "prices", COMPACTION) == (Status.SUCCESS, "", b"\x01")
    assert compacted(world, "prices") and recorded(world, "prices")
    assert pushed(other) == [("prices", COMPACTION)]
    assert older.frames() == [] and pushed(leaf_peer) == []  # (leaf: where it came from)
    assert world.regions.stats()["relay"]["compaction_adopted"] == 1
    # Asked again (the link came up again), nothing changes and nobody is told.
    assert ask(leaf_peer, "prices", COMPACTION) == (Status.SUCCESS, "", b"\x01")
    assert pushed(other) == []


def test_a_parent_takes_no_compaction_for_a_topic_it_does_not_relay_with_that_child(tmp_path):
    world = RegionHarness(tmp_path, name="world").start()
    world.connect().publish("ledger", [b"plain"])
    peer, _ = link(world)
    world.clock.advance(0)
    peer.frames()
    assert ask(peer, "ledger", COMPACTION) == (Status.SUCCESS, "", b"\x00")
    assert not compacted(world, "ledger")
    assert ask(peer, "unknown", COMPACTION) == (Status.SUCCESS, "", b"\x00")
    assert not fired(world.topics.exists("unknown"))  # (nothing created for it)


def test_topic_options_is_taken_only_on_a_link_and_checked(tmp_path):
    world = RegionHarness(tmp_path, name="world").start()
    stranger = world.connect()
    status, message, _ = ask(stranger, "prices", COMPACTION)
    assert status is Status.REGION_REFUSED and "REGION_LINK first" in message
    peer, _ = link(world)
    world.clock.advance(0)
    peer.frames()
    assert ask(peer, "prices", 0x80)[0] is Status.MALFORMED_REQUEST
    peer.send(Op.TOPIC_OPTIONS, encode_topic_options("prices", 1) + b"x", 78)
    [(_id, response)] = peer.responses()
    assert response.status is Status.MALFORMED_REQUEST
    status, _message, _ = ask(peer, "bad topic!", COMPACTION)
    assert status is Status.INVALID_TOPIC


def test_a_compacted_copy_stores_a_relayed_set_without_keys(tmp_path):
    """Published at its origin before the origin was compacted: refusing it would stop the
    link's relaying of every topic for good (it is re-sent on every reconnect)."""
    world = RegionHarness(tmp_path, name="world").start()
    peer, _ = link(world)
    world.clock.advance(0)
    peer.frames()
    world.connect().send(Op.CREATE_TOPIC, encode_create_topic("prices", True))
    assert compacted(world, "prices")
    keyless = entry(1, [b"keyless"], origin="leaf")
    assert relay_publish(peer, "prices", keyless) == (Status.SUCCESS, "", (1, 1))
    assert world.stored("prices") == [("leaf", 1, b"keyless", "leaf")]


# -- the child's side ---------------------------------------------------------------------------


def linked_leaf(tmp_path, reactor):  # noqa: F811
    harness = leaf(tmp_path, reactor)
    parent = ParentEnd(reactor)
    parent.handshake()
    parent.send(*interest_frames(InterestKind.WANT, ["prices"]), *interest_frames(InterestKind.END, []))
    harness.clock.advance(0)
    assert parent.frames() == []  # (its TOPIC_OPTIONS set aside: parent.topic_options)
    return harness, parent


def test_a_child_tells_its_options_as_a_relay_up_starts_and_takes_the_parents_answer(tmp_path, reactor):  # noqa: F811
    harness, parent = linked_leaf(tmp_path, reactor)
    [(_op, request_id, body)] = parent.topic_options
    assert decode_topic_options(body) == ("prices", 0)
    parent.send(response_frame(request_id, Op.TOPIC_OPTIONS, payload=bytes([COMPACTION])))
    assert compacted(harness, "prices") and recorded(harness, "prices")


def test_a_child_takes_what_its_parent_tells_it_of_a_topic_it_relays(tmp_path, reactor):  # noqa: F811
    harness, parent = linked_leaf(tmp_path, reactor)
    [(_op, request_id, _body)] = parent.topic_options
    parent.send(response_frame(request_id, Op.TOPIC_OPTIONS, payload=b"\x00"))
    assert not compacted(harness, "prices")
    parent.send(frame_header(Op.TOPIC_OPTIONS, 0, 2) + b"\x05p")  # malformed: ignored
    parent.send(topic_options_frame("elsewhere", COMPACTION))  # not relayed with the parent: ignored
    parent.send(topic_options_frame("prices", COMPACTION))
    assert harness.regions.link.state == states.RELAYING
    assert compacted(harness, "prices")
    assert not fired(harness.topics.exists("elsewhere"))


def test_a_parent_that_does_not_know_topic_options_is_relayed_to_as_before(tmp_path, reactor):  # noqa: F811
    harness, parent = linked_leaf(tmp_path, reactor)
    [(_op, request_id, _body)] = parent.topic_options
    parent.send(
        response_frame(request_id, Op.TOPIC_OPTIONS, Status.UNKNOWN_OPERATION, "unknown operation 19")
    )
    link = harness.regions.link
    assert link.state == states.RELAYING and not link.session.takes_options
    # The link goes on relaying, and sends no TOPIC_OPTIONS any more.
    parent.send(interest_frames(InterestKind.ADD, [("rates", 0)])[0])
    peer = harness.connect()
    peer.publish("rates", [b"a"])
    harness.clock.advance(0)
    [(op, relay_id, _body)] = parent.frames()
    assert op == Op.RELAY_PUBLISH
    parent.send(response_frame(relay_id, Op.RELAY_PUBLISH, payload=encode_published(1, 1)))
    assert len(parent.topic_options) == 1
