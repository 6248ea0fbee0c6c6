"""The small parts both clients share: addresses, start points, typed errors, redirects and
routes, reads over several replies, and what the hub's events mean to a subscription."""

from datetime import UTC, datetime, timedelta

import pytest

from hedwig.client import errors
from hedwig.client.reads import ReadCollector
from hedwig.client.start import parse_start, wire_start
from hedwig.client.subscription import BaseSubscription
from hedwig.protocol import Op, Status, SubscriptionEvent, encode_entry_header, encode_message_set
from hedwig.protocol.addresses import format_address, parse_address, parse_addresses
from hedwig.protocol.position import SubscriptionPosition
from hedwig.protocol.redirects import Routes, next_owner
from hedwig.protocol.requests import ReadRangeReply
from hedwig.protocol.responses import Response


@pytest.mark.parametrize(
    "text, address",
    [
        ("127.0.0.1:4081", ("127.0.0.1", 4081)),
        ("hub.example", ("hub.example", 4080)),
        (" hub:1 ", ("hub", 1)),
        ("[::1]:4090", ("::1", 4090)),
        ("[::1]", ("::1", 4080)),
    ],
)
def test_addresses(text, address):
    assert parse_address(text) == address
    assert parse_address(format_address(address)) == address


@pytest.mark.parametrize("text", ["", ":4080", "host:port", "host:0", "host:70000", "[::1", "[::1]x"])
def test_bad_addresses_say_what_is_wrong(text):
    with pytest.raises(ValueError, match=r"hub address|empty"):
        parse_address(text)


def test_address_lists_keep_order_and_drop_repeats():
    assert parse_addresses("a:1,b:2, a:1") == [("a", 1), ("b", 2)]
    assert parse_addresses(["a:1", ("b", 2)]) == [("a", 1), ("b", 2)]
    assert parse_addresses(("c", 3)) == [("c", 3)]
    with pytest.raises(ValueError):
        parse_addresses(" , ")


def test_start_points_on_the_wire():
    assert wire_start(None) is None
    assert wire_start("earliest") == "earliest" and wire_start("latest") == "latest"
    assert wire_start(42) == ("seq", 42)
    moment = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert wire_start(moment) == ("time", int(moment.timestamp()) * 1_000_000 + 678901)
    for bad in (0, -3, True, "soon", 1.5):
        with pytest.raises(ValueError):
            wire_start(bad)


def test_start_points_from_the_command_line():
    assert parse_start("earliest") == "earliest"
    assert parse_start("17") == 17
    assert parse_start("2026-01-02T03:04:05Z") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    east = parse_start("2026-01-02T03:04:05+02:00")
    assert east.utcoffset() == timedelta(hours=2)
    assert wire_start(east) == wire_start(datetime(2026, 1, 2, 1, 4, 5, tzinfo=UTC))
    with pytest.raises(ValueError, match="--from"):
        parse_start("yesterday")


def test_every_error_status_gets_its_class_and_keeps_the_status():
    for status in Status:
        if status is Status.SUCCESS:
            continue
        error = errors.error_for(status, "why")
        assert isinstance(error, errors.HedwigError)
        assert error.status is status
        assert "why" in str(error) and status.name in str(error)
        # 4xx: the request is at fault; 5xx (and not reaching a hub at all): retry later.
        # INVALID_MESSAGE_FILTER keeps Hedwig's 504, but a bad selector is the request's
        # fault: asking again never helps.
        request_fault = (
            400 <= status < 500 and status is not Status.COULD_NOT_CONNECT
        ) or status is Status.INVALID_MESSAGE_FILTER
        family = errors.RequestError if request_fault else errors.HubError
        assert isinstance(error, family)
    assert type(errors.error_for(Status.TOPIC_BUSY)) is errors.TopicBusy
    assert errors.error_for(Status.NOT_RESPONSIBLE_FOR_TOPIC, "h:1").owner == "h:1"
    unknown = errors.error_for(499, "new")
    assert isinstance(unknown, errors.RequestError) and unknown.status == 499


def test_redirect_rule():
    asked = [("a", 1)]
    assert next_owner("t", " b:2 ", asked, 2) == ("b", 2)
    with pytest.raises(errors.TooManyRedirects, match="named no owner"):
        next_owner("t", "", asked, 2)
    with pytest.raises(errors.TooManyRedirects, match="unusable"):
        next_owner("t", "b:port", asked, 2)
    with pytest.raises(errors.TooManyRedirects, match="loop"):
        next_owner("t", "a:1", [("a", 1), ("b", 2)], 5)
    with pytest.raises(errors.TooManyRedirects, match="more than 1"):
        next_owner("t", "c:3", [("a", 1), ("b", 2)], 1)


def test_a_redirect_may_name_the_owners_tls_port_and_a_tls_client_goes_there():
    asked = [("a", 1)]
    assert next_owner("t", "b:2:9876", asked, 2) == ("b", 2)
    assert next_owner("t", "b:2:9876", asked, 2, tls=True) == ("b", 9876)
    assert next_owner("t", "[::1]:2:9876", asked, 2, tls=True) == ("::1", 9876)
    assert next_owner("t", "[::1]:2", asked, 2) == ("::1", 2)
    with pytest.raises(errors.TooManyRedirects, match="unusable owner 'b:2'"):
        next_owner("t", "b:2", asked, 2, tls=True)  # a TLS client is not sent to a plain port
    with pytest.raises(errors.TooManyRedirects, match="unusable"):
        next_owner("t", "b:2:70000", asked, 2)
    routes = Routes(("a", 9876), tls=True)
    moved = Response(Op.PUBLISH, Status.NOT_RESPONSIBLE_FOR_TOPIC, "b:2:9877", None)
    assert routes.follow("t", moved, [("a", 9876)], 2) == ("b", 9877)


def test_routes_follow_a_redirect_and_remember_the_owner():
    routes = Routes(("a", 1))
    moved = Response(Op.PUBLISH, Status.NOT_RESPONSIBLE_FOR_TOPIC, "b:2", None)
    assert routes.follow("t", moved, [("a", 1)], 2) == ("b", 2)
    assert routes.address("t") == ("b", 2) and routes.address("u") == ("a", 1)
    assert routes.address(None) == ("a", 1), "requests without a topic go to the default hub"
    routes.forget("t")
    assert routes.address("t") == ("a", 1)
    with pytest.raises(errors.TopicBusy, match="elsewhere"):
        routes.follow("t", Response(Op.SUBSCRIBE, Status.TOPIC_BUSY, "elsewhere", None), [("a", 1)], 2)
    with pytest.raises(errors.NotResponsibleForTopic):
        routes.follow(None, moved, [("a", 1)], 2)
    assert routes.address("t") == ("a", 1), "a refused redirect is not remembered"


def _reply(entries, first_seq=1, last_seq=9):
    """A ReadRangeReply of entries given as (first seq, count, start, stop)."""
    encoded = []
    for first, count, start, stop in entries:
        payloads = [b"%d" % (first + i) for i in range(count)]
        encoded.append(
            (start, stop, encode_entry_header(first, count, 0, b"", first) + encode_message_set(payloads))
        )
    return ReadRangeReply(first_seq, last_seq, encoded)


def test_a_read_asks_again_from_where_a_reply_ended_and_stops_at_the_end():
    collector = ReadCollector("t", 2)
    assert collector.next_range() == (2, 0)
    collector.add(_reply([(1, 4, 1, 4)], last_seq=9))  # 2..4; the topic ends at 9
    assert collector.next_range() == (5, 9)
    collector.add(_reply([(5, 5, 0, 5)]))
    assert collector.next_range() is None
    assert [m.seq for m in collector.messages] == list(range(2, 10))
    assert [m.payload for m in collector.messages][:2] == [b"2", b"3"]


def test_a_read_stops_at_to_seq_at_an_empty_reply_and_when_nothing_moves():
    upto = ReadCollector("t", 1, 3)
    upto.add(_reply([(1, 5, 0, 5)]))  # more than asked: only 1..3 are kept
    assert [m.seq for m in upto.messages] == [1, 2, 3] and upto.next_range() is None
    empty = ReadCollector("t", 1)
    empty.add(_reply([], last_seq=5))
    assert empty.next_range() is None and empty.messages == []
    stuck = ReadCollector("t", 6, 9)
    stuck.add(_reply([(1, 5, 0, 5)]))  # nothing at or after 6 came back
    assert stuck.next_range() is None


class _Subscription(BaseSubscription):
    """Records what BaseSubscription.on_event makes of the hub's events."""

    def __init__(self):
        super().__init__(None, SubscriptionPosition("t", "s", "create_or_attach", None, 0, False), None)
        self.calls = []

    def _ended(self, error):
        self.calls.append(("ended", type(error)))

    def on_detached(self, topic_moved=False):
        self.calls.append(("detached", topic_moved))


@pytest.mark.parametrize(
    "event, call",
    [
        (SubscriptionEvent.SUBSCRIPTION_FORCED_CLOSED, ("ended", errors.SubscriptionClosed)),
        (SubscriptionEvent.TOPIC_MOVED, ("detached", True)),
        (99, ("detached", True)),  # an event newer than the client: subscribe again
    ],
)
def test_hub_events_end_or_detach_a_subscription(event, call):
    subscription = _Subscription()
    subscription.on_event(event)
    assert subscription.calls == [call]
