"""Dead letters: the messages a shared or pull subscription gave up on, as a message set
for its dead-letter topic.

After `max_deliveries` deliveries without an acknowledgement a message is published to
the subscription's dead-letter topic (default "<topic>.dlq") through the hub's one
publish path, with its payload, properties and key as they were (but its expiry: a
message dead-lettered because its TTL passed stays in the dead-letter topic) and four
properties more naming where it came from, then acknowledged. The messages of one give-back (a run
of one or more entries) go as one message set, one entry of the dead-letter topic; work
here is per message, but only for messages that failed that many times.
"""

from twisted.internet.defer import Deferred, succeed

from hedwig.protocol.entry import decode_entry
from hedwig.protocol.messageset import encode_message_set
from hedwig.protocol.schedule import EXPIRE_AT

# The properties a dead letter carries besides its own (docs/protocol.md, "Dead letters").
ORIGINAL_TOPIC = "hedwig.original_topic"
ORIGINAL_SEQ = "hedwig.original_seq"
SUBSCRIPTION = "hedwig.subscription"
DELIVERIES = "hedwig.deliveries"


def entries_covering(topic_log, first: int, last: int) -> Deferred:
    """Deferred[list of the entries holding first..last], from the cache (or the ledger)."""
    entries = []

    def step(seq):
        while seq <= last:
            found = topic_log.get(seq)
            if isinstance(found, Deferred):
                return found.addCallback(arrived)
            entries.append(found)
            seq = found.last_seq + 1
        return succeed(entries)

    def arrived(entry):
        entries.append(entry)
        return step(entry.last_seq + 1)

    return step(first)


def dead_letter_set(topic: str, subscriber_id: str, entries, first: int, last: int, count: int) -> bytes:
    """The message set of seq-ids first..last of `entries`, delivered `count` times."""
    payloads, properties, keys = [], [], []
    for entry in entries:
        start = max(first, entry.first_seq) - entry.first_seq
        stop = min(last, entry.last_seq) - entry.first_seq + 1
        for message in decode_entry(topic, entry.data, start, stop):
            payloads.append(message.payload)
            keys.append(message.key)
            kept = message.properties
            if EXPIRE_AT in kept:  # (a dead letter is kept until it is consumed, not expired again)
                kept = {name: value for name, value in kept.items() if name != EXPIRE_AT}
            properties.append(
                {
                    **kept,
                    ORIGINAL_TOPIC: topic.encode("utf-8"),
                    ORIGINAL_SEQ: str(message.seq).encode("ascii"),
                    SUBSCRIPTION: subscriber_id.encode("utf-8"),
                    DELIVERIES: str(count).encode("ascii"),
                }
            )
    return encode_message_set(payloads, properties, keys)
