"""How a connection's requests are answered once their outcome is known: a value through
its encoder, a failure through its status (hub/errors.py), each counted in the hub's
per-op stats and a refusal logged once per peer per interval.

A request keeps its place in the connection's reply order (the session's ReplyQueue):
`answer` reserves its slot when the request is read and fills it when the Deferred fires.
A publish that failed because another hub took its topic over is answered with a
redirect to that hub, once the hub knows which (Hub.locate_moved).
"""

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from hedwig.hub.errors import status_for
from hedwig.hub.stats import op_name
from hedwig.meta.interface import OwnershipLost
from hedwig.protocol.responses import response_frame
from hedwig.protocol.status import Status
from hedwig.topiclog.errors import TopicFenced


class Answerer:
    """One connection's answers (its HubConnection's `answer` and `fail`)."""

    __slots__ = ("_connection", "_hub", "_replies", "_seconds", "_stats")

    def __init__(self, connection, hub, replies):
        self._connection = connection  # for its peer, in log lines
        self._hub = hub  # its stats and locate_moved
        self._stats = hub.stats
        self._seconds = hub.clock.seconds
        self._replies = replies  # the session's ReplyQueue

    def answer(self, deferred: Deferred, request_id: int, op: int, started: float, encode) -> None:
        """Reply with encode(result) (a whole frame, or a list of chunks) in request order
        once `deferred` fires, or with the failure's status. Handlers registered with
        Hub.register_op answer through this too."""
        replies = self._replies
        slot = replies.reserve()
        name = op_name(op)

        def done(result):
            self._stats.record(name, True, self._seconds() - started)
            replies.fill(slot, encode(result))

        deferred.addCallback(done).addErrback(self.fail, slot, request_id, op, started)

    def fail(self, failure, slot, request_id: int, op: int, started: float, topic=None) -> None:
        """Answer a failed request with its status (in its slot when it has one). A
        publish to `topic` that failed because another hub took the topic over is
        answered with a redirect to that hub."""
        if not isinstance(failure, Failure):
            failure = Failure(failure)
        if topic is not None and failure.check(TopicFenced, OwnershipLost):
            located = self._hub.locate_moved(topic, failure)
            located.addErrback(self.fail, slot, request_id, op, started)
            return
        status, message, expected = status_for(failure.value)
        name = op_name(op)
        stats = self._stats
        redirect = status is Status.NOT_RESPONSIBLE_FOR_TOPIC  # a region's routine: the client follows
        stats.record(name, False, self._seconds() - started, redirected=redirect)
        connection = self._connection
        if redirect:
            stats.redirected += 1
            connection.log.debug(
                "{peer}: {op} request {request_id} redirected to {owner}",
                peer=connection.peer,
                op=name.upper(),
                request_id=request_id,
                owner=message or "(no owner known)",
            )
        elif expected:
            connection.client_error(
                "{peer}: {op} request {request_id} refused: {status}: {message}",
                op=name.upper(),
                request_id=request_id,
                status=status.name,
                message=message,
            )
        else:
            connection.log.failure(
                "{peer}: {op} request {request_id} failed",
                failure,
                peer=connection.peer,
                op=name.upper(),
                request_id=request_id,
            )
        frame = response_frame(request_id, op, status, message)
        if slot is None:
            self._replies.send(frame)
        else:
            self._replies.fill(slot, frame)
