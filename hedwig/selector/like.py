"""LIKE patterns, compiled once and matched without backtracking.

`%` matches any run of characters (none included), `_` exactly one; the ESCAPE
character makes the character after it literal (`%`, `_`, itself or any other). Every
other character stands for itself, case and all, and `%` and `_` match line breaks too.

A pattern is cut at its `%`s into segments of fixed length (literal characters and `_`).
A value matches when the first segment matches at its start, the last at its end, and
each segment between is found, leftmost, after the one before: taking the leftmost
place is never wrong, so no choice is ever undone, and each search begins where the
one before ended, so together they pass over the value once. Finding a segment is
`str.find` (no `_`: linear) or a regular expression without a quantifier (with `_`: at
most the segment's length per character it passes, and the parser bounds that length),
whatever the pattern; a regular expression of `.*` joins would backtrack exponentially
on `%a%a%a%a%b`.

The common shapes never reach the general matcher: no wildcard is `==`, `abc%` is
`startswith`, `%abc` `endswith`, `%abc%` `in`, and `%` matches every string; the
compiler writes those inline.

The general matcher's cost is still the value's length times `steps_per_char` (the
lengths of its pieces with `_`, 1 for each other piece), and a message's property may
be a megabyte: a hundred such patterns over it ran for seconds on the reactor. So the
compiler gives the general patterns of a selector a longest value (its `like_limit`),
the budget of one evaluation (SelectorLimits.max_like_steps) over the steps per
character of all of them; a longer value is not searched: the LIKE is unknown (the
message does not pass, as for a value of the wrong type), and a selector's LIKEs
together cost at most the budget per message.
"""

import re
from collections import OrderedDict
from threading import Lock

EXACT = "exact"
PREFIX = "prefix"
SUFFIX = "suffix"
CONTAINS = "contains"
ANYTHING = "anything"
GENERAL = "general"
# How many general patterns like_pattern keeps for the next selector that has one.
LIKE_PATTERNS_KEPT = 512

_ANY_ONE = object()  # `_` in a segment


def check_pattern(pattern: str, escape: str | None, max_segment: int | None = None) -> str | None:
    """What is wrong with a pattern (one line), or None. `max_segment`: the most
    characters a piece between two %s that holds a `_` may have (the cost of finding it
    is its length per character of the value; a piece without `_` is found in linear
    time, and the pieces before the first % and after the last match in place)."""
    if escape is not None and pattern.endswith(escape) and _ends_escaping(pattern, escape):
        return f"the pattern ends with its ESCAPE character {escape!r}, which escapes nothing"
    if max_segment is not None:
        for segment in _segments(pattern, escape)[1:-1]:  # (the first and last match in place)
            if len(segment) > max_segment and _ANY_ONE in segment:
                return (
                    f"a piece of a LIKE pattern between %s that holds _ is at most {max_segment} "
                    f"characters; this one has {len(segment)}"
                )
    return None


def _ends_escaping(pattern: str, escape: str) -> bool:
    at = 0
    while at < len(pattern):
        if pattern[at] == escape:
            if at + 1 == len(pattern):
                return True
            at += 2
        else:
            at += 1
    return False


def _segments(pattern: str, escape: str | None) -> list:
    """The pattern cut at its unescaped `%`s: a list of segments, each a list of
    characters and _ANY_ONE."""
    segments = [[]]
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if char == escape:
            segments[-1].append(pattern[at + 1])
            at += 2
            continue
        if char == "%":
            if segments[-1] or len(segments) == 1:  # (%% is one %)
                segments.append([])
        elif char == "_":
            segments[-1].append(_ANY_ONE)
        else:
            segments[-1].append(char)
        at += 1
    return segments


class _Segment:
    """A fixed-length piece of a pattern, with how to match it at a place and find it."""

    __slots__ = ("length", "literal", "regex")

    def __init__(self, items: list):
        self.length = len(items)
        if _ANY_ONE in items:
            self.literal = None
            source = "".join("." if item is _ANY_ONE else re.escape(item) for item in items)
            self.regex = re.compile(source, re.DOTALL)
        else:
            self.literal = "".join(items)
            self.regex = None

    def at(self, value: str, position: int) -> bool:
        if self.literal is not None:
            return value.startswith(self.literal, position)
        return position + self.length <= len(value) and self.regex.match(value, position) is not None

    def find(self, value: str, start: int, end: int) -> int:
        """The leftmost place in [start, end) where the segment lies wholly, or -1."""
        if self.literal is not None:
            return value.find(self.literal, start, end)
        found = self.regex.search(value, start, end)
        return -1 if found is None else found.start()


class LikePattern:
    """A compiled pattern: `shape` (EXACT, PREFIX, SUFFIX, CONTAINS, ANYTHING, GENERAL),
    `literal` (the text of the first four shapes), and `matches(value)` for any. It holds
    nothing of the selector it is in (the selector's budget is the compiler's), so one
    serves every selector with the same pattern (like_pattern)."""

    __slots__ = ("first", "last", "literal", "middle", "pattern", "shape", "steps_per_char")

    def __init__(self, pattern: str, escape: str | None = None):
        self.pattern = pattern
        raw = _segments(pattern, escape)
        self.literal = None
        wildcard_free = all(_ANY_ONE not in segment for segment in raw)
        if wildcard_free and len(raw) == 1:
            self.shape, self.literal = EXACT, "".join(raw[0])
        elif wildcard_free and all(not segment for segment in raw):
            self.shape = ANYTHING
        elif wildcard_free and len(raw) == 2 and not raw[1]:
            self.shape, self.literal = PREFIX, "".join(raw[0])
        elif wildcard_free and len(raw) == 2 and not raw[0]:
            self.shape, self.literal = SUFFIX, "".join(raw[1])
        elif wildcard_free and len(raw) == 3 and not raw[0] and not raw[2]:
            self.shape, self.literal = CONTAINS, "".join(raw[1])
        else:
            self.shape = GENERAL
        self.first = _segment(raw[0])
        self.last = _segment(raw[-1]) if len(raw) > 1 else None
        self.middle = tuple(_segment(segment) for segment in raw[1:-1] if segment)
        self.steps_per_char = max(1, sum(1 if m.literal is not None else m.length for m in self.middle))

    def matches(self, value: str) -> bool:
        first = self.first
        if self.last is None:  # no %: the one segment is the whole value
            return len(value) == first.length and first.at(value, 0)
        tail_at = len(value) - self.last.length
        if tail_at < first.length or not first.at(value, 0) or not self.last.at(value, tail_at):
            return False
        position = first.length
        for segment in self.middle:
            found = segment.find(value, position, tail_at)
            if found < 0:
                return False
            position = found + segment.length
        return True

    def __repr__(self) -> str:
        return f"LikePattern({self.pattern!r}, shape={self.shape})"


_EMPTY = _Segment([])  # (the piece before a leading % and after a trailing one)


def _segment(items: list) -> _Segment:
    return _Segment(items) if items else _EMPTY


_shared = OrderedDict()  # (pattern, escape) -> general LikePattern, least recently asked first
_sharing = Lock()  # (a selector may be compiled off the reactor: a client, a test's thread)


def like_pattern(pattern: str, escape: str | None = None) -> LikePattern:
    """The LikePattern of `pattern`; a general one shared: the selectors of a hub's
    subscriptions (a user's hundred copies of one pattern, or a thousand subscriptions'
    `%a_b%`) hold one compiled pattern and its regular expression, not one each. (The
    other shapes are compiled inline: their pattern is not kept.)"""
    key = (pattern, escape)
    with _sharing:
        found = _shared.get(key)
        if found is not None:
            _shared.move_to_end(key)
            return found
    made = LikePattern(pattern, escape)
    if made.shape == GENERAL:
        with _sharing:
            _shared[key] = made
            if len(_shared) > LIKE_PATTERNS_KEPT:
                _shared.popitem(last=False)
    return made


def forget_shared_patterns() -> None:
    """Drop the shared patterns (a test measuring what a selector holds)."""
    with _sharing:
        _shared.clear()
