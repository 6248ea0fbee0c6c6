"""The selector language piece by piece: literals, identifiers, the tree the parser
builds, the errors it raises (where, and saying what), the bounds on a hostile selector,
and what the compiler makes of it."""

import pytest

from hedwig.protocol.status import Status
from hedwig.selector import SelectorError, SelectorLimits, compile_selector, parse
from hedwig.selector import syntax as s
from hedwig.selector.compiler import CompiledSelector
from hedwig.selector.like import GENERAL, LikePattern


def literal(text: str):
    tree = parse(f"x = {text}")
    return tree.right.value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("57", 57),
        ("+62", 62),
        ("-957", -957),
        ("57L", 57),
        ("57l", 57),
        ("0", 0),
        ("0L", 0),
        ("035", 29),
        ("035L", 29),
        ("0x1d", 29),
        ("0X1D", 29),
        ("0x1DL", 29),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("-9223372036854775808L", -(2**63)),
        ("0x7fffffffffffffff", 2**63 - 1),
        ("0777777777777777777777", 2**63 - 1),
        ("7E3", 7000.0),
        ("-57.9E2", -5790.0),
        ("7.", 7.0),
        ("-95.7", -95.7),
        ("+6.2", 6.2),
        (".5", 0.5),
        ("1.e1", 10.0),
        ("1e-3", 0.001),
        ("1E+3", 1000.0),
        ("1.5f", 1.5),
        ("1.5D", 1.5),
        ("2d", 2.0),
        ("09.5", 9.5),
        ("'it''s'", "it's"),
        ("''", ""),
        ("'caf\u00e9 \n\t'", "caf\u00e9 \n\t"),
        ("TRUE", True),
        ("false", False),
        ("tRuE", True),
    ],
)
def test_literals(text, value):
    found = literal(text)
    assert found == value and type(found) is type(value)


@pytest.mark.parametrize(
    ("text", "column", "says"),
    [
        ("x = 9223372036854775808", 5, "64-bit long"),
        ("x = 0x8000000000000000", 5, "64-bit long"),
        ("x = -0x8000000000000000", 6, "64-bit long"),
        ("x = 08", 5, "not an octal number"),
        ("x = 0x", 5, "needs digits"),
        ("x = 1e", 5, "exponent"),
        ("x = 1e400", 5, "range of a double"),
        ("x = 12ab", 5, "malformed number"),
        ("x = 1.2.3", 5, "malformed number"),
        ("x = 1.5L", 5, "malformed number"),
        ("x = 'open", 5, "not closed"),
        ('x = "double"', 5, "single quotes"),
        ("x != 1", 3, "use <>"),
        ("x == 1", 3, "use ="),
        ("x % 2 = 0", 3, "no modulo"),
        ("x = 1 && y = 2", 7, "use AND"),
        ("x = 1 || y", 7, "use OR"),
        ("!x", 1, "use NOT"),
        ("x = #", 5, "unexpected character"),
    ],
)
def test_lexical_errors_point_at_the_token(text, column, says):
    with pytest.raises(SelectorError) as caught:
        parse(text)
    error = caught.value
    assert (error.column, error.position) == (column, column - 1)
    assert says in error.reason
    assert error.status is Status.INVALID_MESSAGE_FILTER
    assert f"at column {column}:" in error.reason


def test_identifiers_are_java_identifiers_and_case_sensitive():
    for name in ("a", "A1", "_", "$", "$x_1", "caf\u00e9", "\u0394\u03b5\u03bb\u03c4\u03b1", "JMSType"):
        assert parse(f"{name} = 1").left == s.Identifier(name)
    assert parse("a = 1") != parse("A = 1")
    assert compile_selector("ab = 1 AND aB = 2").matches({"ab": 1, "aB": 2})


@pytest.mark.parametrize(
    "word", ["NOT", "and", "Or", "between", "LIKE", "in", "IS", "escape", "null", "TRUE", "False"]
)
def test_reserved_words_are_not_identifiers(word):
    with pytest.raises(SelectorError):
        parse(f"{word} = 1")


def test_the_tree_keeps_the_specifications_precedence():
    assert parse("a OR b AND c") == s.Or((s.Identifier("a"), s.And((s.Identifier("b"), s.Identifier("c")))))
    assert parse("NOT a AND b") == s.And((s.Not(s.Identifier("a")), s.Identifier("b")))
    assert parse("NOT a = 1") == s.Not(s.Comparison("=", s.Identifier("a"), s.Literal(1)))
    assert parse("a + b * c = 1").left == s.Arithmetic(
        "+", s.Identifier("a"), s.Arithmetic("*", s.Identifier("b"), s.Identifier("c"))
    )
    assert parse("a - b - c = 1").left == s.Arithmetic(
        "-", s.Arithmetic("-", s.Identifier("a"), s.Identifier("b")), s.Identifier("c")
    )
    assert parse("-a * b = 1").left == s.Arithmetic("*", s.Negate("-", s.Identifier("a")), s.Identifier("b"))
    assert parse("a BETWEEN 1 AND 2 AND b") == s.And(
        (s.Between(s.Identifier("a"), s.Literal(1), s.Literal(2)), s.Identifier("b"))
    )
    assert parse("a OR b OR c") == s.Or((s.Identifier("a"), s.Identifier("b"), s.Identifier("c")))
    assert parse("(a OR b) OR c") == s.Or((s.Or((s.Identifier("a"), s.Identifier("b"))), s.Identifier("c")))


@pytest.mark.parametrize(
    ("text", "column", "says"),
    [
        ("a =", 4, "expected a value, found the end"),
        ("(a = 1", 7, "to close the '(' at column 1"),
        ("a = 1)", 6, "closes no '('"),
        ("a = 1 b = 2", 7, "expected AND, OR or the end"),
        ("a = b = c", 7, "one predicate holds one comparison"),
        ("a < b = TRUE", 7, "one predicate holds one comparison"),
        ("3", 1, "must be a condition"),
        ("a + 1", 3, "must be a condition"),
        ("'text'", 1, "must be a condition"),
        ("a AND 5", 7, "an operand of AND must be a condition"),
        ("NOT 'x'", 5, "the operand of NOT must be a condition"),
        ("a = 1 OR 2", 10, "an operand of OR must be a condition"),
        ("TRUE = 0", 8, "a boolean is never = a number"),
        ("'a' = 1", 7, "a string is never = a number"),
        ("(a = 1) = 1", 11, "a boolean is never = a number"),
        ("a > 'x'", 5, "> compares numbers"),
        ("TRUE < a", 1, "< compares numbers"),
        ("a BETWEEN 'x' AND 2", 11, "BETWEEN takes numbers"),
        ("a BETWEEN 1 OR 2", 13, "expected AND between the bounds"),
        ("'a' + 1 = 2", 1, "no string concatenation"),
        ("TRUE * 2 = 2", 1, "* works on numbers"),
        ("-'a' = 1", 2, "unary - takes numbers"),
        ("a = NULL", 5, "NULL is not a value"),
        ("a IS 5", 6, "expected NULL after IS"),
        ("a IS NOT 5", 10, "expected NULL after IS NOT"),
        ("a NOT b", 7, "expected BETWEEN, IN or LIKE after NOT"),
        ("a IN 'x'", 6, "expected '('"),
        ("a IN ()", 7, "an IN list holds string literals"),
        ("a IN ('x' 'y')", 11, "expected ',' or ')'"),
        ("a IN (1, 2)", 7, "for numbers use"),
        ("5 IN ('5')", 1, "IN tests strings, not a number"),
        ("5 LIKE '5'", 1, "LIKE matches strings, not a number"),
        ("a LIKE b", 8, "LIKE takes a pattern in a string literal"),
        ("a LIKE 'x' ESCAPE 'ab'", 19, "one character"),
        ("a LIKE 'x' ESCAPE ''", 19, "one character"),
        ("a LIKE 'ab!' ESCAPE '!'", 8, "escapes nothing"),
        ("", 1, "empty"),
        ("a = = 1", 5, "expected a value, found '='"),
        ("AND a", 1, "reserved word AND"),
    ],
)
def test_syntax_errors_say_where_and_what(text, column, says):
    with pytest.raises(SelectorError) as caught:
        parse(text)
    assert caught.value.column == column, caught.value.reason
    assert says in caught.value.reason


def test_an_error_quotes_only_a_little_of_a_long_selector():
    text = "a = 1 AND " * 300 + "a = "
    with pytest.raises(SelectorError) as caught:
        parse(text)
    error = caught.value
    assert error.position == len(text)
    assert len(error.reason) < 200
    assert "(near '...1 AND a = 1 AND a = >>>')" in error.reason


# -- bounds on a hostile selector ---------------------------------------------------------------


def test_the_selector_length_is_bounded():
    limits = SelectorLimits(max_length=100)
    parse("a = '" + "x" * 94 + "'", limits)
    with pytest.raises(SelectorError, match="at most 100 characters; this one has 101"):
        parse("a = '" + "x" * 95 + "'", limits)


@pytest.mark.parametrize(
    "shape",
    [
        lambda n: "(" * n + "a" + ")" * n,
        lambda n: "NOT " * n + "a",
        lambda n: "a = " + "-" * n + "1",
        lambda n: "a = " + " + ".join(["1"] * (n + 1)),
        lambda n: "a = " + "(" * n + "1" + ")" * n,
        lambda n: "(" * n + "a = 1" + ")" * n,
    ],
    ids=["parentheses", "nots", "signs", "sum", "nested-values", "nested-condition"],
)
def test_nesting_is_bounded(shape):
    limits = SelectorLimits(max_depth=20)
    with pytest.raises(SelectorError, match="nests more than 20 deep"):
        parse(shape(40), limits)
    assert compile_selector(shape(10), limits) is not None


def test_the_default_depth_compiles_at_its_limit():
    """The deepest selectors the default limits let through compile and run: the
    parser's and Python's compiler's recursion both stay far from their limits."""
    for text in (
        "NOT " * 60 + "a",
        "(" * 60 + "a = 1" + ")" * 60,
        "a = " + " + ".join(["b"] * 60),
        "(" * 30 + "NOT " * 30 + "a > 1" + ")" * 30,
    ):
        selector = compile_selector(text)
        selector.matches({"a": 2, "b": 1})
        selector.evaluate({})
    with pytest.raises(SelectorError, match="nests"):
        compile_selector("NOT " * 70 + "a")


def test_a_wide_selector_compiles_flat():
    """Long chains of AND / OR are one node each, however long."""
    text = " OR ".join(f"a = {i}" for i in range(300))
    selector = compile_selector(text)
    assert selector.matches({"a": 299}) and not selector.matches({"a": 300})


def test_in_lists_are_bounded():
    limits = SelectorLimits(max_in_values=3)
    parse("a IN ('1', '2', '3')", limits)
    with pytest.raises(SelectorError, match="at most 3 strings") as caught:
        parse("a IN ('1', '2', '3', '4')", limits)
    assert caught.value.column == 22


def test_like_patterns_are_bounded():
    limits = SelectorLimits(max_like_pattern=5)
    parse("a LIKE '%abc%'", limits)
    with pytest.raises(SelectorError, match="at most 5 characters"):
        parse("a LIKE '%abcd%'", limits)


def test_a_piece_of_a_like_pattern_with_an_underscore_is_bounded():
    """Finding a piece with `_` costs its length per character of the value; a piece
    without one is found by str.find, so only the first is bounded."""
    limits = SelectorLimits(max_like_segment=8)
    parse("a LIKE '%a_aaaaaa%" + "b" * 50 + "%'", limits)
    with pytest.raises(SelectorError, match="holds _ is at most 8 characters; this one has 9") as caught:
        parse("a LIKE '%a_aaaaaaa%'", limits)
    assert caught.value.column == 8
    parse("a LIKE '%a!_aaaaaaaaaaaa%' ESCAPE '!'", limits)  # (an escaped _ is a character)
    parse("a LIKE 'a_aaaaaaaaaaaa%a_aaaaaaaaaaaa'", limits)  # (the first and last pieces match in place)


def test_a_pattern_that_backtracks_a_regular_expression_is_linear_here():
    """`%a%a%a...%b` as a regular expression of `.*` would try every way of placing the
    a's; cut at its %s it is found leftmost, once."""
    pattern = "%a" * 40 + "%b"
    selector = compile_selector(f"x LIKE '{pattern}'")
    assert selector.matches({"x": "a" * 5000}) is False
    assert selector.matches({"x": "a" * 5000 + "b"}) is True
    underscores = LikePattern("%" + "a_" * 30 + "%b")
    assert underscores.shape == GENERAL
    assert underscores.matches("ab" * 4000 + "a") is False
    assert underscores.matches("ab" * 4000) is True


# -- the compiler ----------------------------------------------------------------------------


def test_no_text_of_the_selector_reaches_the_compiled_source():
    """Names, strings and numbers enter the generated code as parameters, never as text."""
    text = (
        "\"__import__('os')\" = 'x'' OR 1 = 1 --' AND evil_name LIKE '%'')(%' ESCAPE '!' "
        "AND n BETWEEN 123456789 AND 987654321 AND s IN ('__class__', 'exec_me')"
    )
    with pytest.raises(SelectorError):
        compile_selector(text)  # (no double quotes in the language)
    text = text.replace("\"__import__('os')\"", "weird_$name\u00e9")
    source = CompiledSelector(parse(text)).source
    for fragment in (
        "weird",
        "__import__",
        "1 --",
        "evil_name",
        ")(%",
        "123456789",
        "987654321",
        "exec_me",
        "'",
    ):
        assert fragment not in source, fragment
    selector = compile_selector(text)
    message = {"weird_$name\u00e9": "x' OR 1 = 1 --", "evil_name": "')(", "n": 200000000, "s": "exec_me"}
    assert selector.matches(message) is True


def test_the_compiled_code_runs_without_builtins():
    matches, _ = CompiledSelector(parse("a = 1")).functions()
    assert matches.__globals__["__builtins__"] == {}


def test_a_selector_names_what_it_reads():
    selector = compile_selector("color = 'red' AND (n > 1 OR key LIKE 'a%') AND color <> 'x'")
    assert selector.properties == {"color", "n"}
    assert selector.reads_key is True
    assert compile_selector("a = 1").reads_key is False


def test_values_of_other_types_in_properties_are_not_numbers():
    """bool is not a number (True is never 1); a NaN compares as IEEE says."""
    assert compile_selector("n = 1").evaluate({"n": True}) is None
    assert compile_selector("flag = TRUE").evaluate({"flag": 1}) is None
    assert compile_selector("n = n").evaluate({"n": float("nan")}) is False
    assert compile_selector("n <> 1").evaluate({"n": float("nan")}) is True
