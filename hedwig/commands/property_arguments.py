"""Typed message properties as the command line gives them (`--property`), for
`hedwig publish`:

    n=150           an int (decimal, no leading zero, within a signed 64-bit long)
    price=9.5       a float (a decimal point or an exponent: 9.5, 1e3, .5)
    ok=true         a bool (true or false, in any case)
    color=red       a str: anything else
    zip="02134"     a str, always: a JSON string (quotes and escapes as JSON has them)
    raw:=...        bytes: the argument's bytes as the shell passed them

so that a selector can compare them as numbers and booleans (`n BETWEEN 100 AND 200`),
not only as strings. An argument without `=`, or with an empty name, is a CommandError
saying the forms.
"""

import json
import os
import re

from hedwig.commands.common import CommandError

_INT = re.compile(r"[+-]?(0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[+-]?(([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)")
_LONG = range(-(2**63), 2**63)
FORMS = 'NAME=VALUE (an int, float, true/false or text), NAME="text" or NAME:=BYTES'


def property_argument(argument: str) -> tuple:
    """(name, value) of one `--property` argument."""
    name, equals, text = argument.partition("=")
    if not equals:
        raise CommandError(f"--property {argument!r}: expected {FORMS}")
    if name.endswith(":"):
        name = name[:-1]
        if not name:
            raise CommandError(f"--property {argument!r}: the property has no name")
        return name, os.fsencode(text)
    if not name:
        raise CommandError(f"--property {argument!r}: the property has no name")
    return name, _inferred(argument, text)


def _inferred(argument: str, text: str):
    if _INT.fullmatch(text):
        value = int(text)
        if value not in _LONG:
            raise CommandError(
                f'--property {argument!r}: {text} is beyond a 64-bit integer (as text: NAME="{text}")'
            )
        return value
    if _FLOAT.fullmatch(text):
        return float(text)
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            value = json.loads(text)
        except ValueError:
            raise CommandError(f"--property {argument!r}: {text} is not a JSON string") from None
        if isinstance(value, str):
            return value
    return text


def property_arguments(arguments) -> dict | None:
    """The properties of a command line's `--property` arguments (None for none); a name
    given twice takes its last value."""
    properties = dict(map(property_argument, arguments or ()))
    return properties or None
