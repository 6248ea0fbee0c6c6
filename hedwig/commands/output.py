"""How the commands print: messages (plain lines, or one JSON object per line) and the
admin replies (JSON documents, or lines for people).

A message in JSON: {"topic", "seq", "time" (ISO-8601, UTC), "key", "properties", and
"payload" when the payload is UTF-8 text, else "payload_base64"}; the key is null for
none, a string when it is UTF-8, else {"base64": ...}, as a bytes property value is; a
typed one (a number, a boolean, a string) is that JSON value. Plain: the payload and a
newline, after "SEQ<TAB>TIME<TAB>" with --show-seq, "KEY<TAB>" with --key and
"NAME=VALUE,...<TAB>" with --properties.
"""

import base64
import json

from hedwig.commands.numbers import NOTHING, count


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


def message_json(message) -> dict:
    payload = bytes(message.payload)
    is_text, shown = _text(payload)
    properties = {}
    for key, value in (message.properties or {}).items():
        if not isinstance(value, bytes | bytearray | memoryview):
            properties[key] = value  # typed: str, int, float, bool
            continue
        properties[key] = _bytes_json(value)
    row = {
        "topic": message.topic,
        "seq": message.seq,
        "time": message.publish_time.isoformat(timespec="microseconds").replace("+00:00", "Z"),
        "key": None if message.key is None else _bytes_json(message.key),
        "properties": properties,
    }
    row["payload" if is_text else "payload_base64"] = shown
    return row


def _property_text(value) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def format_properties(properties) -> str:
    """KEY=VALUE pairs joined by commas (bytes values as UTF-8, undecodable bytes
    escaped; typed values as their text, booleans true / false)."""
    return ",".join(f"{key}={_property_text(value)}" for key, value in (properties or {}).items())


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
            prefix += ("" if message.key is None else _property_text(message.key)) + "\t"
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
