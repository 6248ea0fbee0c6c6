"""OwnerPublishing (hedwig.hub.forwarding), the publisher of a region hub's dead letters:
a topic owned here is published through the hub's own path, and what another hub says
of a forwarded set reaches the subscription in the terms it acts on. The forwarding
itself, between two hub processes on a real ZooKeeper, is in
tests/cluster/test_region_dead_letters.py."""

import pytest
from twisted.python.failure import Failure

from hedwig.hub.errors import NotOwner
from hedwig.hub.forwarding import OwnerPublishing
from hedwig.hub.peers import PeerClients
from hedwig.protocol import encode_message_set
from hedwig.protocol.errors import ConnectionLost, MessageTooLarge, NotAuthorized
from hedwig.protocol.messageset import MessageSetError
from hedwig.protocol.status import Status
from tests.hub.harness import HubHarness


@pytest.fixture
def harness(tmp_path):
    return HubHarness(tmp_path)


def test_a_topic_owned_here_is_published_through_the_hubs_own_path(harness):
    forwarding = OwnerPublishing(harness.parts.hub, PeerClients(harness.parts.hub, harness.clock))
    stored = []
    forwarding.publish("t.dlq", encode_message_set([b"a", b"b"])).addCallback(stored.append)
    harness.clock.advance(0.1)
    assert [(e.first_seq, e.last_seq) for e in stored] == [(1, 2)]
    assert forwarding.forwarded == 0 and not forwarding.peers._clients


def test_no_owner_named_is_the_hubs_failure_as_it_is(harness):
    forwarding = OwnerPublishing(harness.parts.hub, PeerClients(harness.parts.hub, harness.clock))
    failure = Failure(NotOwner("t.dlq", ""))
    assert forwarding._elsewhere(failure, "t.dlq", b"") is failure


@pytest.mark.parametrize(
    ("error", "acknowledged"),
    [
        (MessageTooLarge(Status.MESSAGE_TOO_LARGE, "a message of 2000 bytes"), True),
        (NotAuthorized(Status.NOT_AUTHORIZED, "publish on t.dlq"), False),
        (ConnectionLost(message="gone"), False),
    ],
)
def test_a_set_the_owner_refuses_as_such_is_a_message_set_error_and_the_rest_are_retried(
    harness, error, acknowledged
):
    """MessageSetError (a StatusError) is what makes the subscription acknowledge a dead
    letter that will never be taken; anything else delivers it again."""
    forwarding = OwnerPublishing(harness.parts.hub, PeerClients(harness.parts.hub, harness.clock))
    result = forwarding._failed(Failure(error), "127.0.0.1:4090", object())  # (a client since dropped)
    assert bool(result.check(MessageSetError)) is acknowledged
    if acknowledged:
        assert result.value.status is Status.MESSAGE_TOO_LARGE
        assert "127.0.0.1:4090" in result.value.reason
    else:
        assert result.value is error
