"""The administration ops against a real hub, over a raw connection as a hostile peer would
speak them: each malformed body is answered MALFORMED_REQUEST and the connection and the
hub go on; a forced delete ends a subscription attached elsewhere."""

import struct

import pytest

from hedwig.client import Client, SubscriptionClosed
from hedwig.protocol import Op, Status
from hedwig.protocol.layouts import str8
from tests.hub.test_subscribe_start_bounds import Peer


@pytest.mark.parametrize(
    "op, body",
    [
        (Op.CREATE_TOPIC, b""),
        (Op.CREATE_TOPIC, str8("t") + b"\x00"),
        (Op.DELETE_TOPIC, str8("admin-t") + b"\x80"),
        (Op.DELETE_TOPIC, str8("admin-t")),
        (Op.LIST_SUBSCRIPTIONS, b"\x09ab"),
        (Op.RESET_SUBSCRIPTION, str8("admin-t") + str8("s") + struct.pack("!BQ", 3, 2**64 - 1)),
        (Op.RESET_SUBSCRIPTION, str8("admin-t") + str8("s") + struct.pack("!BQ", 7, 1)),
    ],
)
def test_a_malformed_admin_request_is_refused_and_the_hub_goes_on(hub, op, body):
    with Client(hub.address) as client:
        client.publish("admin-t", "kept")
        peer = Peer(hub.address)
        try:
            assert peer.request(op, body).status is Status.MALFORMED_REQUEST
            # The same connection goes on, and the topic is untouched.
            assert peer.request(Op.LIST_TOPICS, b"").status is Status.SUCCESS
        finally:
            peer.close()
        assert b"kept" in [bytes(m.payload) for m in client.read("admin-t")]


def test_a_forced_delete_ends_a_subscription_attached_elsewhere(hub):
    with Client(hub.address) as holder, Client(hub.address) as admin:
        admin.publish("admin-gone", "a")
        subscription = holder.subscribe("admin-gone", "s", start="earliest")
        assert bytes(subscription.receive(timeout=10).payload) == b"a"
        assert admin.delete_topic("admin-gone", force=True)["subscriptions"] == ["s"]
        with pytest.raises(SubscriptionClosed):
            while subscription.receive(timeout=10) is not None:
                pass
        assert "admin-gone" not in admin.topics()
