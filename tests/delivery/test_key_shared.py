"""Key_shared subscriptions in the delivery manager, on a Clock over the real topic log:
every message of a key goes to one member, in seq-id order; keys move between members
only once what was in flight of them is acknowledged; messages without a key go round.

Order is checked as strictly as a worker would need it: when a member is sent a message
of a key, every earlier message of that key was sent before, and each one still
unacknowledged is held by that same member (KeyOrder)."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hedwig.delivery import SubscribeError
from hedwig.delivery.key_shared import SLOTS, KeyRouting, entry_slots
from hedwig.protocol import Status
from hedwig.protocol.entry import encode_entry_header
from hedwig.protocol.messageset import encode_message_set
from hedwig.topiclog.entry import LogEntry
from tests.delivery.harness import failure_of, fired
from tests.delivery.shared_harness import MemberChannel, SharedHarness


class JournalChannel(MemberChannel):
    """A member channel that also writes what it is sent to a journal its peers share."""

    def __init__(self, manager, journal):
        super().__init__(manager)
        self.journal = journal

    def _record(self, handle, entry, start, stop, count):
        super()._record(handle, entry, start, stop, count)
        self.journal.append((self, entry.first_seq + start, entry.first_seq + stop - 1, count))


@pytest.fixture(autouse=True, params=[False, True], ids=["runs", "subsets"])
def subsets(request, monkeypatch):
    """Every case twice: members sent a DELIVERY per run of their keys (a client that did
    not ask for SUBSET_DELIVERY frames), and members sent their keys of an entry as one."""
    monkeypatch.setattr(KeyOrder, "subsets", request.param)
    return request.param


class KeyOrder:
    """Publishes keyed messages, and checks every delivery against per-key order."""

    subsets = False  # whether members ask for SUBSET_DELIVERY frames (the fixture's)

    def __init__(self, tmp_path, **settings):
        self.h = SharedHarness(tmp_path, **settings)
        self.journal = []
        self.key_of = {}  # seq -> key (None: keyless)
        self.seqs_of = {}  # key -> its seq-ids, ascending
        self.sent = set()  # seq-ids ever sent
        self.outstanding = {}  # seq -> channel holding it unacknowledged
        self.held = {}  # channel -> seq-ids it was sent and has not acknowledged

    def member(self, window=10, **kw):
        channel = JournalChannel(self.h.manager, self.journal)
        kw.setdefault("subsets", self.subsets)
        self.h.join("w", channel, kind="key_shared", window=window, **kw)
        self.held[channel] = []
        return channel

    def publish(self, keys):
        payloads = [b"m%d" % i for i in range(len(keys))]
        entry = fired(self.h.topic_log.append(encode_message_set(payloads, keys=keys), len(keys)))
        for seq, key in zip(range(entry.first_seq, entry.last_seq + 1), keys, strict=True):
            self.key_of[seq] = key
            self.seqs_of.setdefault(key, []).append(seq)
        self.check()
        return entry

    def check(self):
        journal, self.journal[:] = list(self.journal), []
        for channel, first, last, _count in journal:
            for seq in range(first, last + 1):
                key = self.key_of[seq]
                if key is not None:
                    for earlier in self.seqs_of[key]:
                        if earlier >= seq:
                            break
                        assert earlier in self.sent, f"key {key!r}: {seq} sent before {earlier}"
                        holder = self.outstanding.get(earlier)
                        assert holder is None or holder is channel, (
                            f"key {key!r}: {seq} sent to one member while another holds {earlier}"
                        )
                self.sent.add(seq)
                self.outstanding[seq] = channel
                self.held[channel].append(seq)

    def ack(self, channel, seqs):
        self.check()
        for seq in seqs:
            if self.outstanding.get(seq) is channel:
                del self.outstanding[seq]
            self.held[channel].remove(seq)
        ranges = [(seq, seq) for seq in seqs]
        if ranges:
            self.h.manager.acknowledge("t", "w", channel, ranges)
        self.check()

    def ack_all(self, channel):
        self.ack(channel, list(self.held[channel]))

    def lose(self, channel):
        self.check()
        self.h.manager.channel_lost(channel)
        self.held.pop(channel)
        self.h.turn()
        self.check()

    def turn(self):
        self.h.turn()
        self.check()

    def members_of(self, key) -> set:
        """The channels that were ever sent a message of `key`."""
        return {c for c in self.held if any(self.key_of.get(s) == key for s in c.seqs())}

    def row(self):
        return next(r for r in self.h.manager.describe("t") if r["subscriber_id"] == "w")


def test_every_message_of_a_key_goes_to_one_member_in_order(tmp_path):
    world = KeyOrder(tmp_path)
    members = [world.member(window=1000) for _ in range(3)]
    world.turn()
    rng = random.Random(39)
    for _ in range(40):
        world.publish([b"k%d" % rng.randrange(50) for _ in range(25)])
    for channel in members:
        world.ack_all(channel)
    assert world.sent == set(range(1, 1001)), "every message was sent once"
    for key in world.seqs_of:
        assert len(world.members_of(key)) == 1, f"{key!r} went to more than one member"
    assert all(channel.seqs() for channel in members), "every member had keys"
    assert world.row()["kind"] == "key_shared"
    assert world.row()["consumed_seq"] == 1000


def test_random_keys_go_to_each_member_as_one_delivery_and_one_lease_per_entry(tmp_path, subsets):
    """Every message a different key than the one before (the hardest case): a member
    that asked for subsets is sent its keys of an entry in one SUBSET_DELIVERY, held as
    one lease; one that did not, a DELIVERY per run of its keys."""
    world = KeyOrder(tmp_path)
    members = [world.member(window=1000) for _ in range(3)]
    world.turn()
    rng = random.Random(39)
    for _ in range(3):
        world.publish([b"k%d" % rng.randrange(1000) for _ in range(300)])
    dispatcher = world.h.manager._tables.subscription("t", "w")[1].dispatcher
    runs = sum(len(channel.sent) for channel in members)
    assert world.sent == set(range(1, 901))
    assert runs > 300, "random keys: hundreds of runs"
    if subsets:
        assert [len(channel.subsets) for channel in members] == [3, 3, 3]
        assert dispatcher.leases_made == 9, "one lease per member per entry"
    else:
        assert all(channel.subsets == [] for channel in members)
        assert dispatcher.leases_made == runs
    for channel in members:  # acknowledged in scattered pieces, as a worker does
        held = list(world.held[channel])
        rng.shuffle(held)
        for k in range(0, len(held), 37):
            world.ack(channel, held[k : k + 37])
    assert world.row()["consumed_seq"] == 900 and world.row()["pending"] == 0
    assert len(dispatcher.holdings) == 0


def test_a_member_whose_window_fills_takes_its_parked_keys_of_an_entry_again_in_one(tmp_path, subsets):
    world = KeyOrder(tmp_path)
    a, b = world.member(window=50), world.member(window=1000)
    world.turn()
    rng = random.Random(5)
    world.publish([b"k%d" % rng.randrange(1000) for _ in range(400)])
    first = len(a.seqs())
    assert first == 50 and world.row()["queued"] > 0
    frames = len(a.subsets)
    world.ack_all(a)
    world.turn()
    assert len(a.seqs()) == 100
    if subsets:
        assert len(a.subsets) == frames + 1, "the parked runs of its keys went out as one"
    while world.held[a] or world.row()["queued"]:
        world.ack_all(a)
        world.ack_all(b)
        world.turn()
    assert world.sent == set(range(1, 401)) and world.row()["consumed_seq"] == 400


def test_messages_without_a_key_go_to_the_members_in_turn(tmp_path):
    world = KeyOrder(tmp_path)
    a, b = world.member(), world.member()
    world.turn()
    for _ in range(4):
        world.publish([None] * 3)
    assert a.seqs() == [1, 2, 3, 7, 8, 9] and b.seqs() == [4, 5, 6, 10, 11, 12]


def test_a_member_whose_window_is_full_holds_back_its_keys_only(tmp_path):
    world = KeyOrder(tmp_path)
    a, b = world.member(window=2), world.member(window=100)
    world.turn()
    keys_a = [k for k in (b"k%d" % i for i in range(100)) if owner_of(world, k) is a][:1]
    keys_b = [k for k in (b"k%d" % i for i in range(100)) if owner_of(world, k) is b][:1]
    world.publish(keys_a * 5 + keys_b * 5)
    assert a.seqs() == [1, 2] and b.seqs() == [6, 7, 8, 9, 10]
    assert world.row()["queued"] == 3
    world.ack(a, [1, 2])
    assert a.seqs() == [1, 2, 3, 4]
    world.ack(a, [3, 4])
    assert a.seqs() == [1, 2, 3, 4, 5]


def owner_of(world, key):
    """The channel owning `key` now."""
    dispatcher = world.h.manager._tables.subscription("t", "w")[1].dispatcher
    slots = entry_slots(encode_entry_header(1, 1, 0, b"", 0, b"") + encode_message_set([b""], keys=[key]))
    return dispatcher.keys.owner(slots[0]).channel


def test_a_joining_member_takes_keys_only_once_their_messages_in_flight_are_acknowledged(tmp_path):
    world = KeyOrder(tmp_path)
    a = world.member(window=1000)
    world.turn()
    keys = [b"k%d" % i for i in range(200)]
    world.publish(keys)
    assert len(a.seqs()) == 200
    b = world.member(window=1000)
    world.turn()
    moved = [k for k in keys if owner_of(world, k) is b]
    assert 50 < len(moved) < 150, "the joining member took about half the keys"
    world.publish(keys)  # a's keys go on to a; the moved ones wait for a's acknowledgements
    assert b.seqs() == []
    assert len(a.seqs()) == 400 - len(moved)
    world.ack(a, list(range(1, 101)))
    assert b.seqs() == [], "a still holds messages of the moved keys"
    world.ack(a, list(range(101, 201)))
    assert sorted(world.key_of[s] for s in b.seqs()) == sorted(moved)
    world.ack_all(a)
    world.ack_all(b)
    assert world.row()["consumed_seq"] == 400


def test_a_member_leaving_gives_its_keys_with_what_it_held_first(tmp_path):
    world = KeyOrder(tmp_path)
    a, b = world.member(window=1000), world.member(window=1000)
    world.turn()
    keys = [b"k%d" % i for i in range(100)]
    world.publish(keys)
    of_a = [world.key_of[s] for s in a.seqs()]
    world.lose(a)
    world.publish(keys)
    redelivered = b.seqs(count=2)
    assert sorted(world.key_of[s] for s in redelivered) == sorted(of_a)
    assert len(b.seqs(count=1)) == 100 - len(of_a) + 100
    world.ack_all(b)
    assert world.row()["consumed_seq"] == 200


def test_a_nacked_message_goes_again_before_anything_later_of_its_key(tmp_path):
    world = KeyOrder(tmp_path)
    a = world.member(window=3)
    world.turn()
    world.publish([b"x", b"x", b"x", b"x", b"x"])
    assert a.seqs() == [1, 2, 3]
    world.ack(a, [1])
    world.held[a].remove(2)  # (taken back: it goes out again)
    del world.outstanding[2]
    assert world.h.manager.reject("t", "w", a, [(2, 2)]) == 1
    world.check()
    assert a.seqs(count=2) == [2], "the nacked message first"
    assert a.seqs(count=1) == [1, 2, 3, 4]


def test_dead_letters_keep_the_order_of_a_key(tmp_path):
    world = KeyOrder(tmp_path)
    a = world.member(window=10, ack_timeout_ms=1000, max_deliveries=2)
    world.turn()
    world.publish([b"x", b"x", b"y"])
    world.ack(a, [3])
    for _ in range(2):
        world.h.clock.advance(1.0)  # never acknowledged: taken back, out again, then dead-lettered
        world.held[a].clear()
        world.outstanding.clear()
        world.check()
    assert a.seqs(count=2) == [1, 2]
    assert len(world.h.dead_letters) == 1
    world.publish([b"x"])
    assert a.seqs(count=1)[-1] == 4
    assert world.row()["dead_lettered"] == 2


def test_a_random_run_of_joins_leaves_nacks_and_acks_keeps_every_key_in_order(tmp_path):
    world = KeyOrder(tmp_path)
    rng = random.Random(7)
    members = [world.member(window=rng.choice([5, 20, 100])) for _ in range(3)]
    world.turn()
    keys = [None, *(b"k%d" % i for i in range(30))]
    for _ in range(300):
        what = rng.random()
        if what < 0.4:
            world.publish([rng.choice(keys) for _ in range(rng.randrange(1, 20))])
        elif what < 0.8 and members:
            channel = rng.choice(members)
            held = world.held[channel]
            world.ack(channel, rng.sample(held, min(len(held), rng.randrange(1, 15))))
        elif what < 0.85 and members:
            channel = rng.choice(members)
            held = world.held[channel]
            if held:
                seq = held[0]
                held.remove(seq)
                if world.outstanding.get(seq) is channel:
                    del world.outstanding[seq]
                world.h.manager.reject("t", "w", channel, [(seq, seq)])
                world.check()
        elif what < 0.92 and len(members) > 1:
            channel = members.pop(rng.randrange(len(members)))
            world.lose(channel)
        elif len(members) < 5:
            members.append(world.member(window=rng.choice([5, 20, 100])))
            world.turn()
        world.turn()
    for _ in range(1000):  # drain: acknowledge everything until all is done
        for channel in members:
            world.ack_all(channel)
        world.turn()
        if world.row()["consumed_seq"] == len(world.key_of) and not any(world.held.values()):
            break
    assert world.sent == set(world.key_of), "nothing lost"
    assert world.row()["consumed_seq"] == len(world.key_of)


def test_key_ranges_cover_every_slot_through_joins_and_leaves():
    routing = KeyRouting()
    members = [object() for _ in range(7)]
    for i, member in enumerate(members):
        routing.join(member, i, [])
        assert sum(hi - lo + 1 for lo, hi, _ in routing.ranges) == SLOTS
        assert None not in map(routing.owner, range(SLOTS))
    held = [routing.slots_held(m) for m in members]
    assert max(held) - min(held) <= len(members), f"even: {held}"
    for member in members[::2]:
        routing.leave(member, [])
        assert sum(hi - lo + 1 for lo, hi, _ in routing.ranges) == SLOTS
        assert member not in routing.owners and member not in map(routing.owner, range(SLOTS))
    for member in members[1::2]:
        routing.leave(member, [])
    assert routing.ranges == [] and routing.owners == []


def test_a_key_shared_subscription_takes_no_filter_and_stays_key_shared(tmp_path):
    h = SharedHarness(tmp_path)
    channel = h.member_channel()
    failure = failure_of(
        h.manager.subscribe(
            h.topic_log, channel, 1, h.request("w", kind="key_shared", filter="color = 'red'")
        )
    )
    assert failure.check(SubscribeError) and failure.value.status == Status.MALFORMED_REQUEST
    h.join("w", channel, kind="key_shared")
    other = h.member_channel()
    failure = failure_of(h.manager.subscribe(h.topic_log, other, 1, h.request("w", kind="shared")))
    assert failure.value.status == Status.WRONG_SUBSCRIPTION_KIND
    assert h.record("w").preferences["kind"] == "key_shared"


@pytest.mark.parametrize("compressed", [False, True])
def test_entry_slots_hash_each_key_and_mark_keyless_messages(compressed):
    from hedwig.protocol.compression import compress_message_set

    message_set = encode_message_set([b"a", b"b", b"c"], keys=[b"k", None, b"k"])
    if compressed:
        message_set = compress_message_set(message_set, "gzip")
    data = encode_entry_header(1, 3, 0, b"", 0, b"") + message_set
    slots = entry_slots(data)
    assert slots[0] == slots[2] != -1 and slots[1] == -1
    assert entry_slots(encode_entry_header(1, 1, 0, b"", 0, b"") + encode_message_set([b"a"])) is None


def test_a_backlog_of_many_keys_goes_out_whole_as_members_join_with_no_timer_firing(tmp_path):
    """Members joining one after another over a backlog of entries of 1,000 keys: the
    moved keys' messages, parked over many turns, all go out once the moves end (a turn
    cut short by its burst must not leave them parked), with no ack timeout involved."""
    world = KeyOrder(tmp_path, max_burst_entries=5)
    rng = random.Random(3)
    for _ in range(10):
        world.publish([b"key-%d" % rng.randrange(1000) for _ in range(1000)])
    members = []
    for _ in range(3):
        members.append(world.member(window=1000, start="earliest"))
        world.turn()
    for _ in range(200):
        for channel in members:
            held = list(world.held[channel])
            for k in range(0, len(held), 100):
                world.ack(channel, held[k : k + 100])
        world.turn()
        if world.row()["consumed_seq"] == 10_000:
            break
    assert world.row()["consumed_seq"] == 10_000 and world.row()["queued"] == 0
    assert all(len(channel.seqs()) > 1000 for channel in members), "every member took a share"
    assert world.row()["redeliveries"] == 0


def test_a_pull_member_of_a_key_shared_subscription_fetches_its_own_keys_in_order(tmp_path):
    world = KeyOrder(tmp_path)
    a = world.member(window=100, pull=True)
    b = world.member(window=100, pull=True)
    world.turn()
    keys = [b"k%d" % (i % 10) for i in range(40)]
    world.publish(keys)
    assert a.seqs() == [] and b.seqs() == [], "nothing is pushed"
    world.h.manager.fetch("t", "w", a, 5, 1.0)
    world.turn()
    assert len(a.seqs()) == 5 and b.seqs() == []
    world.h.manager.fetch("t", "w", b, 100, 1.0)
    world.turn()
    of_a = {world.key_of[s] for s in a.seqs()}
    assert not of_a & {world.key_of[s] for s in b.seqs()}, "each key on one member"
    world.ack_all(a)
    world.ack_all(b)
    world.h.manager.fetch("t", "w", a, 100, 1.0)
    world.turn()
    assert sorted(a.seqs() + b.seqs()) == list(range(1, 41))


class _Room:
    """A member as KeyRouting sees it in a turn: its room."""

    def __init__(self, room):
        self.room = room


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 20), min_size=1, max_size=4),
    st.lists(st.one_of(st.none(), st.integers(0, 30)), min_size=1, max_size=80),
    st.booleans(),
    st.data(),
)
def test_a_split_gives_each_member_its_own_keys_in_order_within_its_room(rooms, keys, settled, data):
    """KeyRouting.split cuts runs of one mark: whatever the rooms, the pending moves and
    the keyless messages, its runs cover the span in order, a keyed message goes to its
    slot's owner (or waits on that owner's heap, or on the moving slots'), a member is
    given no more than its room, and once one of its messages waits, none later of it
    goes out in that split."""
    members = [_Room(room) for room in rooms]
    routing = KeyRouting()
    for serial, member in enumerate(members):
        routing.join(member, serial, [])
    if settled:
        routing.settle(None)
    payloads = [b""] * len(keys)
    encoded = [None if key is None else b"key-%d" % key for key in keys]
    data_bytes = encode_entry_header(1, len(keys), 0, b"", 1) + encode_message_set(payloads, keys=encoded)
    entry = LogEntry(1, len(keys), data_bytes, 0)
    first = data.draw(st.integers(1, len(keys)))
    last = data.draw(st.integers(first, len(keys)))
    slots = entry_slots(data_bytes)
    moving = {s for _serial, lo, hi in routing.moves for s in range(lo, hi + 1)}
    routing.begin(members, [], False)
    runs = routing.split(entry, first, last)
    assert [seq for _to, start, stop in runs for seq in range(start, stop + 1)] == list(
        range(first, last + 1)
    )
    given_to = {id(m): 0 for m in members}
    waited = set()  # members with a keyed message waiting on their heap
    for to, start, stop in runs:
        for seq in range(start, stop + 1):
            slot = None if slots is None else slots[seq - 1]
            keyless = slot is None or slot == -1
            if to is routing.keyless_parked:
                assert keyless and all(given_to[id(m)] >= m.room for m in members)
            elif to is routing.moving_parked:
                assert not keyless and slot in moving
            elif type(to) is list:
                owner = routing.owner(slot)
                assert not keyless and slot not in moving and to is routing.parked[owner]
                assert given_to[id(owner)] >= owner.room, "a member with room has its keys"
                waited.add(id(owner))
            else:
                if not keyless:
                    assert routing.owner(slot) is to and slot not in moving
                    assert id(to) not in waited, "a key's later message went out before an earlier one"
                given_to[id(to)] += 1
    for member in members:
        assert given_to[id(member)] <= member.room


def test_more_owners_than_a_byte_numbers_are_marked_in_two_bytes_each():
    """Up to 254 owners a slot's mark is a byte; more (a subscription of 256 members owns
    256 ranges) take two bytes a mark, and every key still goes to its slot's owner."""
    routing = KeyRouting()
    members = [_Room(10_000) for _ in range(256)]
    for serial, member in enumerate(members):
        routing.join(member, serial, [])
    routing.settle(None)
    assert len(routing.owners) == 256 and routing.width == 2
    keys = [b"key-%d" % i for i in range(2000)]
    data_bytes = encode_entry_header(1, len(keys), 0, b"", 1) + encode_message_set(
        [b""] * len(keys), keys=keys
    )
    entry = LogEntry(1, len(keys), data_bytes, 0)
    slots = entry_slots(data_bytes)
    routing.begin(members, [], False)
    runs = routing.split(entry, 7, 1900)
    assert [seq for _to, start, stop in runs for seq in range(start, stop + 1)] == list(range(7, 1901))
    for to, start, stop in runs:
        assert all(routing.owner(slots[seq - 1]) is to for seq in range(start, stop + 1))
    routing.leave(members[0], [])
    assert len(routing.owners) == 255 and routing.width == 2
    routing.leave(members[1], [])
    assert len(routing.owners) == 254 and routing.width == 1, "a byte each again"
    routing.begin(members[2:], [], False)
    for to, start, stop in routing.split(entry, 1, 2000):
        assert all(routing.owner(slots[seq - 1]) is to for seq in range(start, stop + 1))
