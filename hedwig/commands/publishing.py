"""`hedwig publish`: the arguments as messages, or standard input one message per line.

Standard input streams: a line is sent within --linger-ms of its arrival (`tail -f log |
hedwig publish logs` publishes as the log grows), and lines are batched into one
publish only as they arrive together, up to STDIN_BATCH_MESSAGES or STDIN_BATCH_BYTES.
On a terminal, a long publish shows its count and rate on standard error.

Keys: `--key K` gives every message one key; `--parse-key` reads each message (line or
argument) as KEY, a separator (`--key-separator`, a tab by default) and the payload, as
kafka-console-producer's `parse.key=true` / `key.separator` do. A keyed message with an
empty payload (`K<TAB>` with nothing after, or an empty line with `--key K`) is a
tombstone: a compacted topic drops the key.

Times: `--delay 30s` / `--deliver-at TIME` deliver every message no earlier than then,
`--ttl 5m` lets it expire undelivered (protocol/schedule.py); a delay counts from each
publish of standard input's lines, as they are sent.
"""

import json
import os
import select
import sys
import time

from hedwig.commands.common import CommandError, client, client_command, duration_seconds, moment_seconds
from hedwig.commands.property_arguments import FORMS, property_arguments
from hedwig.protocol.errors import KeyRequired
from hedwig.protocol.schedule import scheduled_properties

STDIN_BATCH_MESSAGES = 1000
STDIN_BATCH_BYTES = 512 * 1024
DEFAULT_LINGER_MS = 5.0
_READ_BYTES = 64 * 1024
_PROGRESS_EVERY_S = 0.5


def add_publish(subparsers, client_options):
    parser = client_command(subparsers, client_options, publish)
    parser.add_argument(
        "topic", metavar="TOPIC", help="the topic (publishing creates it if it does not exist)"
    )
    parser.add_argument(
        "messages",
        nargs="*",
        default=[],  # (so argparse does not call it required: none means standard input)
        metavar="MESSAGE",
        help="messages, one per argument; none: one per line of standard input",
    )
    parser.add_argument(
        "--property",
        action="append",
        metavar="NAME=VALUE",
        help=f"a property set on every message (repeatable): {FORMS}; a value that reads as an"
        " int, a float or true/false is sent as one, so that filters compare it as such",
    )
    parser.add_argument(
        "--key",
        metavar="KEY",
        help="the key of every message (UTF-8 text; filters read it as `key`); a keyed message"
        " with an empty payload is a tombstone (a compacted topic drops the key)",
    )
    parser.add_argument(
        "--parse-key",
        action="store_true",
        help="read each message as KEY, the key separator, then the payload (kafka-console-producer's"
        " parse.key=true); nothing after the separator: a tombstone",
    )
    parser.add_argument(
        "--key-separator",
        default="\t",
        metavar="SEP",
        help="what separates the key from the payload with --parse-key (default a tab; key.separator)",
    )
    when = parser.add_mutually_exclusive_group()
    when.add_argument(
        "--delay",
        type=duration_seconds,
        metavar="DURATION",
        help="deliver each message to subscriptions no earlier than DURATION after it is"
        " published (30s, 5m, 250ms; stored at once)",
    )
    when.add_argument(
        "--deliver-at",
        type=moment_seconds,
        metavar="TIME",
        help="deliver each message no earlier than TIME (ISO 8601, UTC unless it says; or epoch seconds)",
    )
    parser.add_argument(
        "--ttl",
        type=duration_seconds,
        metavar="DURATION",
        help="a message not delivered within DURATION of its publish is not delivered (counted,"
        " and dead-lettered by a subscription that names a dead-letter topic)",
    )
    parser.add_argument(
        "--compression",
        choices=("none", "zstd", "lz4", "gzip"),
        default="none",
        help="compress each publish with a codec (zstd and lz4 need the compression extra);"
        " subscribers decompress whatever they receive",
    )
    parser.add_argument(
        "--linger-ms",
        type=float,
        default=DEFAULT_LINGER_MS,
        metavar="MS",
        help=f"send a line of standard input at most MS after it arrived (default {DEFAULT_LINGER_MS:g});"
        " lines that arrive meanwhile go in the same publish",
    )
    return parser


def stdin_batches(fd: int, linger_s: float, clock=time.monotonic):
    """Lines read from `fd` (without their newline) in batches: a batch is sent once
    `linger_s` passed since its first line arrived, or it is full, or input ended."""
    pending = b""
    batch, size, deadline = [], 0, None
    ended = False
    while not ended or batch:
        wait = None if deadline is None else max(0.0, deadline - clock())
        ready = (not ended) and select.select([fd], [], [], wait)[0]
        if ready:
            chunk = os.read(fd, _READ_BYTES)
            if not chunk:
                ended = True
                if pending:
                    batch.append(pending)
                    size += len(pending)
                    pending = b""
            else:
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    batch.append(line)
                    size += len(line)
                    if deadline is None:
                        deadline = clock() + linger_s
                    if len(batch) >= STDIN_BATCH_MESSAGES or size >= STDIN_BATCH_BYTES:
                        yield batch
                        batch, size, deadline = [], 0, None
                if batch and deadline is None:
                    deadline = clock() + linger_s
        if batch and (ended or clock() >= deadline):
            yield batch
            batch, size, deadline = [], 0, None


class KeyParser:
    """Splits each message into its key and payload at the first separator (--parse-key)."""

    def __init__(self, separator: str):
        if not separator:
            raise CommandError("--key-separator '': expected at least one character")
        self.separator = os.fsencode(separator)
        self.shown = separator.encode("unicode_escape").decode("ascii")
        self.count = 0  # messages split so far: a refusal names the line

    def split(self, batch) -> tuple:
        """([payload...], [key...]) of a batch of messages."""
        payloads, keys = [], []
        for message in batch:
            self.count += 1
            key, separator, payload = message.partition(self.separator)
            if not separator:
                raise CommandError(
                    f"message {self.count} has no key separator ({self.shown!r}): expected"
                    f" KEY{self.shown}PAYLOAD (--key-separator to choose another)"
                )
            if not key:
                raise CommandError(f"message {self.count} has an empty key: a key is at least one byte")
            payloads.append(payload)
            keys.append(key)
        return payloads, keys


class Progress:
    """Count and rate on standard error, when it is a terminal."""

    def __init__(self, topic: str, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.on = self.stream.isatty()
        self.topic = topic
        self.started = time.monotonic()
        self.shown_at = self.started
        self.shown = False

    def update(self, count: int) -> None:
        now = time.monotonic()
        if not self.on or now - self.shown_at < _PROGRESS_EVERY_S:
            return
        rate = count / max(now - self.started, 1e-9)
        self.stream.write(f"\rpublishing to {self.topic}: {count} messages, {rate:,.0f} msg/s ")
        self.stream.flush()
        self.shown_at, self.shown = now, True

    def done(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def publish(args) -> int:
    """publish messages (the arguments, or else one per line of standard input); publishing
    to a topic that does not exist creates it"""
    if not args.linger_ms >= 0:
        raise CommandError(f"--linger-ms {args.linger_ms:g}: expected 0 or more")
    properties = property_arguments(args.property)
    if args.key is not None and not args.key:
        raise CommandError("--key '': a key is at least one byte (leave --key out for none)")
    if args.key is not None and args.parse_key:
        raise CommandError("--key gives every message one key, --parse-key each its own: one of them")
    keys = KeyParser(args.key_separator) if args.parse_key else None
    if args.messages:
        batches = [[os.fsencode(message) for message in args.messages]]
    else:
        batches = stdin_batches(sys.stdin.fileno(), args.linger_ms / 1000.0)
    first = last = None
    count = 0
    progress = Progress(args.topic)
    try:
        hub_client = client(args, compression=args.compression)
    except ImportError as e:  # (CompressionUnavailable: names the extra to install)
        raise CommandError(str(e)) from None
    with hub_client as hub:
        try:
            for batch in batches:
                if keys is not None:
                    batch, batch_keys = keys.split(batch)
                else:
                    batch_keys = None if args.key is None else [args.key] * len(batch)
                batch_properties = scheduled_properties(
                    properties, time.time(), args.delay, args.deliver_at, args.ttl
                )
                seqs = hub.publish_many(
                    args.topic,
                    batch,
                    None if batch_properties is None else [batch_properties] * len(batch),
                    batch_keys,
                )
                first = seqs[0] if first is None else first
                last = seqs[-1]
                count += len(seqs)
                progress.update(count)
        except KeyRequired as e:
            raise CommandError(
                f"{e.message}: give each message a key (--key KEY, or --parse-key for KEY<TAB>MESSAGE lines)"
            ) from None
        finally:
            progress.done()
    if args.json:
        print(json.dumps({"topic": args.topic, "count": count, "first_seq": first, "last_seq": last}))
    elif count == 0:
        print(f"nothing to publish to {args.topic}", file=sys.stderr)
    elif count == 1:
        print(f"published 1 message to {args.topic}: seq-id {first}")
    else:
        print(f"published {count} messages to {args.topic}: seq-ids {first}..{last}")
    return 0
