"""A reference evaluator of selector trees: the semantics written as plainly as they read
in docs/selectors.md, one node at a time, for the compiled selectors to be checked
against (they must agree on every tree and every message).

It shares nothing with hedwig.selector.compiler but the tree: its own type rules, its
own three-valued logic, its own LIKE (a regular expression, fine for short test values).
"""

import re

from hedwig.selector import syntax


class NotUtf8:
    """Bytes that do not decode: a value of no type."""


NOT_UTF8 = NotUtf8()


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _read(node, properties, key):
    value = key if node.name == syntax.KEY else properties.get(node.name)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return NOT_UTF8
    return value


def value(node, properties, key=None):
    """The node's value: None for NULL and unknown."""
    if isinstance(node, syntax.Literal):
        return node.value
    if isinstance(node, syntax.Identifier):
        return _read(node, properties, key)
    if isinstance(node, syntax.Negate):
        operand = value(node.operand, properties, key)
        if not _is_number(operand):
            return None
        return -operand if node.sign == "-" else operand
    if isinstance(node, syntax.Arithmetic):
        left = value(node.left, properties, key)
        right = value(node.right, properties, key)
        if not (_is_number(left) and _is_number(right)):
            return None
        try:
            if node.operator == "+":
                return left + right
            if node.operator == "-":
                return left - right
            if node.operator == "*":
                return left * right
            return None if right == 0 else left / right
        except OverflowError:
            return None
    return condition(node, properties, key)


def _compare(operator: str, left, right):
    if left is None or right is None:
        return None
    both_numbers = _is_number(left) and _is_number(right)
    same_type = type(left) is type(right) and not isinstance(left, NotUtf8)
    if operator in ("=", "<>"):
        if not (both_numbers or same_type):
            return None
        return (left == right) if operator == "=" else left != right  # (NaN: != is True)
    if not both_numbers:
        return None
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[operator]


def _and(values):
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def _or(values):
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) else False


def _not(v):
    return None if v is None else not v


def _like(pattern: str, escape, text: str) -> bool:
    parts = []
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if escape is not None and char == escape:
            parts.append(re.escape(pattern[at + 1]))
            at += 2
            continue
        parts.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
        at += 1
    return re.fullmatch("".join(parts), text, re.DOTALL) is not None


def condition(node, properties, key=None):
    """True, False or None (unknown) of a node in a condition's place."""
    if isinstance(node, syntax.Literal):
        return node.value
    if isinstance(node, syntax.Identifier):
        found = _read(node, properties, key)
        return found if isinstance(found, bool) else None
    if isinstance(node, syntax.Not):
        return _not(condition(node.operand, properties, key))
    if isinstance(node, syntax.And):
        return _and([condition(operand, properties, key) for operand in node.operands])
    if isinstance(node, syntax.Or):
        return _or([condition(operand, properties, key) for operand in node.operands])
    if isinstance(node, syntax.Comparison):
        return _compare(node.operator, value(node.left, properties, key), value(node.right, properties, key))
    if isinstance(node, syntax.Between):
        x = value(node.operand, properties, key)
        low = value(node.low, properties, key)
        high = value(node.high, properties, key)
        if node.negated:
            return _or([_compare("<", x, low), _compare(">", x, high)])
        return _and([_compare(">=", x, low), _compare("<=", x, high)])
    if isinstance(node, syntax.In):
        x = value(node.operand, properties, key)
        if not isinstance(x, str):
            return None
        return (x in node.values) != node.negated
    if isinstance(node, syntax.Like):
        x = value(node.operand, properties, key)
        if not isinstance(x, str):
            return None
        return _like(node.pattern, node.escape, x) != node.negated
    if isinstance(node, syntax.IsNull):
        return (value(node.operand, properties, key) is None) != node.negated
    raise TypeError(node)
