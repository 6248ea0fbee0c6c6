"""The selector's tokens: a hand-written scanner over the text, one pass, no regular
expressions (so nothing in it can backtrack).

Literals follow Jakarta Messaging, which takes Java's syntax for them:

- strings in single quotes, a quote inside doubled (`'it''s'`);
- exact numbers: decimal (`57`), hexadecimal (`0x1D`), octal (`035`), each with an
  optional `L` / `l` suffix, within a signed 64-bit long (the decimal 9223372036854775808
  only right after a unary minus: Long.MIN_VALUE);
- approximate numbers: `7.`, `.5`, `-57.9E2`, `7E3`, `1e-3`, with an optional `F` / `f` /
  `D` / `d` suffix, within a double;
- TRUE and FALSE, in any case.

Identifiers are Java identifiers (a letter, `_` or `$`, then those or digits; letters
may be any Unicode letter) and are case-sensitive; the reserved words are not
identifiers, in any case.
"""

from typing import NamedTuple

from hedwig.selector.errors import SelectorError

# Token kinds.
IDENTIFIER = "identifier"
STRING = "string"
EXACT = "exact number"
APPROXIMATE = "approximate number"
KEYWORD = "keyword"
OPERATOR = "operator"
END = "end"

KEYWORDS = frozenset(("NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "ESCAPE", "NULL", "TRUE", "FALSE"))
LONG_MAX = 2**63 - 1
LONG_MIN_MAGNITUDE = 2**63  # the one decimal literal allowed only when negated

_WHITESPACE = frozenset(" \t\f\n\r")
_DIGITS = frozenset("0123456789")
_OCTAL = frozenset("01234567")
_HEX = frozenset("0123456789abcdefABCDEF")
_TWO_CHAR_OPERATORS = frozenset(("<>", "<=", ">="))
_ONE_CHAR_OPERATORS = frozenset("=<>+-*/(),")
# Characters people reach for from other languages, and what the selector says instead.
_HINTS = {
    "!=": "'!=' is not an operator: use <> for 'not equal'",
    "==": "'==' is not an operator: use = for 'equal'",
    "%": "'%' is not an operator (there is no modulo): '%' is LIKE's wildcard, inside a pattern string",
    '"': "strings are in single quotes: 'text' (a quote inside one is doubled: 'it''s')",
    "&": "'&' is not an operator: use AND",
    "|": "'|' is not an operator: use OR",
    "!": "'!' is not an operator: use NOT",
}


class Token(NamedTuple):
    kind: str
    value: object  # the keyword (upper case), identifier, operator, or the literal's value
    position: int  # where it starts in the text


def is_identifier_start(char: str) -> bool:
    return char == "$" or char.isidentifier()


def is_identifier_part(char: str) -> bool:
    return char == "$" or ("a" + char).isidentifier()


def tokenize(text: str) -> list:
    """The tokens of `text`, ending with an END token; SelectorError at the first
    character that begins no token."""
    tokens = []
    append = tokens.append
    length = len(text)
    at = 0
    while True:
        while at < length and text[at] in _WHITESPACE:
            at += 1
        if at == length:
            append(Token(END, None, at))
            return tokens
        char = text[at]
        if char == "'":
            at = _string(text, at, append)
        elif char in _DIGITS or (char == "." and at + 1 < length and text[at + 1] in _DIGITS):
            at = _number(text, at, append)
        elif is_identifier_start(char):
            start = at
            at += 1
            while at < length and is_identifier_part(text[at]):
                at += 1
            word = text[start:at]
            upper = word.upper()
            if upper in KEYWORDS:
                append(Token(KEYWORD, upper, start))
            else:
                append(Token(IDENTIFIER, word, start))
        elif text[at : at + 2] == "==":
            raise SelectorError(text, at, _HINTS["=="])
        elif text[at : at + 2] in _TWO_CHAR_OPERATORS:
            append(Token(OPERATOR, text[at : at + 2], at))
            at += 2
        elif char in _ONE_CHAR_OPERATORS:
            append(Token(OPERATOR, char, at))
            at += 1
        else:
            hint = _HINTS.get(text[at : at + 2]) or _HINTS.get(char)
            raise SelectorError(text, at, hint or f"unexpected character {char!r}")


def _string(text: str, start: int, append) -> int:
    """Scan the string literal opening at `start`; return where the next token may begin."""
    parts = []
    at = start + 1
    while True:
        close = text.find("'", at)
        if close < 0:
            raise SelectorError(text, start, "this string literal is not closed: add a closing quote (')")
        parts.append(text[at:close])
        if text[close + 1 : close + 2] == "'":  # a doubled quote is one quote
            parts.append("'")
            at = close + 2
            continue
        append(Token(STRING, "".join(parts), start))
        return close + 1


def _number(text: str, start: int, append) -> int:
    length = len(text)
    at = start
    if text[at] == "0" and text[at + 1 : at + 2] in ("x", "X"):
        at += 2
        digits_at = at
        while at < length and text[at] in _HEX:
            at += 1
        if at == digits_at:
            raise SelectorError(text, start, "a hexadecimal number needs digits after 0x")
        value = int(text[digits_at:at], 16)
        at = _long_suffix(text, at)
        return _exact(text, start, at, value, append, "hexadecimal")
    while at < length and text[at] in _DIGITS:
        at += 1
    approximate = False
    if at < length and text[at] == ".":
        approximate = True
        at += 1
        while at < length and text[at] in _DIGITS:
            at += 1
    if at < length and text[at] in "eE":
        approximate = True
        at += 1
        if at < length and text[at] in "+-":
            at += 1
        exponent_at = at
        while at < length and text[at] in _DIGITS:
            at += 1
        if at == exponent_at:
            raise SelectorError(text, start, "the exponent of this number has no digits (write 1E3, 1E-3)")
    mantissa_end = at
    if at < length and text[at] in "fFdD":
        approximate = True
        at += 1
    if approximate:
        _check_end(text, start, at)
        value = float(text[start:mantissa_end])
        if value in (float("inf"), float("-inf")):
            raise SelectorError(text, start, "this number is beyond the range of a double")
        append(Token(APPROXIMATE, value, start))
        return at
    digits = text[start:at]
    at = _long_suffix(text, at)
    if len(digits) > 1 and digits[0] == "0":
        if not _OCTAL.issuperset(digits):
            raise SelectorError(text, start, f"{digits} is not an octal number (a leading 0 means octal)")
        return _exact(text, start, at, int(digits, 8), append, "octal")
    return _exact(text, start, at, int(digits), append, "decimal")


def _long_suffix(text: str, at: int) -> int:
    return at + 1 if text[at : at + 1] in ("l", "L") else at


def _exact(text: str, start: int, at: int, value: int, append, notation: str) -> int:
    _check_end(text, start, at)
    limit = LONG_MIN_MAGNITUDE if notation == "decimal" else LONG_MAX
    if value > limit:
        raise SelectorError(text, start, f"this {notation} number is beyond the range of a 64-bit long")
    append(Token(EXACT, value, start))
    return at


def _check_end(text: str, start: int, at: int) -> None:
    """A number must not run straight into a name or another number (`12ab`, `1.2.3`)."""
    if at < len(text) and (is_identifier_part(text[at]) or text[at] == "."):
        raise SelectorError(text, start, f"malformed number {text[start : at + 1]!r}")
