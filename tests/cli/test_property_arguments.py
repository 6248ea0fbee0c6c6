"""Typed `--property` arguments: what each form gives, the errors, and that what they
give round-trips through a message set with its Python type."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hedwig.commands.common import CommandError
from hedwig.commands.property_arguments import property_argument, property_arguments
from hedwig.protocol.entry import decode_entry, encode_entry_header
from hedwig.protocol.messageset import encode_message_set


@pytest.mark.parametrize(
    ("argument", "name", "value"),
    [
        ("n=150", "n", 150),
        ("n=-7", "n", -7),
        ("n=+7", "n", 7),
        ("n=0", "n", 0),
        ("n=9223372036854775807", "n", 2**63 - 1),
        ("n=-9223372036854775808", "n", -(2**63)),
        ("price=9.5", "price", 9.5),
        ("price=-0.5", "price", -0.5),
        ("price=1e3", "price", 1000.0),
        ("price=.5", "price", 0.5),
        ("price=5.", "price", 5.0),
        ("ok=true", "ok", True),
        ("ok=FALSE", "ok", False),
        ("ok=True", "ok", True),
        ("color=red", "color", "red"),
        ("color=", "color", ""),
        ("zip=02134", "zip", "02134"),  # (a leading zero: text, not 2134)
        ("version=1.2.3", "version", "1.2.3"),
        ("word=nan", "word", "nan"),
        ("word=inf", "word", "inf"),
        ("word=0x1F", "word", "0x1F"),
        ('id="123"', "id", "123"),
        ('flag="true"', "flag", "true"),
        ('quoted="a \\"b\\" \\u00e9"', "quoted", 'a "b" \u00e9'),
        ('half="oops', "half", '"oops'),
        ("equation=a=b", "equation", "a=b"),
        ("a:b=1", "a:b", 1),
        ("raw:=abc", "raw", b"abc"),
        ("raw:=150", "raw", b"150"),
        ("raw:=", "raw", b""),
        ("caf\u00e9=x", "caf\u00e9", "x"),
        ("raw:=\udcff\udcfe", "raw", b"\xff\xfe"),  # (bytes the shell passed that are not UTF-8)
    ],
)
def test_each_form_gives_its_type(argument, name, value):
    found = property_argument(argument)
    assert found == (name, value)
    assert type(found[1]) is type(value)


@pytest.mark.parametrize(
    ("argument", "says"),
    [
        ("novalue", "expected NAME=VALUE"),
        ("=5", "has no name"),
        (":=5", "has no name"),
        ("n=9223372036854775808", "beyond a 64-bit integer"),
        ('s="unterminated \\"', "not a JSON string"),
    ],
)
def test_errors_say_what_to_write(argument, says):
    with pytest.raises(CommandError, match=says):
        property_argument(argument)


def test_several_arguments_make_one_mapping():
    assert property_arguments(["n=1", "s=x", "n=2"]) == {"n": 2, "s": "x"}
    assert property_arguments([]) is None
    assert property_arguments(None) is None


@given(st.text())
def test_any_value_gives_what_its_text_says_and_round_trips_with_its_type(text):
    try:
        name, value = property_argument(f"p={text}")
    except CommandError:
        assert text.lstrip("+-").isdigit() or text.startswith('"')  # (too big, or bad JSON)
        return
    if isinstance(value, bool):
        assert text.lower() == str(value).lower()
    elif isinstance(value, int):
        assert int(text) == value
    elif isinstance(value, float):
        assert float(text) == value
    else:
        assert value == text or (text.startswith('"') and json.loads(text) == value)
    entry = encode_entry_header(1, 1, 0, b"here", 1) + encode_message_set([b"payload"], [{name: value}])
    (decoded,) = decode_entry("t", entry)[0].properties.values()
    assert decoded == value and type(decoded) is type(value)
