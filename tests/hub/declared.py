"""Every reply a hub test reads is checked against its op's spec: a status the spec
(hedwig/protocol/spec.py, and so docs/protocol.md) does not declare fails the test."""

from hedwig.protocol.spec import OPS, Reply
from hedwig.protocol.status import Status


def declared(response):
    """`response` (a Response, or split_response's tuple), once its status is shown to be
    one its op's spec declares."""
    op, status = response[0], response[1]
    spec = OPS.get(op)
    if status is not Status.SUCCESS and spec is not None and spec.reply is not Reply.NONE:
        assert status in spec.answers, f"{spec.op.name} answered {status.name}: its spec does not say so"
    return response
