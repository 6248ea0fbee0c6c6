"""Properties of the parser and the compiler, over generated selectors and messages:

- a tree printed and parsed again is the same tree (and compiles to the same verdicts);
- the compiled `matches` and `evaluate` agree with the reference evaluator
  (tests/selector/reference.py) on every tree and message;
- no text makes the parser raise anything but SelectorError.
"""

import math

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hedwig.selector import SelectorError, SelectorLimits, compile_selector, parse
from hedwig.selector import syntax as s
from hedwig.selector.like import check_pattern
from tests.selector import reference

NAMES = ["a", "b", "n", "x", "flag", "key", "$p", "_q", "caf\u00e9"]
LONG = st.integers(-(2**63), 2**63 - 1)
FINITE = st.floats(allow_nan=False, allow_infinity=False)
TEXT = st.text(alphabet="ab%_!'\\ \u00e9\n", max_size=6)

identifiers = st.sampled_from(NAMES).map(s.Identifier)


def numbers(children):
    leaves = st.one_of(LONG.map(s.Literal), FINITE.map(s.Literal), identifiers)
    compound = st.one_of(
        # (a sign on a literal is part of the literal: the parser makes one node of both)
        st.builds(
            s.Negate, st.sampled_from("+-"), children.filter(lambda node: not isinstance(node, s.Literal))
        ),
        st.builds(s.Arithmetic, st.sampled_from("+-*/"), children, children),
    )
    return st.one_of(leaves, compound)


number_expressions = st.recursive(st.one_of(LONG.map(s.Literal), identifiers), numbers, max_leaves=4)
string_expressions = st.one_of(TEXT.map(s.Literal), identifiers)


@st.composite
def like_patterns(draw):
    escape = draw(st.sampled_from([None, "!", "\\", "%"]))
    pattern = draw(TEXT)
    assume(check_pattern(pattern, escape) is None)
    return pattern, escape


def predicates():
    comparisons = st.one_of(
        st.builds(
            s.Comparison,
            st.sampled_from(["=", "<>", "<", "<=", ">", ">="]),
            number_expressions,
            number_expressions,
        ),
        st.builds(s.Comparison, st.sampled_from(["=", "<>"]), string_expressions, string_expressions),
        st.builds(s.Comparison, st.sampled_from(["=", "<>"]), st.booleans().map(s.Literal), identifiers),
    )
    return st.one_of(
        comparisons,
        st.builds(s.Between, number_expressions, number_expressions, number_expressions, st.booleans()),
        st.builds(s.In, string_expressions, st.lists(TEXT, min_size=1, max_size=3).map(tuple), st.booleans()),
        like_patterns().flatmap(
            lambda pe: st.builds(s.Like, string_expressions, st.just(pe[0]), st.just(pe[1]), st.booleans())
        ),
        st.builds(s.IsNull, st.one_of(number_expressions, string_expressions), st.booleans()),
        st.booleans().map(s.Literal),
        identifiers,
    )


def conditions(children):
    return st.one_of(
        st.builds(s.Not, children),
        st.builds(s.And, st.lists(children, min_size=2, max_size=3).map(tuple)),
        st.builds(s.Or, st.lists(children, min_size=2, max_size=3).map(tuple)),
        st.builds(s.Comparison, st.sampled_from(["=", "<>"]), children, children),
        st.builds(s.IsNull, children, st.booleans()),
    )


selectors = st.recursive(predicates(), conditions, max_leaves=6)

values = st.one_of(
    st.booleans(),
    st.integers(-5, 5),
    LONG,
    st.floats(),  # NaN and infinities included: the compiled code must agree on them too
    TEXT,
    TEXT.map(lambda t: t.encode("utf-8")),
    st.sampled_from([b"\xff", b"a\xfe"]),
)
messages = st.dictionaries(st.sampled_from(NAMES), values, max_size=len(NAMES))
keys = st.one_of(st.none(), TEXT.map(lambda t: t.encode("utf-8")), st.just(b"\xff"))


def _verdicts(text, message, key):
    compiled = compile_selector(text)
    return compiled.evaluate(message, key), compiled.matches(message, key)


def _same(a, b) -> bool:
    return a is b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


@settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(selectors, messages, keys)
def test_a_printed_tree_parses_back_to_itself_and_compiles_to_the_same_verdicts(tree, message, key):
    text = s.to_text(tree)
    parsed = parse(text)
    assert parsed == tree, text
    assert s.to_text(parsed) == text
    assert _verdicts(text, message, key) == _verdicts(s.to_text(parsed), message, key)


@settings(
    max_examples=1500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(selectors, messages, keys)
def test_the_compiled_selector_agrees_with_the_reference_evaluator(tree, message, key):
    text = s.to_text(tree)
    expected = reference.condition(tree, message, key)
    compiled = compile_selector(text)
    assert compiled.evaluate(message, key) is expected, text
    assert compiled.matches(message, key) is (expected is True), text


FRAGMENTS = st.sampled_from(
    [
        " ",
        "(",
        ")",
        "'",
        "''",
        "'a'",
        "=",
        "<>",
        "<",
        ">=",
        "+",
        "-",
        "*",
        "/",
        ",",
        "%",
        "_",
        ".",
        "e",
        "E",
        "0",
        "1",
        "07",
        "08",
        "0x",
        "0x1F",
        "1L",
        "1.5",
        ".5",
        "1e",
        "1e5",
        "1e400",
        "9223372036854775808",
        "a",
        "key",
        "NOT",
        "AND",
        "OR",
        "BETWEEN",
        "IN",
        "LIKE",
        "ESCAPE",
        "IS",
        "NULL",
        "TRUE",
        "false",
        "!",
        "\u00e9",
        "$",
        "\n",
        '"',
        "\x00",
        "\ud800",
    ]
)


@settings(max_examples=3000, deadline=None)
@given(st.lists(FRAGMENTS, max_size=14).map("".join))
def test_no_text_made_of_selector_pieces_breaks_the_parser(text):
    try:
        compiled = compile_selector(text)
    except SelectorError as e:
        assert 0 <= e.position <= len(text)
        assert str(e.column) in e.reason
        return
    if compiled is not None:
        compiled.matches({"a": 1, "key": "k"}, b"k")
        compiled.evaluate({"a": "x"}, None)


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=60))
def test_no_text_at_all_breaks_the_parser(text):
    try:
        compile_selector(text, SelectorLimits(max_length=50))
    except SelectorError as e:
        assert 0 <= e.position <= len(text)


equalities = st.builds(
    s.Comparison,
    st.just("="),
    st.sampled_from(["a", "n", "key"]).map(s.Identifier),
    st.one_of(st.integers(-3, 3), st.sampled_from([0.0, 1.0, 2.5]), st.sampled_from(["", "a", "1"])).map(
        s.Literal
    ),
)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.one_of(equalities, predicates()), min_size=2, max_size=8), messages, keys)
def test_ors_of_equalities_gathered_into_set_lookups_agree_with_the_reference(operands, message, key):
    """`n = 1 OR n = 2 OR ...` compiles to one set lookup per property and type."""
    tree = s.Or(tuple(operands))
    text = s.to_text(tree)
    expected = reference.condition(tree, message, key)
    for compiled in (compile_selector(text), compile_selector(f"NOT ({text})")):
        found = compiled.evaluate(message, key)
        assert found is (expected if compiled.text == text else reference._not(expected)), compiled.text
        assert compiled.matches(message, key) is (found is True)
