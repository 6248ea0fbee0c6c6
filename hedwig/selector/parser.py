"""The selector grammar: a recursive-descent parser from tokens to a syntax tree, with
Jakarta Messaging's static rules and the bounds that keep a hostile selector cheap.

    selector    := or EOF
    or          := and (OR and)*
    and         := not (AND not)*
    not         := NOT not | predicate
    predicate   := sum [ comparison sum
                       | [NOT] BETWEEN sum AND sum
                       | [NOT] IN '(' string (',' string)* ')'
                       | [NOT] LIKE string [ESCAPE string]
                       | IS [NOT] NULL ]
    sum         := product (('+' | '-') product)*
    product     := unary (('*' | '/') unary)*
    unary       := ('+' | '-') unary | primary
    primary     := literal | identifier | '(' or ')'

Precedence is the specification's: arithmetic, then comparison, then NOT, AND, OR. NOT
applies to a whole comparison (`NOT a = 1` is `NOT (a = 1)`), as the specification and
qpid read it. A predicate holds one comparison: `a = b = c` needs parentheses.

Static rules (each an error at the operand's position): a condition (the selector, an
operand of AND / OR / NOT) is a comparison, TRUE / FALSE or an identifier; arithmetic and
<, <=, >, >=, BETWEEN take numbers (or identifiers), never a string or boolean literal;
= and <> never compare literals of different types (`TRUE = 0`); IN takes string
literals, LIKE a string pattern and a one-character ESCAPE; NULL appears only in IS
[NOT] NULL. Reserved words are not identifiers.
"""

from dataclasses import dataclass

from hedwig.selector import syntax
from hedwig.selector.errors import SelectorError
from hedwig.selector.lexer import (
    APPROXIMATE,
    END,
    EXACT,
    IDENTIFIER,
    KEYWORD,
    LONG_MIN_MAGNITUDE,
    OPERATOR,
    STRING,
    tokenize,
)
from hedwig.selector.like import check_pattern
from hedwig.selector.syntax import ANY, BOOLEAN, NUMBER

_COMPARISONS = frozenset(("=", "<>", "<", "<=", ">", ">="))
_ORDERING = frozenset(("<", "<=", ">", ">="))
_KIND_NAMES = {BOOLEAN: "a boolean", NUMBER: "a number", syntax.STRING: "a string", ANY: "a value"}


@dataclass(frozen=True)
class SelectorLimits:
    """The most a selector may ask of the hub, which evaluates it for every message its
    subscription could receive: the text's length (characters), how deeply its
    expressions nest (parentheses, NOT, unary signs, each arithmetic operator of a
    chain), how many strings one IN list holds, the length of one LIKE pattern, and of
    a piece of one between %s that holds a `_` (LIKE costs at most the value's length
    times that, never more; see like.py), and the steps (characters of a value times
    a pattern's steps per character) all general LIKE patterns of one selector may take
    on one message: a longer value makes them unknown (like.py)."""

    max_length: int = 4096
    max_depth: int = 64
    max_in_values: int = 512
    max_like_pattern: int = 256
    max_like_segment: int = 16
    max_like_steps: int = 1 << 22


DEFAULT_LIMITS = SelectorLimits()


def parse(text: str, limits: SelectorLimits = DEFAULT_LIMITS):
    """The syntax tree of `text`, or SelectorError saying where and why it is refused."""
    if not isinstance(text, str):
        raise TypeError(f"a selector is a str, not {type(text).__name__}")
    if len(text) > limits.max_length:
        raise SelectorError(
            text,
            limits.max_length,
            f"a selector is at most {limits.max_length} characters; this one has {len(text)}",
        )
    try:
        return _Parser(text, tokenize(text), limits).selector()
    except RecursionError:  # (only with a max_depth set beyond what Python's stack holds)
        raise SelectorError(text, 0, "the selector nests too deeply") from None


class _Parser:
    def __init__(self, text: str, tokens: list, limits: SelectorLimits):
        self.text = text
        self.tokens = tokens
        self.at = 0
        self.limits = limits
        self.nesting = 0  # how deep the parse has recursed

    # -- tokens ------------------------------------------------------------------------------

    @property
    def token(self):
        return self.tokens[self.at]

    def advance(self):
        token = self.tokens[self.at]
        self.at += 1
        return token

    def at_keyword(self, *words) -> bool:
        token = self.tokens[self.at]
        return token.kind == KEYWORD and token.value in words

    def at_operator(self, *operators) -> bool:
        token = self.tokens[self.at]
        return token.kind == OPERATOR and token.value in operators

    def error(self, position: int, problem: str) -> SelectorError:
        return SelectorError(self.text, position, problem)

    def found(self, token=None) -> str:
        token = token or self.token
        if token.kind == END:
            return "the end of the selector"
        if token.kind == STRING:
            return "a string"
        if token.kind in (EXACT, APPROXIMATE):
            return "a number"
        if token.kind == KEYWORD:
            return token.value
        if token.kind == IDENTIFIER:
            return f"the identifier {token.value!r}"
        return repr(token.value)

    def expect_keyword(self, word: str, what: str):
        if not self.at_keyword(word):
            raise self.error(self.token.position, f"expected {word} {what}, found {self.found()}")
        return self.advance()

    # -- depth -------------------------------------------------------------------------------

    def depth(self, position: int, *children) -> int:
        """The depth of a node over `children`, checked to be at most max_depth."""
        depth = 1 + max(child.depth for child in children)
        if depth > self.limits.max_depth:
            raise self.error(position, f"the selector nests more than {self.limits.max_depth} deep here")
        return depth

    def enter(self, position: int) -> None:
        self.nesting += 1
        if self.nesting > self.limits.max_depth:
            raise self.error(position, f"the selector nests more than {self.limits.max_depth} deep here")

    # -- rules -------------------------------------------------------------------------------

    def selector(self):
        if self.token.kind == END:
            raise self.error(0, "the selector is empty")
        tree = self.or_()
        if self.token.kind != END:
            raise self.error(self.token.position, self.unexpected_after_condition())
        self.condition(tree, "the selector")
        return tree

    def unexpected_after_condition(self) -> str:
        if self.at_operator(*_COMPARISONS):
            return (
                f"{self.token.value!r} follows a comparison: one predicate holds one comparison "
                "(put the first in parentheses to compare its result)"
            )
        if self.at_operator(")"):
            return "this ')' closes no '('"
        return f"expected AND, OR or the end of the selector, found {self.found()}"

    def condition(self, node, where: str):
        """`node`, checked to be a condition (true, false or unknown)."""
        if node.kind not in (BOOLEAN, ANY):
            raise self.error(
                node.position,
                f"{where} must be a condition (a comparison, TRUE, FALSE or a boolean property), "
                f"not {_KIND_NAMES[node.kind]}",
            )
        return node

    def or_(self):
        first = self.and_()
        if not self.at_keyword("OR"):
            return first
        operands = [self.condition(first, "an operand of OR")]
        position = self.token.position
        while self.at_keyword("OR"):
            self.advance()
            operands.append(self.condition(self.and_(), "an operand of OR"))
        return syntax.Or(tuple(operands), position, self.depth(position, *operands))

    def and_(self):
        first = self.not_()
        if not self.at_keyword("AND"):
            return first
        operands = [self.condition(first, "an operand of AND")]
        position = self.token.position
        while self.at_keyword("AND"):
            self.advance()
            operands.append(self.condition(self.not_(), "an operand of AND"))
        return syntax.And(tuple(operands), position, self.depth(position, *operands))

    def not_(self):
        if not self.at_keyword("NOT"):
            return self.predicate()
        position = self.advance().position
        self.enter(position)
        operand = self.condition(self.not_(), "the operand of NOT")
        self.nesting -= 1
        return syntax.Not(operand, position, self.depth(position, operand))

    def predicate(self):
        left = self.sum()
        token = self.token
        if token.kind == OPERATOR and token.value in _COMPARISONS:
            self.advance()
            right = self.sum()
            return self.comparison(token.value, left, right, token.position)
        if token.kind != KEYWORD:
            return left
        negated = False
        if token.value == "NOT":
            following = self.tokens[self.at + 1]
            if following.kind != KEYWORD or following.value not in ("BETWEEN", "IN", "LIKE"):
                raise self.error(
                    following.position,
                    f"expected BETWEEN, IN or LIKE after NOT, found {self.found(following)}",
                )
            self.advance()
            negated = True
            token = self.token
        if token.value == "BETWEEN":
            return self.between(left, negated)
        if token.value == "IN":
            return self.in_(left, negated)
        if token.value == "LIKE":
            return self.like(left, negated)
        if token.value == "IS":
            return self.is_null(left)
        return left

    def comparison(self, operator: str, left, right, position: int):
        for operand in (left, right):
            if operand.kind in (BOOLEAN, syntax.STRING) and operator in _ORDERING:
                raise self.error(
                    operand.position,
                    f"{operator} compares numbers; {_KIND_NAMES[operand.kind]} compares only with = and <>",
                )
        if ANY not in (left.kind, right.kind) and left.kind != right.kind:
            raise self.error(
                right.position,
                f"{_KIND_NAMES[left.kind]} is never {operator} {_KIND_NAMES[right.kind]}: "
                "compare values of one type (numbers with numbers, strings with strings)",
            )
        return syntax.Comparison(operator, left, right, position, self.depth(position, left, right))

    def between(self, operand, negated: bool):
        position = self.advance().position
        low = self.sum()
        self.expect_keyword("AND", "between the bounds of BETWEEN")
        high = self.sum()
        for part in (operand, low, high):
            self.number(part, "BETWEEN")
        return syntax.Between(operand, low, high, negated, position, self.depth(position, operand, low, high))

    def in_(self, operand, negated: bool):
        position = self.advance().position
        if operand.kind not in (syntax.STRING, ANY):
            raise self.error(operand.position, f"IN tests strings, not {_KIND_NAMES[operand.kind]}")
        if not self.at_operator("("):
            raise self.error(
                self.token.position, f"expected '(' and a list of strings after IN, found {self.found()}"
            )
        self.advance()
        values = []
        while True:
            if self.token.kind != STRING:
                raise self.error(
                    self.token.position,
                    f"an IN list holds string literals ('a', 'b'), found {self.found()}"
                    + (
                        "; for numbers use = ... OR ... or BETWEEN"
                        if self.token.kind in (EXACT, APPROXIMATE)
                        else ""
                    ),
                )
            if len(values) == self.limits.max_in_values:
                raise self.error(
                    self.token.position, f"an IN list holds at most {self.limits.max_in_values} strings"
                )
            values.append(self.advance().value)
            if self.at_operator(")"):
                self.advance()
                break
            if not self.at_operator(","):
                raise self.error(
                    self.token.position, f"expected ',' or ')' in the IN list, found {self.found()}"
                )
            self.advance()
        return syntax.In(operand, tuple(values), negated, position, self.depth(position, operand))

    def like(self, operand, negated: bool):
        position = self.advance().position
        if operand.kind not in (syntax.STRING, ANY):
            raise self.error(operand.position, f"LIKE matches strings, not {_KIND_NAMES[operand.kind]}")
        if self.token.kind != STRING:
            raise self.error(
                self.token.position, f"LIKE takes a pattern in a string literal, found {self.found()}"
            )
        pattern_token = self.advance()
        pattern = pattern_token.value
        if len(pattern) > self.limits.max_like_pattern:
            raise self.error(
                pattern_token.position, f"a LIKE pattern is at most {self.limits.max_like_pattern} characters"
            )
        escape = None
        if self.at_keyword("ESCAPE"):
            self.advance()
            escape_token = self.token
            if escape_token.kind != STRING or len(escape_token.value) != 1:
                raise self.error(
                    escape_token.position, "ESCAPE takes one character in a string literal: ESCAPE '\\'"
                )
            escape = self.advance().value
        problem = check_pattern(pattern, escape, self.limits.max_like_segment)
        if problem:
            raise self.error(pattern_token.position, problem)
        return syntax.Like(operand, pattern, escape, negated, position, self.depth(position, operand))

    def is_null(self, operand):
        position = self.advance().position
        negated = False
        if self.at_keyword("NOT"):
            self.advance()
            negated = True
        self.expect_keyword("NULL", "after IS" + (" NOT" if negated else ""))
        return syntax.IsNull(operand, negated, position, self.depth(position, operand))

    def number(self, node, where: str):
        if node.kind not in (NUMBER, ANY):
            raise self.error(node.position, f"{where} takes numbers, not {_KIND_NAMES[node.kind]}")
        return node

    def sum(self):
        left = self.product()
        while self.at_operator("+", "-"):
            token = self.advance()
            right = self.product()
            left = self.arithmetic(token, left, right)
        return left

    def product(self):
        left = self.unary()
        while self.at_operator("*", "/"):
            token = self.advance()
            right = self.unary()
            left = self.arithmetic(token, left, right)
        return left

    def arithmetic(self, token, left, right):
        for operand in (left, right):
            if operand.kind not in (NUMBER, ANY):
                raise self.error(
                    operand.position,
                    f"{token.value} works on numbers, not {_KIND_NAMES[operand.kind]}"
                    + (" (there is no string concatenation)" if operand.kind == syntax.STRING else ""),
                )
        return syntax.Arithmetic(
            token.value, left, right, token.position, self.depth(token.position, left, right)
        )

    def unary(self):
        if not self.at_operator("+", "-"):
            return self.primary()
        token = self.advance()
        following = self.token
        if token.value == "-" and following.kind == EXACT and following.value == LONG_MIN_MAGNITUDE:
            self.advance()  # -9223372036854775808: Long.MIN_VALUE
            return syntax.Literal(-LONG_MIN_MAGNITUDE, token.position)
        self.enter(token.position)
        operand = self.number(self.unary(), f"unary {token.value}")
        self.nesting -= 1
        if isinstance(operand, syntax.Literal):  # a signed number is one literal
            value = -operand.value if token.value == "-" else operand.value
            if isinstance(value, int) and not -LONG_MIN_MAGNITUDE <= value < LONG_MIN_MAGNITUDE:
                raise self.error(token.position, "this number is beyond the range of a 64-bit long")
            return syntax.Literal(value, token.position)
        return syntax.Negate(token.value, operand, token.position, self.depth(token.position, operand))

    def primary(self):
        token = self.token
        kind = token.kind
        if kind in (EXACT, APPROXIMATE, STRING):
            self.advance()
            if kind == EXACT and token.value == LONG_MIN_MAGNITUDE:
                raise self.error(token.position, "this decimal number is beyond the range of a 64-bit long")
            return syntax.Literal(token.value, token.position)
        if kind == IDENTIFIER:
            self.advance()
            return syntax.Identifier(token.value, token.position)
        if kind == KEYWORD and token.value in ("TRUE", "FALSE"):
            self.advance()
            return syntax.Literal(token.value == "TRUE", token.position)
        if self.at_operator("("):
            self.advance()
            self.enter(token.position)
            inner = self.or_()
            self.nesting -= 1
            if not self.at_operator(")"):
                raise self.error(
                    self.token.position,
                    f"expected ')' to close the '(' at column {token.position + 1}, found {self.found()}",
                )
            self.advance()
            return inner
        if kind == KEYWORD and token.value == "NULL":
            raise self.error(token.position, "NULL is not a value: test for it with IS NULL or IS NOT NULL")
        if kind == KEYWORD:
            raise self.error(token.position, f"expected a value, found the reserved word {token.value}")
        raise self.error(token.position, f"expected a value, found {self.found()}")
