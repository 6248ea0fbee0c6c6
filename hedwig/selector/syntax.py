"""A selector's syntax tree, and its text.

The parser builds these; the compiler turns them into Python functions. Nodes are
frozen and compare by their content (not by where they were in the text), so a tree
printed by `to_text` and parsed again is equal to the tree printed: what the property
tests check.

Every node knows where it began in the text (`position`), how deep the tree under it
is (`depth`, bounded by the parser) and its static `kind`: BOOLEAN (a condition:
comparisons, logic, TRUE, FALSE), NUMBER (numeric literals and arithmetic), STRING
(string literals), or ANY (an identifier: its type is the message's business).
"""

from dataclasses import dataclass, field

BOOLEAN = "boolean"
NUMBER = "number"
STRING = "string"
ANY = "any"

KEY = "key"  # the identifier that names the message key, not a property


@dataclass(frozen=True, slots=True)
class Literal:
    value: object  # bool, int, float or str
    position: int = field(default=0, compare=False, repr=False)
    depth = 1

    @property
    def kind(self) -> str:
        if isinstance(self.value, bool):
            return BOOLEAN
        return STRING if isinstance(self.value, str) else NUMBER


@dataclass(frozen=True, slots=True)
class Identifier:
    name: str
    position: int = field(default=0, compare=False, repr=False)
    depth = 1
    kind = ANY

    @property
    def is_key(self) -> bool:
        return self.name == KEY


@dataclass(frozen=True, slots=True)
class Negate:
    """Unary minus (`sign` "-") or plus ("+"): a number, or unknown."""

    sign: str
    operand: object
    position: int = field(default=0, compare=False, repr=False)
    depth: int = field(default=1, compare=False, repr=False)
    kind = NUMBER


@dataclass(frozen=True, slots=True)
class Arithmetic:
    operator: str  # + - * /
    left: object
    right: object
    position: int = field(default=0, compare=False, repr=False)
    depth: int = field(default=1, compare=False, repr=False)
    kind = NUMBER


@dataclass(frozen=True, slots=True)
class Comparison:
    operator: str  # = <> < <= > >=
    left: object
    right: object
    position: int = field(default=0, compare=False, repr=False)
    depth: int = field(default=1, compare=False, repr=False)
    kind = BOOLEAN


@dataclass(frozen=True, slots=True)
class Between:
    operand: object
    low: object
    high: object
    negated: bool = False
    position: int = field(default=0, compare=False, repr=False)
    depth: int = field(default=1, compare=False, repr=False)
    kind = BOOLEAN


@dataclass(frozen=True, slots=True)
class In:
    operand: object
    values: tuple  # of str
    negated: bool = False
    position: int = field(default=0, compare=False, repr=False)
    depth: int = field(default=1, compare=False, repr=False)
    kind = BOOLEAN


@dataclass(frozen=True, slots=True)
class Like:
    operand: object
    pattern: str
    escape: str | None = None
    negated: bool = False
    position: int = field(default=0, compare=False, repr=False)
    depth: int = field(default=1, compare=False, repr=False)
    kind = BOOLEAN


@dataclass(frozen=True, slots=True)
class IsNull:
    operand: object
    negated: bool = False
    position: int = field(default=0, compare=False, repr=False)
    depth: int = field(default=1, compare=False, repr=False)
    kind = BOOLEAN


@dataclass(frozen=True, slots=True)
class Not:
    operand: object
    position: int = field(default=0, compare=False, repr=False)
    depth: int = field(default=1, compare=False, repr=False)
    kind = BOOLEAN


@dataclass(frozen=True, slots=True)
class And:
    operands: tuple  # two or more
    position: int = field(default=0, compare=False, repr=False)
    depth: int = field(default=1, compare=False, repr=False)
    kind = BOOLEAN


@dataclass(frozen=True, slots=True)
class Or:
    operands: tuple  # two or more
    position: int = field(default=0, compare=False, repr=False)
    depth: int = field(default=1, compare=False, repr=False)
    kind = BOOLEAN


# -- printing ---------------------------------------------------------------------------------
# Every compound operand is parenthesized: the text is longer than the shortest one, but
# it parses back to the same tree without a precedence table here to keep in step.


def to_text(node) -> str:
    """The selector text of a tree: parsing it gives an equal tree."""
    if isinstance(node, Literal):
        return _literal(node.value)
    if isinstance(node, Identifier):
        return node.name
    if isinstance(node, Negate):
        return f"{node.sign}{_operand(node.operand)}"
    if isinstance(node, Arithmetic | Comparison):
        return f"{_operand(node.left)} {node.operator} {_operand(node.right)}"
    not_ = "NOT " if getattr(node, "negated", False) else ""
    if isinstance(node, Between):
        return f"{_operand(node.operand)} {not_}BETWEEN {_operand(node.low)} AND {_operand(node.high)}"
    if isinstance(node, In):
        return f"{_operand(node.operand)} {not_}IN ({', '.join(map(_literal, node.values))})"
    if isinstance(node, Like):
        escape = "" if node.escape is None else f" ESCAPE {_literal(node.escape)}"
        return f"{_operand(node.operand)} {not_}LIKE {_literal(node.pattern)}{escape}"
    if isinstance(node, IsNull):
        return f"{_operand(node.operand)} IS {not_}NULL"
    if isinstance(node, Not):
        return f"NOT {_operand(node.operand)}"
    if isinstance(node, And | Or):
        joiner = " AND " if isinstance(node, And) else " OR "
        return joiner.join(map(_operand, node.operands))
    raise TypeError(f"not a selector node: {node!r}")


def _operand(node) -> str:
    if isinstance(node, Identifier) or (isinstance(node, Literal) and _is_plain(node.value)):
        return to_text(node)
    return f"({to_text(node)})"


def _is_plain(value) -> bool:
    """A literal that prints without a sign (a negative number is a unary minus)."""
    return not isinstance(value, int | float) or isinstance(value, bool) or str(value)[0] != "-"


def _literal(value) -> str:
    if value is True:
        return "TRUE"
    if value is False:
        return "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)
