"""Keys, typed properties and filters on the command line, against a real hub process:
`hedwig publish --key K --property n=150`, `hedwig read` / `subscribe` showing keys and
typed properties (plain and JSON), `hedwig subscribe --filter` and what `subscriptions`
and `describe` say of the filter."""

import json

from hedwig.client import Client
from tests.cli.test_cli import hedwig, lines


def test_publish_with_a_key_and_typed_properties_reads_back_typed(hub):
    published = hedwig(
        "publish",
        "cli-typed",
        "hello",
        "--key",
        "user-7",
        "--property",
        "n=150",
        "--property",
        "price=9.5",
        "--property",
        "ok=true",
        "--property",
        "color=red",
        "--property",
        "raw:=bytes",
        hub=hub,
    )
    assert published.returncode == 0, published.stderr
    with Client(hub.address) as client:
        (message,) = client.read("cli-typed", 1, 1)
    assert message.key == b"user-7"
    assert message.properties == {"n": 150, "price": 9.5, "ok": True, "color": "red", "raw": b"bytes"}
    [row] = [json.loads(line) for line in lines(hedwig("read", "cli-typed", "--json", hub=hub))]
    assert row["key"] == "user-7"
    assert row["properties"] == {
        "n": 150,
        "price": 9.5,
        "ok": True,
        "color": "red",
        "raw": {"base64": "Ynl0ZXM="},
    }
    plain = lines(hedwig("read", "cli-typed", "--key", "--properties", hub=hub))
    assert plain == ["user-7\tn=150,price=9.5,ok=true,color=red,raw:=bytes\thello"]


def test_a_message_without_a_key_shows_null_and_an_empty_key_column(hub):
    hedwig("publish", "cli-keyless", "plain", hub=hub)
    [row] = [json.loads(line) for line in lines(hedwig("read", "cli-keyless", "--json", hub=hub))]
    assert row["key"] is None
    assert lines(hedwig("read", "cli-keyless", "--key", hub=hub)) == ["\tplain"]


def test_subscribe_with_a_filter_prints_only_what_it_selects(hub):
    for n in (50, 150, 250, 120):
        hedwig("publish", "cli-filter", f"n={n}", "--property", f"n={n}", hub=hub)
    shown = hedwig(
        "subscribe",
        "cli-filter",
        "mid",
        "--from",
        "earliest",
        "--filter",
        "n BETWEEN 100 AND 200",
        "--count",
        "2",
        "--json",
        hub=hub,
    )
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in lines(shown)]
    assert [(row["seq"], row["properties"]["n"]) for row in rows] == [(2, 150), (4, 120)]
    [row] = json.loads(hedwig("subscriptions", "cli-filter", "--json", hub=hub).stdout)
    assert (row["filter"], row["consumed_seq"]) == ("n BETWEEN 100 AND 200", 4)
    table = lines(hedwig("subscriptions", "cli-filter", hub=hub))
    assert table[0].split()[-1] == "FILTER" and table[1].endswith("n BETWEEN 100 AND 200")
    described = "\n".join(lines(hedwig("describe", "cli-filter", hub=hub)))
    assert "filter: n BETWEEN 100 AND 200" in described, described


def test_a_bad_filter_and_a_changed_filter_are_one_line_each(hub):
    hedwig("publish", "cli-filter-bad", "x", hub=hub)
    bad = hedwig("subscribe", "cli-filter-bad", "s", "--filter", "n >", "--idle", "0.2", hub=hub)
    assert bad.returncode != 0
    assert bad.stderr.decode().count("\n") == 1 and "column 4" in bad.stderr.decode(), bad.stderr
    made = hedwig("subscribe", "cli-filter-bad", "s", "--filter", "n > 1", "--idle", "0.2", hub=hub)
    assert made.returncode == 0, made.stderr
    changed = hedwig("subscribe", "cli-filter-bad", "s", "--filter", "n > 2", "--idle", "0.2", hub=hub)
    assert changed.returncode != 0
    error = changed.stderr.decode()
    assert error.count("\n") == 1 and "n > 1" in error and "--replace-filter" in error, error
    replaced = hedwig(
        "subscribe", "cli-filter-bad", "s", "--filter", "n > 2", "--replace-filter", "--idle", "0.2", hub=hub
    )
    assert replaced.returncode == 0, replaced.stderr
    [row] = json.loads(hedwig("subscriptions", "cli-filter-bad", "--json", hub=hub).stdout)
    assert row["filter"] == "n > 2"
