"""The parent's side of region links, byte for byte over StringTransports: REGION_LINK
answers and refusals, the interest snapshot and its changes, RELAY_PUBLISH only on a
link, and a relay subscriber that is never sent back what came from its own region yet
consumes past it."""

from hedwig.protocol import Op, decode_entry_header
from hedwig.protocol.requests import (
    decode_published,
    encode_consume,
    encode_subscribe,
    encode_unsubscribe,
)
from hedwig.protocol.responses import split_response
from hedwig.protocol.status import Status
from hedwig.region.wire import (
    InterestKind,
    decode_interest,
    decode_region_link_reply,
    encode_region_link,
    relay_publish_parts,
)
from tests.region.harness import RegionHarness, entry


def link(harness, region="leaf"):
    peer = harness.connect()
    peer.send(Op.REGION_LINK, encode_region_link(region))
    [(_id, response)] = peer.responses()
    return peer, response


def interest(peer):
    out = []
    for op, _id, body in peer.frames():
        assert op == Op.REGION_INTEREST
        out.append(decode_interest(body))
    return out


def relay_publish(peer, topic, data, start=0, stop=None):
    stop = decode_entry_header(data).count if stop is None else stop
    parts = relay_publish_parts(99, topic, start, stop, data)
    peer.send_raw(b"".join(parts))
    [(op, _id, body)] = peer.frames()
    assert op == Op.RESPONSE
    _op, status, message, payload = split_response(body)
    return status, message, decode_published(payload) if status is Status.SUCCESS else None


def test_a_child_is_answered_with_the_path_and_then_told_the_interest(tmp_path):
    world = RegionHarness(tmp_path, name="world").start()
    app = world.connect()
    app.send(Op.SUBSCRIBE, encode_subscribe("orders", "billing"))
    app.frames()
    peer, response = link(world)
    assert response.status is Status.SUCCESS
    assert peer.connection.is_hub_peer
    world.clock.advance(0)
    now_us = int(world.clock.seconds() * 1_000_000)  # when "billing" subscribed
    assert interest(peer) == [
        (InterestKind.WANT, [("orders", now_us)]),
        (InterestKind.HELD, []),
        (InterestKind.END, []),
    ]
    assert world.regions.stats()["children"][0]["region"] == "leaf"
    # Interest changes go to the linked child as they happen.
    other = world.connect()
    other.send(Op.SUBSCRIBE, encode_subscribe("news", "reader"))
    other.frames()
    assert interest(peer) == [(InterestKind.ADD, [("news", now_us)])]
    other.send(Op.UNSUBSCRIBE, encode_unsubscribe("news", "reader"))
    other.frames()
    assert interest(peer) == [(InterestKind.DROP, [("news", 0)])]


def test_the_reply_payload_is_the_parents_path(tmp_path):
    europe = RegionHarness(tmp_path, name="europe", parent="world").start()
    europe.regions.path.learned(["world"], True)
    peer = europe.connect()
    peer.send(Op.REGION_LINK, encode_region_link("paris"))
    [(_op, _id, body)] = peer.frames()
    _op, status, _message, payload = split_response(body)
    assert status is Status.SUCCESS
    assert decode_region_link_reply(payload) == ("europe", ["europe", "world"], True)


def test_a_child_with_the_parents_name_is_refused(tmp_path):
    world = RegionHarness(tmp_path, name="world").start()
    peer, response = link(world, "world")
    assert response.status is Status.REGION_REFUSED
    assert "region world is this hub's own region" in response.message
    assert not peer.connection.is_hub_peer
    assert world.regions.stats()["refused_links"] == 1


def test_a_child_closing_a_cycle_gets_the_path_but_no_link(tmp_path):
    europe = RegionHarness(tmp_path, name="europe", parent="world").start()
    peer, response = link(europe, "world")  # world is europe's parent: a cycle
    assert response.status is Status.SUCCESS  # the path goes back: the child refuses on it
    assert not peer.connection.is_hub_peer
    status, _message, _stored = relay_publish(peer, "t", entry(1, [b"a"], origin="world"))
    assert status is Status.REGION_REFUSED
    assert europe.regions.stats()["refused_links"] == 1


def test_relay_publish_is_taken_only_on_a_link_and_stores_once(tmp_path):
    world = RegionHarness(tmp_path, name="world").start()
    stranger = world.connect()
    status, message, _stored = relay_publish(stranger, "t", entry(1, [b"a"], origin="leaf"))
    assert status is Status.REGION_REFUSED and "REGION_LINK first" in message
    peer, _ = link(world)
    world.clock.advance(0)
    peer.frames()
    data = entry(1, [b"a", b"b"], origin="leaf", origin_seq=1)
    assert relay_publish(peer, "t", data) == (Status.SUCCESS, "", (1, 2))
    assert world.stored("t") == [("leaf", 1, b"a", "leaf"), ("leaf", 2, b"b", "leaf")]
    assert relay_publish(peer, "t", data) == (Status.SUCCESS, "", (0, 0))  # sent again: held
    assert len(world.stored("t")) == 2
    assert world.regions.inboxes.stats()["duplicate_entries"] == 1
    status, _message, _stored = relay_publish(peer, "t", entry(3, [b"c"], origin="leaf", origin_seq=3)[:-1])
    assert status is Status.MALFORMED_REQUEST


def test_a_relay_subscriber_is_not_sent_what_came_from_its_region_but_consumes_past_it(tmp_path):
    world = RegionHarness(tmp_path, name="world").start()
    peer, _ = link(world)
    world.clock.advance(0)
    peer.frames()
    peer.send(Op.SUBSCRIBE, encode_subscribe("t", "__region__leaf", window=0, force_attach=True))
    [(_id, response)] = peer.responses()
    assert response.status is Status.SUCCESS
    app = world.connect()
    app.publish("t", [b"local-1"])  # published here: relayed to leaf
    relay_publish(peer, "t", entry(1, [b"from-leaf"], origin="leaf"))  # came from leaf: not sent back
    app.publish("t", [b"local-2", b"local-3"])
    world.clock.advance(0)
    _responses, deliveries, _events = peer.split()
    assert [(start, stop, decode_entry_header(e).origin_region) for _h, start, stop, e in deliveries] == [
        (0, 1, "world"),
        (0, 2, "world"),
    ]
    handle = deliveries[0][0]
    # Consuming the last delivered entry covers the one passed over before it.
    peer.send(Op.CONSUME, encode_consume(handle, 4))
    [row] = [r for r in world.delivery.describe("t") if r["subscriber_id"] == "__region__leaf"]
    assert (row["consumed_seq"], row["backlog"]) == (4, 0)
    # Passed over with nothing outstanding, an entry is consumed at once.
    relay_publish(peer, "t", entry(2, [b"again"], origin="leaf", origin_seq=2))
    world.clock.advance(0)
    [row] = [r for r in world.delivery.describe("t") if r["subscriber_id"] == "__region__leaf"]
    assert (row["consumed_seq"], row["backlog"]) == (5, 0)
    assert peer.split()[1] == []


def test_a_region_that_links_again_replaces_its_previous_link(tmp_path):
    world = RegionHarness(tmp_path, name="world").start()
    first, _ = link(world)
    second, response = link(world)
    assert response.status is Status.SUCCESS
    assert first.closing and not second.closing
    assert [c["region"] for c in world.regions.stats()["children"]] == ["leaf"]
    status, _message, _stored = relay_publish(first, "t", entry(1, [b"a"], origin="leaf"))
    assert status is Status.REGION_REFUSED


def test_a_restarted_hub_learns_its_interest_from_the_metadata_store_a_step_at_a_time(tmp_path):
    from hedwig.meta.interface import NEW, SubscriptionState
    from tests.region.harness import fired

    first = RegionHarness(tmp_path, name="world").start()
    for i in range(1200):
        sid = "__region__leaf" if i % 2 else "billing"
        fired(first.metadata.put_topic(f"t{i}", [], NEW))
        fired(first.metadata.put_subscription(f"t{i}", sid, SubscriptionState(0, {}), NEW))
    again = RegionHarness(tmp_path, name="world", ledgers=first.ledgers, metadata=first.metadata)
    started = again.regions.start()
    assert not started.called  # the listing yields the reactor every few hundred topics
    peer = again.connect()
    peer.send(Op.REGION_LINK, encode_region_link("leaf"))
    assert peer.frames() == []  # a child waits for the interest to be known
    while not started.called:
        again.clock.advance(0)
    fired(started)
    assert len(again.regions.interest.wanted_from("leaf")) == 600  # the "billing" half
    assert len(again.regions.interest.wanted_from("paris")) == 1200
    [(_op, _id, body)] = peer.frames()[:1]
    assert split_response(body)[1] is Status.SUCCESS


def test_a_subscription_can_be_deleted_before_its_topic_was_opened_since_a_restart(tmp_path):
    # (a child ends its relay subscription at a parent that restarted meanwhile)
    from tests.region.harness import fired

    first = RegionHarness(tmp_path, name="world").start()
    app = first.connect()
    app.send(Op.SUBSCRIBE, encode_subscribe("t", "billing"))
    app.frames()
    fired(first.logs.close())
    again = RegionHarness(tmp_path, name="world", ledgers=first.ledgers, metadata=first.metadata).start()
    peer = again.connect()
    peer.send(Op.UNSUBSCRIBE, encode_unsubscribe("t", "billing"))
    [(_id, response)] = peer.responses()
    assert response.status is Status.SUCCESS
    peer.send(Op.UNSUBSCRIBE, encode_unsubscribe("never", "billing"))
    [(_id, response)] = peer.responses()
    assert response.status is Status.CLIENT_NOT_SUBSCRIBED
