"""The small parts both clients share: addresses, start points, typed errors, redirects."""

from datetime import UTC, datetime, timedelta

import pytest

from hedwig.client import errors
from hedwig.client.addresses import format_address, parse_address, parse_addresses
from hedwig.client.redirects import next_owner
from hedwig.client.start import parse_start, wire_start
from hedwig.protocol import Status


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
        request_fault = 400 <= status < 500 and status is not Status.COULD_NOT_CONNECT
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
