"""Hostile RELAY_PUBLISH requests on a region link, against a real hub process over a raw
socket: every field is checked before the entry is queued, a bad request is answered
MALFORMED_REQUEST and breaks nothing, so the link's later relays of the same topic are
stored and answered, and the inbox holds no bytes once they are."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hedwig.client import Client
from hedwig.protocol import (
    Op,
    Status,
    decode_entry,
    encode_entry_header,
    encode_frame,
    encode_message_set,
)
from hedwig.protocol.messageset import MessageSetError
from hedwig.protocol.requests import decode_published, encode_hello
from hedwig.region.entries import RelayedPart
from hedwig.region.wire import encode_region_link, relay_publish_parts
from tests.hub.rawpeer import RawPeer
from tests.protocol.test_messageset_validation import raw_set
from tests.region.hubs import RegionHub

TIME_US = 1_700_000_000_000_000


def relayed(payloads, origin=b"leaf", origin_seq=1, via=b"", first_seq=1, message_set=None, count=None):
    """A stored entry as a child relays it, any field as given (well-formed or not)."""
    message_set = encode_message_set(payloads) if message_set is None else message_set
    count = len(payloads) if count is None else count
    return encode_entry_header(first_seq, count, TIME_US, origin, origin_seq, via) + message_set


def with_flags(entry: bytes, flags: int) -> bytes:
    return entry[:1] + bytes((flags,)) + entry[2:]


# name -> (entry, start, stop); each one a reader or the inbox could not take
HOSTILE = {
    "origin-not-utf8": (relayed([b"x"], origin=b"\xff\xfeleaf"), 0, 1),
    "via-not-utf8": (relayed([b"x"], via=b"\xc3"), 0, 1),
    "origin-not-a-region-name": (relayed([b"x"], origin=b"le af"), 0, 1),
    "origin-seq-zero": (relayed([b"x"], origin_seq=0), 0, 1),
    "origin-seqs-past-u64": (relayed([b"x", b"y"], origin_seq=(1 << 64) - 1), 0, 2),
    "seq-zero": (relayed([b"x"], first_seq=0), 0, 1),
    "reserved-flags": (with_flags(relayed([b"x"]), 0x80), 0, 1),
    "stop-past-the-entry": (relayed([b"x"]), 0, 2),
    "header-counts-more": (relayed([b"x"], count=2), 0, 2),
    "truncated-header": (relayed([b"x"])[:25], 0, 1),
    "properties-key-past-its-blob": (
        relayed([b"x"], message_set=raw_set([b"x"], [b"\x00\x09k\x00\x00\x00\x01v"])),
        0,
        1,
    ),
}


class LinkPeer(RawPeer):
    """A raw socket linked as child region `leaf`: it answers for nothing, and skips the
    parent's REGION_INTEREST frames to read its responses."""

    def __init__(self, address):
        super().__init__(address)
        self.send(encode_frame(Op.HELLO, 1, encode_hello("hostile-child")))
        assert self.reply()[1] is Status.SUCCESS
        self.send(encode_frame(Op.REGION_LINK, 2, encode_region_link("leaf")))
        assert self.reply()[1] is Status.SUCCESS

    reply = RawPeer.next_response  # (request id, status, message, payload)

    def relay(self, request_id, topic, entry, start, stop) -> None:
        self.send(b"".join(relay_publish_parts(request_id, topic, start, stop, entry)))


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    hub = RegionHub(tmp_path_factory.mktemp("hostile-relay"), "root").start()
    yield hub
    hub.stop()


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_bad_relay_is_refused_and_the_links_later_relays_are_stored_and_answered(root, case):
    topic = f"relayed-{case}"
    link = LinkPeer(root.address)
    try:
        data, start, stop = HOSTILE[case]
        link.relay(3, topic, data, start, stop)
        request_id, status, message, _payload = link.reply()
        assert (request_id, status) == (3, Status.MALFORMED_REQUEST), message
        # The same link, the same topic: stored and answered, in order.
        link.relay(4, topic, relayed([b"a", b"b"], origin_seq=1), 0, 2)
        link.relay(5, topic, relayed([b"c"], origin_seq=3, first_seq=3), 0, 1)
        answers = [link.reply() for _ in range(2)]
        assert [(i, s, tuple(decode_published(p))) for i, s, _m, p in answers] == [
            (4, Status.SUCCESS, (1, 2)),
            (5, Status.SUCCESS, (3, 3)),
        ]
        with Client(root.address) as client:
            stored = client.read(topic)
            assert [(m.payload, m.origin_region, m.origin_seq) for m in stored] == [
                (b"a", "leaf", 1),
                (b"b", "leaf", 2),
                (b"c", "leaf", 3),
            ]
            relay = client.stats()["regions"]["relay"]
            assert relay["pending_bytes"] == 0  # every relay answered: no bytes held for ever
            assert relay["failed_entries"] == 0  # refused at the door, never a failed entry
    finally:
        link.close()


# -- the entry check, unit level ----------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_relayed_part_refuses_each_hostile_entry_with_malformed_request(case):
    data, start, stop = HOSTILE[case]
    with pytest.raises(MessageSetError) as refused:
        RelayedPart(memoryview(data), start, stop)
    assert refused.value.status is Status.MALFORMED_REQUEST


@given(
    st.lists(st.tuples(st.integers(0, 1 << 10), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 3),
    st.integers(1, 4),
)
def test_any_mangled_entry_is_refused_with_message_set_error_or_fully_usable(changes, start, stop):
    entry = bytearray(
        relayed(
            [b"a", b"bb", b"ccc"],
            via=b"mid",
            message_set=encode_message_set([b"a", b"bb", b"ccc"], [{"k": b"v"}, None, {"\u00e9": b""}]),
        )
    )
    for at, value in changes:
        entry[at % len(entry)] = value
    try:
        part = RelayedPart(memoryview(bytes(entry)), start, stop)
    except MessageSetError:
        return
    assert 1 <= part.origin_first <= part.origin_last < 1 << 64
    assert struct.unpack_from("!I", entry, 10)[0] == part.count
    assert len(decode_entry("t", bytes(entry))) == part.count  # every reader decodes it


# -- the inbox: a hostile entry delivered down a link (the child's side) --------------------------


def test_an_entry_the_inbox_cannot_decode_fails_at_once_and_holds_nothing(tmp_path):
    from hedwig.region.inbox import RelaySource, SourceBroken
    from tests.region.harness import RegionHarness, failure_of, fired

    mid = RegionHarness(tmp_path).start()
    inboxes = mid.regions.inboxes
    parent = RelaySource("root")
    bad, start, stop = HOSTILE["origin-not-utf8"]
    assert failure_of(inboxes.receive("t", bad, start, stop, parent)).check(MessageSetError)
    # The source is broken (its link drops and re-reads), the inbox is not: nothing held.
    later = inboxes.receive("t", relayed([b"a"]), 0, 1, parent)
    assert failure_of(later).check(SourceBroken)
    assert inboxes.pending_bytes == 0
    assert fired(inboxes.receive("t", relayed([b"a"]), 0, 1, RelaySource("root"))) == (1, 1)
    assert inboxes.pending_bytes == 0
