"""The Twisted client's acknowledgement-only subscriptions (deliver=False) against a
scripted hub: the SUBSCRIBE it sends, acks at once, resubscribing without moving the
pointer, and a delivery no hub may send."""

import pytest

from hedwig.client.errors import NoDeliveries
from hedwig.client.twisted import AckOnlySubscription
from hedwig.protocol import Op
from tests.client.test_twisted_client import Hub, connected, results


def ack_only(reactor, client, hub, **options):
    outcome = results([client.subscribe("t", "lake", deliver=False, **options)])
    hub.describe_answered()
    [(op, request_id, request)] = hub.take()
    assert op == Op.SUBSCRIBE
    return outcome, request_id, request


def test_the_subscribe_asks_for_no_delivery_and_the_subscription_has_no_queue():
    reactor, client, hub = connected(window=500)
    outcome, request_id, request = ack_only(reactor, client, hub, mode="create", start="earliest")
    asked = (request.mode, request.start, request.window, request.deliver)
    assert asked == ("create", "earliest", None, False)
    hub.send(hub.script.subscribed(request_id, 2, 0, 1))
    [subscription] = outcome
    assert isinstance(subscription, AckOnlySubscription) and subscription.attached
    with pytest.raises(NoDeliveries, match="t/lake was subscribed with deliver=False"):
        subscription.queue.get()
    [refused] = results([client.subscribe("t", "other", handler=print, deliver=False)])
    assert isinstance(refused.value, ValueError) and "no handler" in str(refused.value)


def test_each_ack_goes_out_at_once_whatever_ack_every_and_ack_delay_say():
    reactor, client, hub = connected(ack_every=100, ack_delay=5.0)
    outcome, request_id, _ = ack_only(reactor, client, hub)
    hub.send(hub.script.subscribed(request_id, 2, 10, 11))
    [subscription] = outcome
    subscription.ack(40)
    subscription.ack(40)
    subscription.ack(12)  # cumulative: nothing to say
    subscription.ack(41)
    assert [(op, c.handle, c.seq) for op, _, c in hub.take()] == [(Op.CONSUME, 2, 40), (Op.CONSUME, 2, 41)]
    assert reactor.getDelayedCalls() == [] or all(not c.active() for c in reactor.getDelayedCalls())


def test_after_a_drop_it_attaches_where_the_hub_is_and_sends_what_was_acknowledged_meanwhile():
    reactor, client, hub = connected()
    outcome, request_id, _ = ack_only(reactor, client, hub, mode="create", start="earliest")
    hub.send(hub.script.subscribed(request_id, 2, 0, 1))
    [subscription] = outcome
    subscription.ack(30)
    hub.take()
    hub.drop()
    subscription.ack(55)  # while detached: kept
    reactor.advance(0)
    again = Hub(reactor)
    [(op, request_id, request)] = again.take()
    assert (op, request.mode, request.start, request.deliver) == (Op.SUBSCRIBE, "attach", None, False)
    again.send(again.script.subscribed(request_id, 7, 30, 31))  # the hub kept 30
    [(op, _, consume)] = again.take()
    assert (op, consume.handle, consume.seq) == (Op.CONSUME, 7, 55)
    assert subscription.attached


def test_a_delivery_on_it_is_a_protocol_violation():
    reactor, client, hub = connected()
    _outcome, request_id, _ = ack_only(reactor, client, hub)
    hub.send(hub.script.subscribed(request_id, 2, 0, 1))
    hub.send(hub.script.delivery(2, 1, [b"never"]))
    assert hub.transport.disconnecting or hub.transport.disconnected
