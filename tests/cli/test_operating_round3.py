"""Issue 37's command-line findings, each as the operator met it: the `hedwig` command a
process of its own against a real hub process. Each test failed before its fix."""

import json

from tests.cli.test_cli import hedwig, lines

# -- 6: resuming a filtered subscription without --filter keeps its filter --------------------


def test_subscribe_after_reset_without_filter_resumes_with_the_subscriptions_filter(hub):
    for color in ("blue", "red", "blue"):
        hedwig("publish", "orders-6", f"a {color} one", "--property", f"color={color}", hub=hub)
    first = hedwig("subscribe", "orders-6", "red-ones", "--from", "earliest", "--filter", "color = 'red'",
                   "--count", "1", hub=hub)  # fmt: skip
    assert lines(first) == ["a red one"]
    assert lines(hedwig("reset", "orders-6", "red-ones", "--to", "earliest", hub=hub))
    again = hedwig("subscribe", "orders-6", "red-ones", "--count", "1", hub=hub)
    assert lines(again) == ["a red one"]  # (the filter still selects: not "a blue one")
    [row] = json.loads(hedwig("subscriptions", "orders-6", "--json", hub=hub).stdout)
    assert row["filter"] == "color = 'red'"
    # Removing the filter is said explicitly: --replace-filter without --filter.
    hedwig("reset", "orders-6", "red-ones", "--to", "earliest", hub=hub)
    unfiltered = hedwig("subscribe", "orders-6", "red-ones", "--replace-filter", "--count", "3", hub=hub)
    assert lines(unfiltered) == ["a blue one", "a red one", "a blue one"]
    [row] = json.loads(hedwig("subscriptions", "orders-6", "--json", hub=hub).stdout)
    assert row["filter"] is None


# -- 5: keys per line, tombstones, KEY_REQUIRED naming --key -----------------------------------


def test_publish_parse_key_gives_each_line_its_key_and_an_empty_payload_is_a_tombstone(hub):
    assert lines(hedwig("create", "prices-5", "--compact", hub=hub))
    lines_in = b"apple\t1.10\npear\t2.20\napple\t1.30\npear\t\n"  # (pear's last: a tombstone)
    published = hedwig("publish", "prices-5", "--parse-key", stdin=lines_in, hub=hub)
    assert lines(published) == ["published 4 messages to prices-5: seq-ids 1..4"]
    rows = [json.loads(line) for line in lines(hedwig("read", "prices-5", "--json", hub=hub))]
    assert [(row["key"], row["payload"]) for row in rows] == [
        ("apple", "1.10"),
        ("pear", "2.20"),
        ("apple", "1.30"),
        ("pear", ""),
    ]
    # Another separator, as kafka-console-producer's key.separator.
    hedwig("publish", "prices-5", "--parse-key", "--key-separator", ":", stdin=b"plum:3.30\n", hub=hub)
    assert lines(hedwig("read", "prices-5", "--from", "5", "--key", hub=hub)) == ["plum\t3.30"]
    # A line without the separator stops the publish with one line saying so.
    refused = hedwig("publish", "prices-5", "--parse-key", stdin=b"no separator here\n", hub=hub)
    assert refused.returncode != 0
    assert refused.stderr.decode().splitlines() == [
        "hedwig publish: message 1 has no key separator ('\\\\t'): expected KEY\\tPAYLOAD"
        " (--key-separator to choose another)"
    ]


def test_a_keyless_publish_to_a_compacted_topic_names_key_and_parse_key(hub):
    assert lines(hedwig("create", "prices-5b", "--compact", hub=hub))
    refused = hedwig("publish", "prices-5b", "1.10", hub=hub)
    assert refused.returncode != 0
    (line,) = refused.stderr.decode().splitlines()
    assert line.startswith("hedwig publish: ") and "--key KEY" in line and "--parse-key" in line, line


# -- 14: read --properties shows each property's type -----------------------------------------


def test_read_shows_an_int_a_numeric_string_and_bytes_distinctly(hub):
    hedwig("publish", "typed-14", "x", "--property", "n=150", "--property", 's="150"',
           "--property", "raw:=150", "--property", "color=red", hub=hub)  # fmt: skip
    plain = lines(hedwig("read", "typed-14", "--properties", hub=hub))
    assert plain == ['n=150,s="150",raw:=150,color=red\tx']
    [row] = [json.loads(line) for line in lines(hedwig("read", "typed-14", "--json", hub=hub))]
    assert row["properties"] == {"n": 150, "s": "150", "raw": {"base64": "MTUw"}, "color": "red"}
    # What read prints, publish takes back: the same types.
    again = plain[0].split("\t")[0].split(",")
    hedwig("publish", "typed-14", "y", *[f"--property={p}" for p in again], hub=hub)
    assert lines(hedwig("read", "typed-14", "--from", "2", "--properties", hub=hub)) == [
        'n=150,s="150",raw:=150,color=red\ty'
    ]


# -- 7: a filter that most likely means something else is warned of ---------------------------


def test_subscribe_warns_of_a_filter_comparing_the_key_with_a_subtraction(hub):
    hedwig("publish", "users-7", "hello", "--key", "user-7", hub=hub)
    result = hedwig("subscribe", "users-7", "s", "--from", "earliest", "--filter", "key=user-7",
                    "--idle", "0.5", hub=hub)  # fmt: skip
    assert lines(result) == []  # (it selects nothing: as the grammar says, and now says so)
    warning = result.stderr.decode().splitlines()
    assert warning == [
        "hedwig subscribe: warning: --filter: key is text (the message key) and never equals a number:"
        " compare it with a quoted string; user-7 (column 5) is user minus 7, not a string:"
        " a string is quoted ('user-7')"
    ]
    quoted = hedwig("subscribe", "users-7", "q", "--from", "earliest", "--filter", "key = 'user-7'",
                    "--count", "1", hub=hub)  # fmt: skip
    assert lines(quoted) == ["hello"] and quoted.stderr == b""
