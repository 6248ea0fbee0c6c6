"""What a selector says that its writer most likely did not mean, as warnings: the
selector is valid and kept, but it may select nothing and so consume past everything.

`key=user-7` parses as `key = user - 7` (the property `user` minus 7), which JMS
brokers (ActiveMQ, Artemis) accept as silently as the grammar does: a key is text and
never equals a number, so the subscription skips every message. A warning, in the
SUBSCRIBE reply and printed by `hedwig subscribe`, names the cause:

- a name written against `-` without spaces (`user-7`, `eu-west`): a subtraction of
  identifiers, where a quoted string ('user-7') was meant;
- `key` compared with a number or with arithmetic: the key is text, never a number.
"""

import dataclasses

from hedwig.selector.syntax import NUMBER, Arithmetic, Between, Comparison, Identifier

_KEY_IS_TEXT = "key is text (the message key) and never equals a number: compare it with a quoted string"


def selector_warnings(text: str, tree) -> list:
    """The warnings for the selector `text` parsed as `tree` (none: [])."""
    found = []
    for node in _nodes(tree):
        if isinstance(node, Arithmetic) and node.operator == "-":
            written = _unspaced_subtraction(text, node)
            if written is not None:
                found.append(
                    f"{written} (column {node.left.position + 1}) is {node.left.name} minus"
                    f" {_shown(text, node.right)}, not a string: a string is quoted ('{written}')"
                )
        sides = ()
        if isinstance(node, Comparison):
            sides = (node.left, node.right)
        elif isinstance(node, Between):
            sides = (node.operand, node.low, node.high)
        names_key = any(isinstance(side, Identifier) and side.is_key for side in sides)
        if names_key and any(side.kind == NUMBER for side in sides):
            found.append(_KEY_IS_TEXT)
    return list(dict.fromkeys(found))


def _nodes(node):
    yield node
    if dataclasses.is_dataclass(node):
        for field in dataclasses.fields(node):
            value = getattr(node, field.name)
            children = value if isinstance(value, tuple) else (value,)
            for child in children:
                if dataclasses.is_dataclass(child):
                    yield from _nodes(child)


def _unspaced_subtraction(text: str, node):
    """`user-7` as written when a subtraction's left side is a name written against its
    `-` and its right side against it too, else None."""
    left, right = node.left, node.right
    if not isinstance(left, Identifier):
        return None
    end = left.position + len(left.name)
    if text[end : end + 1] != "-" or right.position != end + 1:
        return None
    stop = right.position
    while stop < len(text) and (text[stop].isalnum() or text[stop] in "_$."):
        stop += 1
    return text[left.position : stop]


def _shown(text: str, node) -> str:
    if isinstance(node, Identifier):
        return f"the property {node.name}"
    stop = node.position
    while stop < len(text) and (text[stop].isalnum() or text[stop] in "_$."):
        stop += 1
    return text[node.position : stop] or "what follows"
