"""Key_Shared routing: which member of a key_shared subscription each message goes to.

Every key hashes to one of SLOTS slots (CRC-32 of its bytes, its low 16 bits, as Pulsar
hashes a sticky key into 0..65535), and the members own ranges of slots: the first
member owns all of them; one that joins takes the top 1/n of every member's slots (n
members now: they stay even, and only the keys it takes move, as with Pulsar's
consistent hashing); one that leaves gives its ranges to the member owning the range
before each (after it, for the first). So every message of a key goes to one member,
and a change of members moves as few keys as it can.

Order per key. A message is held back (parked, on a heap in seq-id order) while its
slot's owner has no room (on that member's heap, taken again once it has room), or its
slot moved to a member that joined and a lease made before the join is still held (on
the moving slots' heap, taken again once a move ends): the slot's earlier messages may
be in flight at its old owner, and a key moves only once they are acknowledged (or
taken back). A member leaving moves its slots at once: everything it held is taken
back and goes out again first. A turn takes runs from the dispatcher's queue and the
heaps whose members have room, always the lowest seq-id first, and reads new seq-ids
only after them: a later message of a slot never overtakes an earlier one, and a
redelivery (NACK, ack timeout, a member leaving) goes out before anything later of its
slot. When members change, every parked run goes back to the queue to be split again.
Messages without a key go to the members in turn, a run of an entry at a time.

The work is per entry where it can be: an entry's slots are hashed once (kept for the
last few entries), a span of it is split per run of one member's keys (each slot's mark,
its owner's index, is looked up in C and the marks cut into runs by a regular
expression), an entry without keys goes whole as a shared subscription's does,
and a member whose client asked for them is sent its runs of an entry as one
SUBSET_DELIVERY, held as one lease (the dispatcher's _deliver_subsets); another is sent
each run as a delivery (as an entry of its own when it is under half of its entry, cut
from the entry read once while it is kept). New seq-ids are read no faster than every
member has room for its share (new_share): with random keys a full member's runs would
otherwise be parked one by one, each a heap push and a split again. Parked runs are
bounded (PARKING_SLACK while a member has no room, MAX_PARKED_RUNS in all): beyond them
the dispatcher reads nothing new until the members take what waits.
"""

import re
import zlib
from array import array
from bisect import bisect_right
from heapq import heappush
from itertools import pairwise

from hedwig.protocol.compression import plain_message_set
from hedwig.protocol.entry import ENTRY_FLAG_SPARSE, EntrySlices, decode_entry_header
from hedwig.protocol.messageset import parse_message_set
from hedwig.topiclog.entry import LogEntry

SLOTS = 1 << 16
KEYLESS = -1
# Runs held back at most before a key_shared subscription reads no new seq-ids (memory
# bound; the members' windows are what normally bounds them).
MAX_PARKED_RUNS = 4096
# Runs parked at most while a member has no room before new seq-ids wait for it (each
# parked run costs a heap push and a split again; with random keys parking every run of
# a full member's keys costs more than waiting for its acknowledgements).
PARKING_SLACK = 256
_KEPT_ENTRIES = 64  # entries whose slots and marks are kept (a redelivery reads its entry again)
# Entries whose EntrySlices are kept, the least recently cut dropped first: a turn takes
# runs of a few entries in turn (parked runs, redeliveries, new ones), and reading an
# entry for its cuts costs a pass over its messages (they hold its bytes: a few only).
_KEPT_CUTS = 8
# A message's mark (KeyRouting.marks): its slot owner's index among the owners, or, the
# two highest marks, moving (a slot whose move waits for leases made before it) and
# keyless (KEYLESS, the table's last slot). Marks are a byte each (two with more owners
# than a byte numbers): an entry's are looked up once per change of members, and a span's
# cut into runs of one mark by a regular expression, so a split works per run.
_NARROW_OWNERS = 254  # owners at most with marks of a byte
_SAME_MARK = {1: re.compile(rb"(.)\1*", re.DOTALL), 2: re.compile(rb"(..)\1*", re.DOTALL)}


def _range_start(slot_range) -> int:
    return slot_range[0]


def entry_slots(data):
    """The slot of every message of a stored entry (KEYLESS for a message without a key),
    or None when no message of it has a key, or it is compacted (sparse: it goes whole)."""
    header = decode_entry_header(data)
    if header.sparse:
        return None
    message_set, offset = plain_message_set(data, header.body_offset)
    key_offsets = parse_message_set(message_set, offset).key_offsets
    if key_offsets is None:
        return None
    view = message_set if isinstance(message_set, bytes) else bytes(message_set)
    crc = zlib.crc32
    return [crc(view[start:end]) & 0xFFFF if end > start else KEYLESS for start, end in pairwise(key_offsets)]


class KeyRouting:
    """The slot ranges of a key_shared subscription's members, the slots moving, and the
    split of each run of an entry among the members (SharedDispatcher's part)."""

    def __init__(self):
        self.ranges = []  # [(lo, hi, member)], sorted, covering 0..SLOTS-1 (none: no member)
        self.moves = []  # [(serial, lo, hi)]: slots moved at a join, while leases up to serial are held
        # Derived from the ranges and moves (_rebuild): the members owning slots (a mark is
        # an index of this list), the bytes a mark takes (1 up to _NARROW_OWNERS owners,
        # else 2), slot -> its mark (the last: KEYLESS's), the moving slots' mark, and a
        # count of the changes (an entry's kept marks are of one).
        self.owners = []
        self.width = 1
        self.marks = b""
        self._moving_mark = None
        self._version = 0
        self._rebuild()
        # (entry's first seq-id, last seq-id, size) -> [its slots, version, its marks]
        self._kept = {}
        self._cutting = {}  # (entry's first seq-id, last seq-id, size) -> its EntrySlices
        self._room = {}  # member -> messages it may still be given in this turn
        # Parked runs (first, last, delivery count), heaps in seq-id order: per member
        # whose window was full, of slots moving, of messages without a key.
        self.parked = {}
        self.moving_parked = []
        self.keyless_parked = []
        self._taken_out = []  # (home, heap): parked runs taken out for this turn
        self._moved = False  # a move ended: the moving slots' parked runs are to be taken again
        self._turn = 0  # the next member in turn for messages without a key

    # -- members -----------------------------------------------------------------------------

    def join(self, member, serial: int, queue) -> None:
        """`member` joined; `serial`: the last lease made so far; what was parked goes
        back to `queue` (the dispatcher's: some of it may be the new member's now)."""
        self.park_all(queue)
        self.parked[member] = []
        if not self.ranges:
            self.ranges = [(0, SLOTS - 1, member)]
        else:
            self._take_share(member, serial)
        self._rebuild()

    def _take_share(self, member, serial: int) -> None:
        """`member` takes from each member the top 1/n of its slots (n members now): the
        members stay even, and only the keys it takes move."""
        held = {}
        for lo, hi, owner in self.ranges:
            held[owner] = held.get(owner, 0) + hi - lo + 1
        members = len(held) + 1
        wanted = {owner: count // members for owner, count in held.items()}
        ranges = []
        for lo, hi, owner in reversed(self.ranges):
            take = min(wanted[owner], hi - lo + 1)
            if take:
                wanted[owner] -= take
                ranges.append((hi - take + 1, hi, member))
                self.moves.append((serial, hi - take + 1, hi))
                hi -= take
            if lo <= hi:
                ranges.append((lo, hi, owner))
        merged = []
        for lo, hi, owner in reversed(ranges):
            if merged and merged[-1][2] is owner:
                merged[-1] = (merged[-1][0], hi, owner)
            else:
                merged.append((lo, hi, owner))
        self.ranges = merged

    def leave(self, member, queue) -> None:
        """`member` left: its ranges go to their neighbours; what was parked goes back to
        `queue` (the dispatcher's)."""
        self.park_all(queue)
        self.parked.pop(member, None)
        ranges = [(lo, hi, None if owner is member else owner) for lo, hi, owner in self.ranges]
        heirs = [owner for _lo, _hi, owner in ranges if owner is not None]
        kept = []
        for lo, hi, owner in ranges if heirs else ():
            if owner is None:  # (to the owner of the range before it; the first's to the next)
                owner = kept[-1][2] if kept else heirs[0]
            if kept and kept[-1][2] is owner:
                kept[-1] = (kept[-1][0], hi, owner)
            else:
                kept.append((lo, hi, owner))
        self.ranges = kept
        self._room.pop(member, None)
        self._rebuild()

    def _rebuild(self) -> None:
        """The owners and every slot's mark, from the ranges and the moves."""
        owners, index = [], {}
        for _lo, _hi, owner in self.ranges:
            if owner not in index:
                index[owner] = len(owners)
                owners.append(owner)
        width = 1 if len(owners) <= _NARROW_OWNERS else 2
        keyless = (1 << 8 * width) - 1
        marks = array("B" if width == 1 else "H", [keyless]) * (SLOTS + 1)
        for lo, hi, owner in self.ranges:
            marks[lo : hi + 1] = array(marks.typecode, [index[owner]]) * (hi - lo + 1)
        for _serial, lo, hi in self.moves:
            marks[lo : hi + 1] = array(marks.typecode, [keyless - 1]) * (hi - lo + 1)
        self.owners = owners
        self.width = width
        self.marks = bytes(marks) if width == 1 else marks
        self._moving_mark = keyless - 1
        self._version += 1

    def owner(self, slot: int):
        """The member owning `slot` (moving to it, or not; None: no member)."""
        ranges = self.ranges
        i = bisect_right(ranges, slot, key=_range_start) - 1
        return ranges[i][2] if i >= 0 else None

    def settle(self, oldest_held) -> bool:
        """Moves end once every lease made before them is done; `oldest_held`: the serial
        of the oldest lease still held (None: none is). Whether one ended."""
        moves = self.moves
        if moves and (oldest_held is None or moves[0][0] < oldest_held):
            self.moves = [m for m in moves if oldest_held is not None and m[0] >= oldest_held]
            self._rebuild()
            return True
        return False

    def slots_held(self, member) -> int:
        """How many slots `member` owns."""
        return sum(hi - lo + 1 for lo, hi, owner in self.ranges if owner is member)

    # -- parked runs --------------------------------------------------------------------------

    def park_all(self, queue) -> None:
        """Members changed (a key may have another owner): every parked run goes back to
        `queue` (the dispatcher's), to be split again in seq-id order."""
        for heap in (*self.parked.values(), self.moving_parked, self.keyless_parked):
            for piece in heap:
                heappush(queue, piece)
            heap.clear()

    def clear_parked(self) -> None:
        for heap in (*self.parked.values(), self.moving_parked, self.keyless_parked):
            heap.clear()

    def parked_runs(self) -> int:
        return len(self.moving_parked) + len(self.keyless_parked) + sum(map(len, self.parked.values()))

    def parked_messages(self) -> int:
        heaps = (*self.parked.values(), self.moving_parked, self.keyless_parked)
        return sum(last - first + 1 for heap in heaps for first, last, _count in heap)

    # -- a turn ------------------------------------------------------------------------------

    def begin(self, members, queue, settled: bool) -> list:
        """A dispatcher's turn begins: what each member may take now; the heaps of runs to
        take from, as (heap, the member it waits for or None): the dispatcher's queue,
        each member's parked runs, and those of moving slots once a move ended and of
        messages without a key (taken out for this turn: what is parked again waits for
        the next)."""
        self._room = {member: member.room for member in members}
        sources = [(queue, None)]
        sources += [(heap, member) for member, heap in self.parked.items() if heap]
        self._taken_out = []
        self._moved = self._moved or settled
        if self._moved and not self.moving_parked:
            self._moved = False
        elif self._moved:
            self._taken_out.append((self.moving_parked, self.moving_parked.copy()))
            self.moving_parked.clear()
        if self.keyless_parked:
            self._taken_out.append((self.keyless_parked, self.keyless_parked.copy()))
            self.keyless_parked.clear()
        sources += [(heap, None) for _home, heap in self._taken_out]
        return sources

    def end(self) -> None:
        """The turn ends: what it took out and did not take goes back where it waits."""
        for home, heap in self._taken_out:
            if home is self.moving_parked and not heap:  # (all taken: the move is through)
                self._moved = False
            for piece in heap:
                heappush(home, piece)
        self._taken_out = []

    def next_source(self, sources):
        """The heap whose first run comes first, of those whose member has room; None."""
        room = self._room
        best = None
        for heap, member in sources:
            if heap and (member is None or room.get(member, 0) > 0) and (best is None or heap[0] < best[0]):
                best = heap
        return best

    def new_share(self, members: int) -> int:
        """How many new seq-ids to take at most now: as many as every member has room
        for its share of (random keys park nothing then); while a member has no room,
        what the others have room for, until PARKING_SLACK runs are parked (a member
        whose window is full holds back its keys only, up to that)."""
        rooms = self._room.values()
        least = min(rooms, default=0)
        if least > 0:
            return least * members
        if self.parked_runs() >= PARKING_SLACK:
            return 0
        return sum(left for left in rooms if left > 0)

    def any_room(self) -> bool:
        return any(left > 0 for left in self._room.values())

    def entry_marks(self, entry):
        """The marks of `entry`'s messages, as bytes (`width` each) and as what indexes
        them to a mark; None when none of them has a key, or it is compacted (entry_slots:
        it goes whole). Its slots are hashed once while it is kept (by its seq-ids and
        size: the entry's bytes are not held here), and mapped to marks again only when
        the members change."""
        known = (entry.first_seq, entry.last_seq, len(entry.data))
        kept = self._kept.get(known)
        if kept is None:
            if len(self._kept) >= _KEPT_ENTRIES:
                del self._kept[next(iter(self._kept))]
            kept = self._kept[known] = [entry_slots(entry.data), None, None]
        slots, version, marked = kept
        if slots is None or version == self._version:
            return marked
        if self.width == 1:
            marks = bytes(map(self.marks.__getitem__, slots))
            marked = (marks, marks)
        else:
            wide = array("H", map(self.marks.__getitem__, slots))
            marked = (wide.tobytes(), wide)
        kept[1:] = self._version, marked
        return marked

    def cut(self, entry, first: int, last: int):
        """The entry to send for seq-ids first..last of `entry`: the entry itself when
        they are more than half of it, else an entry of their own (EntrySlices, as a
        filtered subscriber is sent), so that a member is not sent a whole entry's bytes
        for every run of its keys in it."""
        if 2 * (last - first + 1) > entry.last_seq - entry.first_seq + 1 or entry.data[1] & ENTRY_FLAG_SPARSE:
            return entry
        known = (entry.first_seq, entry.last_seq, len(entry.data))
        cutting = self._cutting
        slices = cutting.pop(known, None)
        if slices is None:
            slices = EntrySlices(entry.data)
            if len(cutting) >= _KEPT_CUTS:
                del cutting[next(iter(cutting))]
        cutting[known] = slices  # (the most recently cut last)
        base = entry.first_seq
        data = slices.cut(first - base, last - base + 1)
        return LogEntry(first, last, data, entry.publish_time_us)

    def split(self, entry, first: int, last: int) -> list:
        """Seq-ids first..last of `entry`, as runs [(to, first, last)]: `to` a member to
        deliver the run to, or (a list) the heap it is parked on: its owner's (no room),
        the moving slots' or the keyless messages' (no member has room)."""
        marked = self.entry_marks(entry)
        if marked is None:
            return self._keyless(first, last)
        marks, mark_of = marked
        base, width, moving = entry.first_seq, self.width, self._moving_mark
        owners, room, parked = self.owners, self._room, self.parked
        runs = []
        for match in _SAME_MARK[width].finditer(marks, (first - base) * width, (last - base + 1) * width):
            start, end = match.span()
            mark = mark_of[start // width]
            run_first, run_last = base + start // width, base + end // width - 1
            if mark < moving:
                to = owners[mark]
                left = room[to]
                if left > run_last - run_first:
                    room[to] = left - (run_last - run_first + 1)
                    runs.append((to, run_first, run_last))
                elif left > 0:  # (what it has room for; the rest waits for it)
                    room[to] = 0
                    runs += ((to, run_first, run_first + left - 1), (parked[to], run_first + left, run_last))
                else:
                    runs.append((parked[to], run_first, run_last))
            elif mark == moving:
                runs.append((self.moving_parked, run_first, run_last))
            else:
                runs += self._keyless(run_first, run_last)
        return runs

    def _keyless(self, first: int, last: int) -> list:
        """A run without keys: to the next member in turn, as much as it has room for."""
        to = self._next_in_turn()
        if to is None:
            return [(self.keyless_parked, first, last)]
        end = min(last, first + self._room[to] - 1)
        self._room[to] -= end - first + 1
        runs = [(to, first, end)]
        if end < last:
            runs += self._keyless(end + 1, last)
        return runs

    def _next_in_turn(self):
        members = list(self._room)
        count = len(members)
        for k in range(count):
            member = members[(self._turn + k) % count]
            if self._room[member] > 0:
                self._turn = (self._turn + k + 1) % count
                return member
        return None
