"""Selectors compiled once into two plain Python functions of a message's properties and
key: `matches` (is the selector TRUE?) and `evaluate` (TRUE, FALSE or unknown: True,
False or None).

The compiler writes the functions' source from the syntax tree, and only from it: every
name, string and number that came from the selector's text enters the code as a
parameter of a factory (`c0`, `c1`, ...), never as text, and the code runs with no
builtins. So nothing a subscriber writes is ever parsed by Python; what Python compiles
is made of the compiler's own fixed fragments. The result is one call per message and
straight-line tests inside it, without a Python call per node of the tree: the
properties the selector names are looked up once, at the top, then

- a comparison with a literal is inline: `v0 == c1` for `color = 'red'`, a type test
  and `v1 > c2` for `n > 100`, a set membership for IN (and for an OR of equalities of
  one property: `n = 1 OR n = 2 OR ...`), `startswith` for `LIKE 'ab%'`;
- `matches` never builds the three-valued result of AND, OR and NOT: NOT x is TRUE
  exactly when x is FALSE, AND is TRUE when all are and FALSE when one is, OR the
  other way round, so each condition compiles to a test of TRUE or of FALSE and Python's
  own `and` / `or` short-circuit them;
- what has no inline form (arithmetic, comparing two properties, a general LIKE: `like`
  with the pattern, shared by every selector that has it, and the selector's longest
  value to search) calls a small helper.

What a hub keeps of a compiled selector is `matches` (`evaluate` is compiled when first
asked for), and `matches` is kept small: its constants and helpers are its own defaults
(fast locals, one tuple), and its table of source positions, which Python keeps for
tracebacks and which weighed twice the bytecode, says "no position" in a byte per 8
code units (the code raises nothing).

The semantics (Jakarta Messaging's, with hedwig's choices where brokers differ; see
docs/selectors.md): a missing property is NULL and makes a comparison, arithmetic, IN,
LIKE and BETWEEN unknown; so does a value of the wrong type (a type mismatch). Numbers
are int and float alike (bool is not a number); `/` divides exactly (7 / 2 is 3.5) and
by zero is unknown; integer arithmetic does not wrap. Bytes values (every property of a
set without typed properties, and the key) are strings when they are UTF-8, and values
of no type otherwise (every test on them is unknown, IS NULL is false).
"""

import re

from hedwig.selector import syntax
from hedwig.selector.like import ANYTHING, CONTAINS, EXACT, GENERAL, PREFIX, SUFFIX, like_pattern

NUMBER_TYPES = frozenset((int, float))
NOT3 = {True: False, False: True, None: None}


class _Opaque:
    """The value of bytes that are not UTF-8: of no selector type, equal to nothing."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<bytes that are not UTF-8>"


OPAQUE = _Opaque()


def text_of(value: bytes):
    """A bytes value as the selector sees it: its text when UTF-8, else OPAQUE."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return OPAQUE


# -- the helpers generated code calls: each three-valued, none raising ----------------------


def equal(a, b):
    if a is None or b is None:
        return None
    a_type = a.__class__
    b_type = b.__class__
    if a_type is b_type:
        return None if a_type is _Opaque else a == b
    if a_type in NUMBER_TYPES and b_type in NUMBER_TYPES:
        return a == b
    return None


def not_equal(a, b):
    result = equal(a, b)
    return None if result is None else not result


def less(a, b):
    return a < b if a.__class__ in NUMBER_TYPES and b.__class__ in NUMBER_TYPES else None


def less_equal(a, b):
    return a <= b if a.__class__ in NUMBER_TYPES and b.__class__ in NUMBER_TYPES else None


def greater(a, b):
    return a > b if a.__class__ in NUMBER_TYPES and b.__class__ in NUMBER_TYPES else None


def greater_equal(a, b):
    return a >= b if a.__class__ in NUMBER_TYPES and b.__class__ in NUMBER_TYPES else None


def add(a, b):
    if a.__class__ in NUMBER_TYPES and b.__class__ in NUMBER_TYPES:
        try:
            return a + b
        except OverflowError:  # an int too large for a float
            return None
    return None


def subtract(a, b):
    if a.__class__ in NUMBER_TYPES and b.__class__ in NUMBER_TYPES:
        try:
            return a - b
        except OverflowError:
            return None
    return None


def multiply(a, b):
    if a.__class__ in NUMBER_TYPES and b.__class__ in NUMBER_TYPES:
        try:
            return a * b
        except OverflowError:
            return None
    return None


def divide(a, b):
    if a.__class__ in NUMBER_TYPES and b.__class__ in NUMBER_TYPES and b != 0:
        try:
            return a / b
        except OverflowError:
            return None
    return None


def negate(a):
    return -a if a.__class__ in NUMBER_TYPES else None


def plus(a):
    return a if a.__class__ in NUMBER_TYPES else None


def like(pattern, value, limit):
    if value.__class__ is not str or len(value) > limit:  # (past the budget: unknown, like.py)
        return None
    return pattern.matches(value)


def not_like(pattern, value, limit):
    if value.__class__ is not str or len(value) > limit:
        return None
    return not pattern.matches(value)


HELPERS = {  # (the only names the code knows: it runs without builtins)
    "bytes": bytes,
    "str": str,
    "bool": bool,
    "NUM": NUMBER_TYPES,
    "NOT3": NOT3,
    "text_of": text_of,
    "equal": equal,
    "not_equal": not_equal,
    "less": less,
    "less_equal": less_equal,
    "greater": greater,
    "greater_equal": greater_equal,
    "add": add,
    "subtract": subtract,
    "multiply": multiply,
    "divide": divide,
    "negate": negate,
    "plus": plus,
    "like": like,
    "not_like": not_like,
}
_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")  # (in the compiler's own text: no strings in it)


def _by_number(name: str):
    return (0, int(name[1:])) if name[0] == "c" and name[1:].isdigit() else (1, name)


NO_LIMIT = 1 << 62  # (LIKE_LIMIT of a selector with no budget: longer than any str)


def _without_positions(code):
    """`code` with a line table that says "no position" for every instruction. The
    compiler's table gives each instruction its line and columns in the generated source
    (one long line: its widest form), over twice the bytecode itself, for tracebacks of
    code that raises nothing; this one is a byte per 8 code units (CPython 3.11+'s
    format, Objects/locations.md: entries of code 15)."""
    units = len(code.co_code) // 2
    table = bytearray()
    while units > 0:
        length = min(8, units)
        table.append(0x80 | (15 << 3) | (length - 1))
        units -= length
    return code.replace(co_linetable=bytes(table))


_ARITHMETIC = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide"}
_COMPARISON = {
    "=": "equal",
    "<>": "not_equal",
    "<": "less",
    "<=": "less_equal",
    ">": "greater",
    ">=": "greater_equal",
}
_PYTHON_OPERATOR = {"=": "==", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_MIRRORED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


class _Shared:
    """An operand used twice (BETWEEN's): its first use binds a temporary, the second
    reads it. Code is emitted in the order it runs, so the first use emitted runs first."""

    __slots__ = ("code", "emitted", "kind", "name")

    def __init__(self, code: str, name: str, kind: str):
        self.code = code
        self.name = name
        self.kind = kind
        self.emitted = False


class _Membership:
    """`x = a OR x = b OR ...` over one identifier and literals of one type (numbers or
    strings), as one set lookup: OR is commutative in three-valued logic too, and every
    operand is unknown exactly when x is NULL or of the other type, as IN is."""

    __slots__ = ("identifier", "numbers", "values")

    def __init__(self, identifier, values, numbers: bool):
        self.identifier = identifier
        self.values = frozenset(values)
        self.numbers = numbers


def _equality(node):
    """(identifier, literal) of `identifier = literal` (either way round) with a number
    or string literal, else None."""
    if not isinstance(node, syntax.Comparison) or node.operator != "=":
        return None
    for name, literal in ((node.left, node.right), (node.right, node.left)):
        if (
            isinstance(name, syntax.Identifier)
            and isinstance(literal, syntax.Literal)
            and not isinstance(literal.value, bool)
        ):
            return name, literal
    return None


def _folded(operands) -> list:
    """An OR's operands with its equalities over one identifier gathered into
    _Memberships (the first of each group where the group's first was)."""
    groups = {}
    order = []
    for operand in operands:
        found = _equality(operand)
        if found is None:
            order.append(operand)
            continue
        identifier, literal = found
        group = (identifier.name, isinstance(literal.value, str))
        if group not in groups:
            groups[group] = (identifier, [])
            order.append(group)
        groups[group][1].append(literal.value)
    folded = []
    for item in order:
        if isinstance(item, tuple):
            identifier, values = groups[item]
            if len(values) == 1:
                folded.append(syntax.Comparison("=", identifier, syntax.Literal(values[0])))
            else:
                folded.append(_Membership(identifier, values, numbers=not item[1]))
        else:
            folded.append(item)
    return folded


class CompiledSelector:
    """The source of a selector's two functions and the values they are made with.

    `matches` is written at once (it is what delivery calls); `evaluate` only when asked
    for (`function("evaluate")`): a hub keeps thousands of compiled selectors and calls
    `evaluate` on none of them."""

    def __init__(self, tree, max_like_steps: int | None = None):
        self.constants = {}  # parameter name -> value
        self.properties = {}  # property name -> the local holding its value
        self.reads_key = False
        self._tree = tree
        self._temps = 0
        self._likes = {}  # (pattern, escape) -> LikePattern: one for every use in the selector
        self._like_constants = {}  # (pattern, escape) -> the parameter of its LikePattern
        self.like_steps = 0  # per character of a value, all general LIKEs of `matches` together
        self._counting = True
        self._bodies = {"matches": self._test(tree, True)}
        self._counting = False
        # (like.py: each general pattern searches values of at most this many characters)
        self.like_limit = NO_LIMIT
        if max_like_steps is not None and self.like_steps:
            self.like_limit = max(1, max_like_steps // self.like_steps)

    def _body(self, name: str) -> str:
        body = self._bodies.get(name)
        if body is None:  # (evaluate: its temporaries numbered from 1 again)
            self._temps = 0
            body = self._bodies[name] = self._condition_value(self._tree)
        return body

    def source_of(self, *names) -> str:
        """The source of a factory `make` of the functions `names` ("matches",
        "evaluate"), which it returns in that order."""
        bodies = [(name, self._body(name)) for name in names]
        fetch = [f"        {local} = P.get({name})" for local, name in self.properties.values()]
        for local, _name in self.properties.values():
            fetch.append(f"        if {local}.__class__ is bytes: {local} = text_of({local})")
        if self.reads_key:
            fetch.append("        k = None if K is None else text_of(K)")
        parameters = ", ".join([*self.constants, "LIKE_LIMIT", *HELPERS])
        lines = [f"def make({parameters}):"]
        for name, body in bodies:
            code = [*fetch, f"        return {body}"]
            # (what it uses of make's parameters as its own defaults: read as fast locals,
            # and held in one tuple, not a cell each)
            used = sorted(set(_NAME.findall("\n".join(code))) & self._parameters(), key=_by_number)
            defaults = "".join(f", {used_name}={used_name}" for used_name in used)
            lines += [f"    def {name}(P, K=None{defaults}):", *code]
        lines.append(f"    return ({', '.join(names)},)")
        return "\n".join(lines) + "\n"

    def _parameters(self) -> set:
        return {*self.constants, "LIKE_LIMIT", *HELPERS}

    @property
    def source(self) -> str:
        return self.source_of("matches", "evaluate")

    def functions(self, names=("matches", "evaluate")):
        """The functions `names`, their source compiled and run without builtins, and
        without positions in their source (_without_positions)."""
        source = self.source_of(*names)
        namespace = {"__builtins__": {}}
        exec(compile(source, "<selector>", "exec"), namespace)  # the compiler's own text
        # (popped: the functions' globals are `namespace`, and `make` holds their first code)
        made = namespace.pop("make")(**self.constants, LIKE_LIMIT=self.like_limit, **HELPERS)
        for function in made:
            function.__code__ = _without_positions(function.__code__)
        return made

    def function(self, name: str):
        """One of the functions: "matches" or "evaluate"."""
        return self.functions((name,))[0]

    # -- names -------------------------------------------------------------------------------

    def _constant(self, value) -> str:
        name = f"c{len(self.constants)}"
        self.constants[name] = value
        return name

    def _temp(self) -> str:
        self._temps += 1
        return f"t{self._temps}"

    def _identifier(self, node) -> str:
        if node.is_key:
            self.reads_key = True
            return "k"
        entry = self.properties.get(node.name)
        if entry is None:
            entry = self.properties[node.name] = (f"v{len(self.properties)}", self._constant(node.name))
        return entry[0]

    # -- values: Python expressions of the selector's value (None: NULL / unknown) -----------

    def _value(self, node) -> str:
        if isinstance(node, _Shared):
            if node.emitted:
                return node.name
            node.emitted = True
            return f"({node.name} := {node.code})"
        if isinstance(node, syntax.Literal):
            return repr(node.value) if isinstance(node.value, bool) else self._constant(node.value)
        if isinstance(node, syntax.Identifier):
            return self._identifier(node)
        if isinstance(node, syntax.Negate):
            return f"{'negate' if node.sign == '-' else 'plus'}({self._value(node.operand)})"
        if isinstance(node, syntax.Arithmetic):
            return f"{_ARITHMETIC[node.operator]}({self._value(node.left)}, {self._value(node.right)})"
        return self._condition_value(node)

    def _operand(self, node):
        """(first use, later uses) of an operand a test reads twice: a name or literal
        as it is, anything else bound to a temporary where it is first read."""
        if isinstance(node, syntax.Identifier | syntax.Literal):
            code = self._value(node)
            return code, code
        if isinstance(node, _Shared):
            return self._value(node), node.name
        name = self._temp()
        return f"({name} := {self._value(node)})", name

    # -- conditions --------------------------------------------------------------------------

    def _condition_value(self, node) -> str:
        """True, False or None, for a node in a condition's place."""
        if isinstance(node, syntax.Literal):
            return repr(node.value)
        if isinstance(node, syntax.Identifier):
            local = self._identifier(node)
            return f"({local} if {local}.__class__ is bool else None)"
        if isinstance(node, syntax.Not):
            return f"NOT3[{self._condition_value(node.operand)}]"
        if isinstance(node, syntax.And | syntax.Or):
            decisive, other = ("False", "True") if isinstance(node, syntax.And) else ("True", "False")
            operands = node.operands if isinstance(node, syntax.And) else _folded(node.operands)
            temps = [self._temp() for _ in operands]
            bound = " or ".join(
                f"({temp} := {self._condition_value(operand)}) is {decisive}"
                for temp, operand in zip(temps, operands, strict=True)
            )
            unknown = " or ".join(f"{temp} is None" for temp in temps)
            return f"({decisive} if {bound} else (None if {unknown} else {other}))"
        return self._leaf(node, "value")

    def _test(self, node, truth: bool) -> str:
        """A Python bool: the node, as a condition, is TRUE (`truth`) or is FALSE (not
        `truth`). NOT x is TRUE when x is FALSE; AND is TRUE when all are TRUE and FALSE
        when one is FALSE; OR the other way round."""
        if isinstance(node, syntax.Literal):
            return repr(node.value is truth)
        if isinstance(node, syntax.Identifier):
            return f"{self._identifier(node)} is {truth}"
        if isinstance(node, syntax.Not):
            return self._test(node.operand, not truth)
        if isinstance(node, syntax.And | syntax.Or):
            operands = node.operands if isinstance(node, syntax.And) else _folded(node.operands)
            joiner = " and " if isinstance(node, syntax.And) == truth else " or "
            return joiner.join(f"({self._test(operand, truth)})" for operand in operands)
        return self._leaf(node, "true" if truth else "false")

    # -- predicates: `want` is "true", "false" or "value" -------------------------------------

    def _leaf(self, node, want: str) -> str:
        if isinstance(node, _Membership):
            return self._membership(node, want)
        if isinstance(node, syntax.Comparison):
            return self._comparison(node.operator, node.left, node.right, want)
        if isinstance(node, syntax.Between):
            return self._between(node, want)
        if isinstance(node, syntax.In):
            return self._in(node, want)
        if isinstance(node, syntax.Like):
            return self._like(node, want)
        if isinstance(node, syntax.IsNull):
            test = f"({self._value(node.operand)} is {'not ' if node.negated else ''}None)"
            return f"not {test}" if want == "false" else test
        raise TypeError(f"not a selector node: {node!r}")

    def _comparison(self, operator: str, left, right, want: str) -> str:
        if isinstance(left, syntax.Literal) and not isinstance(right, syntax.Literal):
            operator, left, right = _MIRRORED[operator], right, left
        if not isinstance(right, syntax.Literal) or isinstance(left, syntax.Literal):
            value = f"{_COMPARISON[operator]}({self._value(left)}, {self._value(right)})"
            return value if want == "value" else f"{value} is {want == 'true'}"
        first, again = self._operand(left)
        literal = right.value
        if isinstance(literal, bool):
            if operator == "<>":
                literal = not literal
            if want == "value":
                return f"(None if {first}.__class__ is not bool else {again} is {literal})"
            return f"{first} is {literal if want == 'true' else not literal}"
        constant = self._constant(literal)
        if isinstance(literal, str):
            if (operator, want) in (("=", "true"), ("<>", "false")):
                return f"{first} == {constant}"
            if want == "value":
                test = f"{again} {_PYTHON_OPERATOR[operator]} {constant}"
                return f"(None if {first}.__class__ is not str else {test})"
            return f"{first}.__class__ is str and {again} != {constant}"
        test = f"{again} {_PYTHON_OPERATOR[operator]} {constant}"
        if want == "value":
            return f"({test} if {first}.__class__ in NUM else None)"
        return f"{first}.__class__ in NUM and {'' if want == 'true' else 'not '}{test}"

    def _between(self, node, want: str) -> str:
        operand = node.operand
        if not isinstance(operand, syntax.Identifier | syntax.Literal):
            operand = _Shared(self._value(operand), self._temp(), operand.kind)
        if node.negated:  # x < low OR x > high
            parts = (syntax.Comparison("<", operand, node.low), syntax.Comparison(">", operand, node.high))
            logic = syntax.Or
        else:  # x >= low AND x <= high
            parts = (syntax.Comparison(">=", operand, node.low), syntax.Comparison("<=", operand, node.high))
            logic = syntax.And
        expanded = logic(parts)
        if want == "value":
            return self._condition_value(expanded)
        return self._test(expanded, want == "true")

    def _membership(self, node, want: str) -> str:
        local = self._identifier(node.identifier)
        values = self._constant(node.values)
        typed = f"{local}.__class__ in NUM" if node.numbers else f"{local}.__class__ is str"
        if want == "value":
            return f"({local} in {values} if {typed} else None)"
        if want == "true":
            return f"{typed} and {local} in {values}" if node.numbers else f"{local} in {values}"
        return f"{typed} and {local} not in {values}"

    def _in(self, node, want: str) -> str:
        first, again = self._operand(node.operand)
        values = self._constant(frozenset(node.values))
        inside, outside = f"{first} in {values}", f"{first}.__class__ is str and {again} not in {values}"
        if node.negated:
            inside, outside = outside, inside
        if want == "value":
            test = f"{again} {'not in' if node.negated else 'in'} {values}"
            return f"({test} if {first}.__class__ is str else None)"
        return inside if want == "true" else outside

    def _like(self, node, want: str) -> str:
        first, again = self._operand(node.operand)
        key = (node.pattern, node.escape)
        pattern = self._likes.get(key)
        if pattern is None:
            pattern = self._likes[key] = like_pattern(node.pattern, node.escape)
        shape = pattern.shape
        if shape == GENERAL:  # three-valued: unknown for a value past its budget (like.py)
            if self._counting:
                self.like_steps += pattern.steps_per_char
            constant = self._like_constants.get(key)
            if constant is None:
                constant = self._like_constants[key] = self._constant(pattern)
            call = f"{'not_like' if node.negated else 'like'}({constant}, {first}, LIKE_LIMIT)"
            return call if want == "value" else f"{call} is {want == 'true'}"
        if shape == ANYTHING:
            match = "True"
        else:
            literal = self._constant(pattern.literal)
            match = {
                EXACT: f"{again} == {literal}",
                PREFIX: f"{again}.startswith({literal})",
                SUFFIX: f"{again}.endswith({literal})",
                CONTAINS: f"{literal} in {again}",
            }[shape]
        if want == "value":
            return f"({'not ' if node.negated else ''}({match}) if {first}.__class__ is str else None)"
        positive = (want == "true") != node.negated
        return f"{first}.__class__ is str and {'' if positive else 'not '}({match})"
