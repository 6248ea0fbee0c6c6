"""The examples section of `hedwig --help` and of each subcommand's help, as kafka's
console tools and the `nats` CLI show them: a few command lines to copy, each with what
it does. Written here once; hedwig/commands/main.py puts them under each parser.
"""

import argparse

# The top-level help's examples: a tour in the order a new user needs them (README.md).
OVERVIEW = [
    ("hedwig hub --data-dir ./data", "run a hub on 127.0.0.1:4080 (status page on 4081)"),
    ("hedwig publish greetings hello world", "publish two messages (creates the topic)"),
    ("tail -f app.log | hedwig publish logs", "one message per line of standard input"),
    ("hedwig read greetings", "print a topic from its start; no subscription is made"),
    ("hedwig subscribe greetings me --from earliest", "a durable subscription: resumes where it stopped"),
    ("hedwig subscribe jobs workers --shared --create", "one worker of a work queue (run several)"),
    ("hedwig topics", "the topics, each with the hub that owns it"),
    ("hedwig subscriptions", "every subscription with its lag"),
    ("hedwig --hub 10.0.0.5:4080 top", "a live view of another hub"),
]

# Each subcommand's examples, by its name.
EXAMPLES = {
    "hub": [
        ("hedwig hub", "127.0.0.1:4080, data in ./data, status page on :4081"),
        ("hedwig hub --port 4090 --data-dir /var/lib/hedwig", "another hub beside it (status page on :4091)"),
        ("hedwig hub --conf hub.conf", "settings from a file (hedwig hub --example-conf > hub.conf)"),
        ("hedwig hub --zookeeper zk1:2181 --data-dir /shared", "one hub of a region of several"),
    ],
    "publish": [
        ("hedwig publish orders '{\"id\": 1}'", "one message"),
        ("hedwig publish orders a b c --property source=cli", "three messages, each with a property"),
        ("seq 1000 | hedwig publish numbers", "one message per line of standard input"),
        ("hedwig publish logs --compression zstd < app.log", "compressed message sets"),
    ],
    "subscribe": [
        ("hedwig subscribe orders billing", "new messages; a later run resumes after the last printed"),
        ("hedwig subscribe orders audit --from earliest --count 10", "the first ten, then stop"),
        ("hedwig subscribe orders billing --idle 5", "stop after 5 s without a message"),
        ("hedwig subscribe jobs workers --shared --create", "one member of a work queue"),
        ("hedwig subscribe orders s --json | jq .payload", "one JSON object per message"),
    ],
    "read": [
        ("hedwig read orders", "everything the topic holds; nothing is acknowledged"),
        ("hedwig read orders --from latest --follow", "new messages as they come (like tail -f)"),
        ("hedwig read orders --from 2026-11-24T09:00:00Z --count 5", "five from a point in time"),
        ("hedwig read orders.dlq --properties", "dead letters, with why they died"),
    ],
    "unsubscribe": [("hedwig unsubscribe orders billing", "delete the subscription and its position")],
    "topics": [
        ("hedwig topics", "each topic with the hub that owns it"),
        ("hedwig topics --json | jq -r '.[].topic'", "the names alone"),
    ],
    "hubs": [("hedwig hubs", "the region's live hubs, their topics and rates")],
    "describe": [
        ("hedwig describe orders", "seq-ids, ledgers, subscribers and their backlog, relays"),
        ("hedwig describe orders --json", "the same as one JSON document"),
    ],
    "stats": [
        ("hedwig stats", "operations, connections, cache, delivery, region"),
        ("hedwig stats --json | jq .ops.publish", "one part, for a script"),
    ],
    "subscriptions": [
        ("hedwig subscriptions", "every subscription of the region, with its owner and lag"),
        ("hedwig subscriptions orders", "those of one topic"),
    ],
    "create": [
        ("hedwig create orders", "make a topic before anything is published to it"),
        ("hedwig create prices --compact", "a compacted topic: the latest message of each key is kept"),
        ("hedwig create clicks --partitions 6", "a topic of 6 partitions, as a Kafka topic of 6"),
        ("hedwig create jobs --ttl 30s", "messages published without a ttl of their own expire 30 s after"),
    ],
    "compact": [("hedwig compact prices", "compact a compacted topic now: everything published before")],
    "delete": [
        ("hedwig delete scratch", "a topic without subscriptions"),
        ("hedwig delete orders --force", "with its subscriptions"),
    ],
    "reset": [
        ("hedwig reset orders billing --to earliest", "replay the whole topic"),
        ("hedwig reset orders billing --to 2026-11-24T09:00:00Z", "replay from a point in time"),
        ("hedwig reset orders billing --to latest", "skip the backlog"),
    ],
    "drain": [
        (
            "PYSPARK_PYTHON=.venv/bin/python hedwig drain --topics orders --out ./lake"
            " --checkpoint ./lake-cp --once",
            "needs the spark extra: make extras EXTRAS=spark (in a checkout)",
        ),
        (
            "PYSPARK_PYTHON=.venv/bin/python hedwig drain --topics prices --out ./prices-today --snapshot",
            "a compacted topic's table (one row per live key) written once",
        ),
    ],
    "completion": [('eval "$(hedwig completion bash)"', "completion in this shell (or zsh)")],
    "top": [
        ("hedwig top", "the hub on 127.0.0.1:4080"),
        ("hedwig --hub 10.0.0.5:4080 top", "another hub (its HTTP port is asked of it)"),
        ("hedwig top --count 1", "one snapshot, as plain lines"),
    ],
    "user": [
        ("HEDWIG_PASSWORD=... hedwig user --conf hub.conf add alice --publish 'orders.*'", "a user"),
        ("hedwig user --conf hub.conf list", "the users and their permissions"),
    ],
    "bench": [
        ("hedwig bench publish", "publish rate and request latency"),
        ("hedwig bench subscribe --clients 4", "delivery rate and latency"),
    ],
    "migrate": [
        (
            "hedwig migrate --data-dir /var/lib/hedwig --rados-conf /etc/ceph/ceph.conf --rados-pool hedwig",
            "a stopped hub's ledgers into a RADOS pool (then: hedwig hub --ledger-store rados ...)",
        ),
        ("hedwig migrate --conf hub.conf", "the same, with the pool its [rados] section names"),
    ],
}


def examples_text(examples) -> str:
    """The examples section: each command line, then what it does on the next line."""
    lines = ["examples:"]
    for command, what in examples:
        lines += [f"  {command}", f"      {what}"]
    return "\n".join(lines)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, keeping an examples section's lines as written (the
    descriptions are wrapped as usual)."""

    def _fill_text(self, text, width, indent):
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def add_examples(parser, name: str | None = None) -> None:
    """Put the examples of subcommand `name` (None: the overview) under `parser`'s help,
    before any epilog it has."""
    examples = OVERVIEW if name is None else EXAMPLES.get(name)
    if not examples:
        return
    text = examples_text(examples)
    parser.epilog = f"{text}\n\n{parser.epilog}" if parser.epilog else text
    parser.formatter_class = HelpFormatter
