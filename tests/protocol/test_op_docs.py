"""docs/protocol.md says of every op what its spec (hedwig/protocol/spec.py) declares: the
table of ops (direction, whether it is answered, permission), the statuses each request
may be answered with, and the permissions under "AUTH"."""

import re
from pathlib import Path

import pytest

from hedwig.protocol.ops import Op
from hedwig.protocol.spec import AUTH_STATUSES, COMMON_STATUSES, OPS, Permission, Reply
from hedwig.protocol.status import Status

DOC = (Path(__file__).parents[2] / "docs" / "protocol.md").read_text()


def table(header: str) -> list[list[str]]:
    """The rows of the markdown table whose header line begins with `header`."""
    lines = DOC.splitlines()
    start = next(
        i for i, line in enumerate(lines) if line.replace(" ", "").startswith(header.replace(" ", ""))
    )
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def reply_kind(text: str) -> Reply:
    if text.startswith("RESPONSE"):
        return Reply.ALWAYS
    if text == "none, unless it fails":
        return Reply.ON_FAILURE
    assert text == "none", f"a reply the check cannot read: {text!r}"
    return Reply.NONE


def test_every_op_has_a_spec_and_every_spec_an_op():
    assert set(OPS) == set(Op)
    assert all(spec.op is op for op, spec in OPS.items())


def test_the_table_of_ops_says_what_each_spec_declares():
    rows = {int(code): cells for code, *cells in table("| op | name | direction | reply | permission |")}
    assert sorted(rows) == sorted(int(op) for op in OPS)
    for op, spec in OPS.items():
        name, direction, reply, permission = rows[int(op)]
        assert name == op.name
        assert direction == spec.direction.value, op.name
        assert reply_kind(reply) is spec.reply, op.name
        assert permission == (spec.permission.value if spec.permission is not None else ""), op.name


def test_the_statuses_of_each_request_are_those_its_spec_declares():
    rows = dict(table("| request | may also be answered |"))
    requests = {op.name: spec for op, spec in OPS.items() if spec.reply is not Reply.NONE}
    assert sorted(rows) == sorted(requests)
    for name, spec in requests.items():
        listed = set() if rows[name] == "-" else {Status[status] for status in rows[name].split(", ")}
        assert listed == spec.statuses, name


def test_the_statuses_every_request_may_get_are_named_before_the_table():
    before = DOC[: DOC.index("| request | may also be answered |")].rstrip()
    paragraph = before[before.rindex("\n\n") :]
    named = {Status[name] for name in re.findall(r"`([A-Z_]+)`", paragraph)}
    assert named == COMMON_STATUSES | AUTH_STATUSES | {Status.NOT_AUTHORIZED}


def test_every_permission_is_explained_once():
    rows = table("| permission | needs |")
    assert sorted(name for name, _needs in rows) == sorted(permission.value for permission in Permission)


@pytest.mark.parametrize(
    "op", [op for op, spec in OPS.items() if spec.permission not in (None, Permission.NONE)]
)
def test_a_request_needing_a_permission_may_be_refused_for_it(op):
    assert Status.NOT_AUTHORIZED in OPS[op].answers
