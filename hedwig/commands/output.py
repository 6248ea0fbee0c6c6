"""How the commands print: messages (plain lines, or one JSON object per line) and the
admin replies (JSON documents, or lines for people).

A message in JSON: {"topic", "seq", "time" (ISO-8601, UTC), "key", "properties", and
"payload" when the payload is UTF-8 text, else "payload_base64"}; the key is null for
none, a string when it is UTF-8, else {"base64": ...}, as a bytes property value is; a
typed one (a number, a boolean, a string) is that JSON value, a bytes one always
{"base64": ...}. Plain: the payload and a newline, after "SEQ<TAB>TIME<TAB>" with
--show-seq, "KEY<TAB>" with --key and "NAME=VALUE,...<TAB>" with --properties, each
property in the syntax `hedwig publish --property` takes (n=150 an int, n="150" text,
raw:=... bytes).
"""

import base64
import json
import re

from hedwig.commands.common import CommandError
from hedwig.commands.numbers import NOTHING, count
from hedwig.commands.property_arguments import property_argument


def _text(value: bytes):
    """(is text, the value as text or base64)."""
    try:
        return True, value.decode("utf-8")
    except UnicodeDecodeError:
        return False, base64.b64encode(value).decode("ascii")


def _bytes_json(value):
    """Bytes in JSON: a string when they are UTF-8, else {"base64": ...}."""
    is_text, shown = _text(bytes(value))
    return shown if is_text else {"base64": shown}


def _bytes_property_json(value) -> dict:
    """A bytes property in JSON: always {"base64": ...}, so that it never reads as the
    string property it is not (a selector compares the two differently)."""
    return {"base64": base64.b64encode(bytes(value)).decode("ascii")}


def message_json(message) -> dict:
    payload = bytes(message.payload)
    is_text, shown = _text(payload)
    properties = {}
    for key, value in (message.properties or {}).items():
        if not isinstance(value, bytes | bytearray | memoryview):
            properties[key] = value  # typed: str, int, float, bool
            continue
        properties[key] = _bytes_property_json(value)
    row = {
        "topic": message.topic,
        "seq": message.seq,
        "time": message.publish_time.isoformat(timespec="microseconds").replace("+00:00", "Z"),
        "key": None if message.key is None else _bytes_json(message.key),
        "properties": properties,
    }
    row["payload" if is_text else "payload_base64"] = shown
    return row


def _property_text(name: str, value) -> str:
    """One property as `hedwig publish --property` takes it, so that its type shows."""
    if isinstance(value, bytes | bytearray | memoryview):
        return f"{name}:={bytes(value).decode('utf-8', 'backslashreplace')}"
    if isinstance(value, bool):
        return f"{name}={'true' if value else 'false'}"
    if isinstance(value, str) and not _reads_back_as_text(value):
        return f"{name}={json.dumps(value, ensure_ascii=False)}"  # text that would read as another type
    return f"{name}={value}"


_QUOTED = re.compile(r'[,\t\n\r"]|^$')  # text shown as a JSON string whatever it reads as


def _reads_back_as_text(value: str) -> bool:
    """Whether NAME=value, as `--property` reads it, is this text (not 150, true, ...)."""
    if _QUOTED.search(value):
        return False
    try:
        return property_argument(f"x={value}")[1] == value
    except CommandError:  # (an int beyond 64 bits)
        return False


def format_properties(properties) -> str:
    """NAME=VALUE pairs joined by commas, each in `--property`'s syntax so that its type
    shows: 150 an int, "150" a string (text that would read as a number, a boolean, or
    holds a comma, quote or tab, as a JSON string), raw:=... bytes, booleans true / false."""
    return ",".join(_property_text(key, value) for key, value in (properties or {}).items())


class MessageFormat:
    """The bytes one message prints as, as the options say."""

    def __init__(self, args):
        self.json = getattr(args, "json", False)
        self.show_seq = getattr(args, "show_seq", False)
        self.properties = getattr(args, "properties", False)
        self.key = getattr(args, "show_key", False)

    def line(self, message) -> bytes:
        if self.json:
            return json.dumps(message_json(message), ensure_ascii=False).encode("utf-8") + b"\n"
        prefix = ""
        if self.show_seq:
            prefix = f"{message.seq}\t{message.publish_time.isoformat(timespec='microseconds')}\t"
        if self.key:
            key = b"" if message.key is None else bytes(message.key)
            prefix += key.decode("utf-8", "backslashreplace") + "\t"
        if self.properties:
            prefix += format_properties(message.properties) + "\t"
        return prefix.encode("utf-8") + bytes(message.payload) + b"\n"


def print_json(value) -> None:
    print(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))


def print_reply(args, reply, lines_of) -> int:
    """A hub's reply as the read commands print it: one JSON document with --json, else
    the lines `lines_of(reply)` makes for people; the exit status (0)."""
    if args.json:
        print_json(reply)
    else:
        print("\n".join(lines_of(reply)))
    return 0


def readable(key: str) -> str:
    """A reply's field name for people: "last_seq" -> "last seq-id", "bytes_x" -> "bytes x"."""
    return key.replace("_seq", " seq-id").replace("_", " ")


def table(rows, columns) -> list[str]:
    """Rows (dicts) as aligned columns under upper-case headings: columns is [(key,
    heading)] or [(key, heading, render)], `render(value, row) -> str`. A column whose
    cells are all numbers (or "-") is aligned right, as numbers are read; None is "-"."""
    cells = [[column[1].upper() for column in columns]]
    for row in rows:
        line = []
        for column in columns:
            value = row.get(column[0])
            if len(column) > 2:
                line.append(column[2](value, row))
            elif value is None:
                line.append(NOTHING)
            elif isinstance(value, int | float) and not isinstance(value, bool):
                line.append(count(value))
            else:
                line.append(str(value))
        cells.append(line)
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    right = [all(_numeric(line[i]) for line in cells[1:]) and len(cells) > 1 for i in range(len(columns))]
    return [
        "  ".join(
            cell.rjust(width) if right[i] else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in cells
    ]


def _numeric(cell: str) -> bool:
    """A cell that shows a number ("1,234", "63 B", "12/s", "-")."""
    return cell == NOTHING or (
        cell[:1].isdigit()
        and cell.split(" ")[0].replace(",", "").replace(".", "").replace("/s", "").isdigit()
    )
