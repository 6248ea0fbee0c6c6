"""How the commands show replies to people (hedwig.commands.describing / output), from the
replies' JSON: the cases a hub only reaches with time (every message consumed and
collected) or a region (a relay that has consumed nothing)."""

from hedwig.commands.describing import format_description
from hedwig.commands.output import table


def test_a_topic_whose_messages_were_all_collected_says_so():
    info = {
        "topic": "t",
        "owner": "h:1",
        "first_seq": 4,
        "last_seq": 3,
        "ledgers": [{"ledger_id": 7, "first_seq": 4, "last_seq": 3, "bytes": 0}],
        "subscribers": [
            {
                "subscriber_id": "s",
                "consumed_seq": 3,
                "delivered_seq": 3,
                "backlog": 0,
                "window": 0,
                "state": "detached",
            }
        ],
        "relays": [
            {"direction": "in", "peer": "root", "consumed_seq": None, "lag": None, "state": "retrying"}
        ],
        "pending_appends": 0,
    }
    shown = format_description(info)
    assert "seq-ids:  none retained (last was 3, the next is 4)" in shown
    assert "  ledger 7: empty, 0 B" in shown
    assert "  from region root: consumed nothing yet, lag unknown, retrying" in shown
    assert "pending appends: 0" in shown
    assert not [line for line in shown if "None" in line or "4..3" in line]


def test_a_table_aligns_its_columns_and_shows_a_missing_value_as_a_dash():
    rows = [{"a": "x", "b": 1}, {"a": "longer", "b": None}]
    assert table(rows, [("a", "name"), ("b", "n")]) == ["NAME    N", "x       1", "longer  -"]


def test_a_message_with_typed_properties_prints_them_as_their_values():
    from argparse import Namespace

    from hedwig.commands.output import MessageFormat, format_properties, message_json
    from hedwig.protocol.message import Message

    properties = {"n": 150, "price": 9.5, "ok": True, "color": "red", "raw": b"\xff", "text": b"hi"}
    message = Message("t", 3, b"payload", 1_700_000_000_000_000, properties, "here", 3)
    assert message_json(message)["properties"] == {
        "n": 150,
        "price": 9.5,
        "ok": True,
        "color": "red",
        "raw": {"base64": "/w=="},
        "text": {"base64": "aGk="},  # (bytes, never to be read as the string "hi")
    }
    assert format_properties(properties) == "n=150,price=9.5,ok=true,color=red,raw:=\\xff,text:=hi"
    line = MessageFormat(Namespace(json=False, show_seq=False, properties=True)).line(message)
    assert line == b"n=150,price=9.5,ok=true,color=red,raw:=\\xff,text:=hi\tpayload\n"
