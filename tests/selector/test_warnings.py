"""Warnings for selectors that most likely mean something else (issue 37, point 7), and
the SUBSCRIBE reply that carries one."""

import pytest

from hedwig.protocol.requests import Subscribed, decode_subscribed, encode_subscribed
from hedwig.selector import parse
from hedwig.selector.warnings import selector_warnings


def warnings(text):
    return selector_warnings(text, parse(text))


@pytest.mark.parametrize(
    "text, said",
    [
        ("key=user-7", ["key is text", "user-7 (column 5) is user minus 7"]),
        ("region = eu-west", ["eu-west (column 10) is eu minus the property west"]),
        ("key BETWEEN 1 AND 9", ["key is text"]),
    ],
)
def test_a_selector_that_likely_means_a_string_is_warned_of(text, said):
    found = warnings(text)
    assert len(found) == len(said)
    for warning, start in zip(found, said, strict=True):
        assert warning.startswith(start), warning


@pytest.mark.parametrize(
    "text", ["key = 'user-7'", "n - 1 > 3", "n -1 > 3", "color = 'red' AND n > 100", "key IS NULL"]
)
def test_a_selector_meaning_what_it_says_is_not_warned_of(text):
    assert warnings(text) == []


def test_the_subscribe_reply_carries_a_warning_only_when_there_is_one():
    plain = encode_subscribed(3, 10, 11)
    assert decode_subscribed(plain) == Subscribed(3, 10, 11, "")
    warned = encode_subscribed(3, 10, 11, "key is text")
    assert len(warned) > len(plain) and warned.startswith(plain)  # (a client that knows none reads on)
    assert decode_subscribed(warned) == Subscribed(3, 10, 11, "key is text")
