"""Message selectors: Jakarta Messaging's filter language over a message's properties and
its key, parsed by hand, compiled once per subscription, evaluated per message.

    selector = compile_selector("color = 'red' AND n BETWEEN 100 AND 200")
    selector.matches({"color": "red", "n": 150}, key=None)      # True
    selector.evaluate({"n": 150})                               # None: color is NULL

`compile_selector` raises SelectorError (status INVALID_MESSAGE_FILTER, with the column
of the error) for any text that is not a selector, and returns None for an empty one
(no selector: every message). A message passes only when its selector is TRUE. The
language, and where hedwig chose between the brokers' readings, is docs/selectors.md.

A package of its own over `hedwig.protocol` (its status), used by whoever filters: the
hub validates a subscription's selector with it, delivery evaluates it.
"""

from bisect import bisect_right

from hedwig.protocol.messageset import parse_message_set, properties_and_keys
from hedwig.selector.compiler import CompiledSelector
from hedwig.selector.errors import SelectorError
from hedwig.selector.parser import DEFAULT_LIMITS, SelectorLimits, parse

__all__ = ["DEFAULT_LIMITS", "Selector", "SelectorError", "SelectorLimits", "compile_selector", "parse"]


class Selector:
    """A compiled selector.

    `matches(properties, key=None)` is True when the selector is TRUE of a message
    whose properties are `properties` (a dict as decoded: str -> bytes, str, int, float
    or bool) and whose key is `key` (bytes or None); `evaluate` gives the three-valued
    result (True, False, None for unknown). Both are plain functions built for this
    selector: one call per message. `properties` names what it reads, `reads_key` says
    whether it reads the key (a caller may skip decoding what no selector reads)."""

    __slots__ = ("_evaluate", "_limits", "matches", "properties", "reads_key", "text")

    def __init__(self, text: str, tree, limits: SelectorLimits = DEFAULT_LIMITS):
        self.text = text  # (not the tree: `matches` is all a filter needs to keep)
        self._limits = limits
        compiled = CompiledSelector(tree, limits.max_like_steps)
        self.matches = compiled.function("matches")
        self._evaluate = None  # (compiled when first asked for: delivery never does)
        self.properties = frozenset(compiled.properties)
        self.reads_key = compiled.reads_key

    def evaluate(self, properties, key=None):
        """True, False or None (unknown) of a message (as `matches`)."""
        if self._evaluate is None:
            compiled = CompiledSelector(parse(self.text, self._limits), self._limits.max_like_steps)
            self._evaluate = compiled.function("evaluate")
        return self._evaluate(properties, key)

    def select(self, message_set, offset: int = 0) -> list:
        """The indexes (0-based) of the messages of a plain (decompressed) message set
        that pass: what delivery sends of an entry, and what its consumed position moves
        past without sending."""
        properties, keys = properties_and_keys(message_set, offset, self.properties)
        matches = self.matches
        return [i for i, message_properties in enumerate(properties) if matches(message_properties, keys[i])]

    def select_in_steps(self, message_set, offset: int, selected: list, step: int, step_bytes: int):
        """`select` a step at a time: a generator that appends the passing indexes of
        each step to `selected` and yields after it. A step is at most `step` messages
        whose properties and keys are at most `step_bytes` (one message at least). A set
        may hold a million messages, or a few of a megabyte, and a selector cost tens of
        microseconds a message: its caller gives the reactor back between steps
        (hedwig.delivery.filtering)."""
        layout = parse_message_set(message_set, offset)
        matches = self.matches
        names = self.properties
        count = layout.count
        sized = [offsets for offsets in (layout.property_offsets, layout.key_offsets) if offsets is not None]
        start = 0
        while start < count:
            stop = min(start + step, count)
            for offsets in sized:  # (the last message whose bytes still fit, the first one whatever)
                stop = max(
                    start + 1, bisect_right(offsets, offsets[start] + step_bytes, start + 1, stop + 1) - 1
                )
            properties, keys = properties_and_keys(message_set, offset, names, start, stop, layout)
            selected.extend(
                start + i
                for i, message_properties in enumerate(properties)
                if matches(message_properties, keys[i])
            )
            start = stop
            yield

    def __repr__(self) -> str:
        return f"Selector({self.text!r})"


def compile_selector(text, limits: SelectorLimits = DEFAULT_LIMITS) -> Selector | None:
    """The Selector of `text` (None for an empty or blank one: no selector), or
    SelectorError saying where and why it is refused."""
    if text is None or not text.strip(" \t\f\n\r"):
        return None
    return Selector(text, parse(text, limits), limits)
