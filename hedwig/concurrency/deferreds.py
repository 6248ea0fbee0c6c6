"""Waiting on the reactor, written once: waiter groups, shared results, per-key queues.

Everything in the hub runs on one reactor thread, so "wait" always means "hand out a
Deferred and fire it later". Three shapes of it recur everywhere and live here:

- `Waiters`: any number of callers wait for the same moment (a drain, an idle state, a
  flush); each gets a Deferred of its own and all are fired together.
- `SharedResult`: concurrent callers of one operation (an open, a close) share its
  outcome; callbacks one caller adds cannot change the result another caller sees, as
  they would if the same Deferred were handed out twice.
- `OpQueue`: one operation at a time per key (a topic), the others wait their turn in
  arrival order: Hedwig's TopicOpQueuer. An operation is a callable returning a value or
  a Deferred; its result (or failure) goes to its own caller only, and a failure never
  stops the operations queued behind it.
- `run_now`: a generator that yields what it waits for, as under inlineCallbacks, run
  straight through while those have fired already (a local ledger store's answers).

And one convention: a call that answers at once when it can (an append acknowledged
within the call: ITopicLog.append_now, Hub.publish_now) returns its value, else a
Deferred of it; `as_deferred` turns either into a Deferred for callers that wait anyway.

None of these imports the reactor: they only chain Deferreds.
"""

from collections import deque

from twisted.internet.defer import Deferred, fail, maybeDeferred, succeed
from twisted.python.failure import Failure

_PENDING = object()


class Waiters(list):
    """A group of Deferreds fired together; `wait()` joins, `fire`/`fail` release all.

    The group is emptied before any waiter runs, so a callback may wait again for the
    next time without being fired by this one. A list underneath: asking whether anyone
    waits (`if waiters:`) costs what it costs for a list, on paths taken per entry."""

    __slots__ = ()

    def wait(self) -> Deferred:
        """A Deferred of the next fire; one its caller cancels (it stopped waiting) is
        left out of the group, which goes on for the others."""
        d = Deferred(self._cancelled)
        self.append(d)
        return d

    def _cancelled(self, d: Deferred) -> None:
        if d in self:
            self.remove(d)

    def fire(self, result=None) -> None:
        if not self:
            return
        waiting = self[:]
        self.clear()
        for d in waiting:
            if not d.called:  # (a waiter's callback may cancel another's)
                d.callback(result)

    def fail(self, reason) -> None:
        """Errback every waiter with `reason` (an exception or a Failure)."""
        if not self:
            return
        waiting = self[:]
        self.clear()
        failure = reason if isinstance(reason, Failure) else Failure(reason)
        for d in waiting:
            if not d.called:
                d.errback(failure)


class SharedResult:
    """One operation's outcome handed to any number of waiters, each with its own Deferred.

    The operation's own Deferred is consumed: its failure reaches every waiter (and is
    not reported as unhandled when nobody waits)."""

    def __init__(self, operation: Deferred):
        self._result = _PENDING
        self._waiters = Waiters()
        operation.addBoth(self._settle)

    @property
    def done(self) -> bool:
        return self._result is not _PENDING

    def wait(self) -> Deferred:
        if self._result is _PENDING:
            return self._waiters.wait()
        d = Deferred()
        self._pass(d)
        return d

    def _settle(self, result):
        self._result = result
        if isinstance(result, Failure):
            self._waiters.fail(result)
        else:
            self._waiters.fire(result)
        return None  # every waiter received any failure; the operation itself is handled

    def _pass(self, d: Deferred) -> None:
        if isinstance(self._result, Failure):
            d.errback(self._result)
        else:
            d.callback(self._result)


class OpQueue:
    """One operation at a time per key; later ones wait in arrival order.

    `run(key, operation, *args, **kwargs)` returns a Deferred of that operation's result.
    An operation whose key is idle starts at once (synchronously, in the caller's turn);
    otherwise it starts once the one before it has finished, whatever its outcome, and
    after that one's caller has seen the result. Operations that finish synchronously are
    run in a loop, not by recursion, so a long queue cannot overflow the stack."""

    def __init__(self):
        # key -> deque of (operation, args, kwargs, Deferred), the running one first
        self._queues: dict = {}

    def busy(self, key) -> bool:
        """True while an operation of `key` runs or waits."""
        return key in self._queues

    def pending(self, key) -> int:
        """How many operations of `key` wait behind the running one."""
        queue = self._queues.get(key)
        return len(queue) - 1 if queue else 0  # the running one stays first until done

    def run(self, key, operation, *args, **kwargs) -> Deferred:
        result = Deferred()
        queue = self._queues.get(key)
        if queue is not None:
            queue.append((operation, args, kwargs, result))
            return result
        queue = self._queues[key] = deque()
        queue.append((operation, args, kwargs, result))
        self._drain(key, queue)
        return result

    def _drain(self, key, queue: deque) -> None:
        while queue:
            operation, args, kwargs, _result = queue[0]
            outcome = []
            d = maybeDeferred(operation, *args, **kwargs)
            d.addBoth(outcome.append)
            if not outcome:  # still running: go on when it finishes
                d.addCallback(lambda _, outcome=outcome: self._finished(outcome[0], key, queue))
                return
            _settle(queue.popleft()[3], outcome[0])
        del self._queues[key]

    def _finished(self, outcome, key, queue: deque) -> None:
        _settle(queue.popleft()[3], outcome)
        self._drain(key, queue)


def _settle(d: Deferred, outcome) -> None:
    if isinstance(outcome, Failure):
        d.errback(outcome)
    else:
        d.callback(outcome)


class SharedOperations:
    """At most one operation running per key, shared by every caller who asks meanwhile
    (each gets a Deferred of its own, fired in the order they asked); once it has
    finished, the next call starts a new one. Opening a topic, loading its subscriptions:
    concurrent requests wait on the same work instead of repeating it.

    The key is free again before any caller sees the outcome, so a caller may look at
    `running(key)` (False) or start the next operation from its callback."""

    def __init__(self):
        self._running: dict = {}  # key -> SharedResult

    def running(self, key) -> bool:
        return key in self._running

    def __len__(self) -> int:
        """How many keys have an operation running."""
        return len(self._running)

    def wait(self, key):
        """A Deferred of the running operation's outcome for `key`, or None when none runs."""
        shared = self._running.get(key)
        return None if shared is None else shared.wait()

    def wait_all(self) -> list:
        """A Deferred of each running operation's outcome (to wait for them at a close)."""
        return [shared.wait() for shared in self._running.values()]

    def run(self, key, operation, *args) -> Deferred:
        shared = self._running.get(key)
        if shared is None:
            started = maybeDeferred(operation, *args)
            started.addBoth(self._finished, key)
            shared = SharedResult(started)
            if not shared.done:
                self._running[key] = shared
        return shared.wait()

    def _finished(self, outcome, key):
        self._running.pop(key, None)
        return outcome


def in_thread(reactor, f, *args) -> Deferred:
    """Run f(*args) in the reactor's thread pool (blocking file or network work: an
    fsync, kazoo's start and stop); the Deferred fires on the reactor thread. The
    reactor comes in as an argument, never imported."""
    d = Deferred()

    def run():
        try:
            result = f(*args)
        except BaseException:
            reactor.callFromThread(d.errback, Failure())
        else:
            reactor.callFromThread(d.callback, result)

    run.target = f  # what runs, for whoever inspects queued thread work (tests)
    reactor.callInThread(run)
    return d


def run_now(steps) -> Deferred:
    """Run `steps`, a generator that yields Deferreds (or plain values) and gets their
    results back (a failure is raised at the yield), as inlineCallbacks runs one; a
    Deferred of its return value. What it yields that has fired already is taken at once,
    so over a store that answers at once (the mmap ledgers) it runs through within the
    call and its Deferred has fired on return (made as `succeed` makes one); only what
    truly waits (a RADOS read) suspends it. For paths taken per read: this costs well
    under a microsecond more than straight-line code, inlineCallbacks several."""
    return _advance(steps, None, None)


def _advance(steps, value, outcome: Deferred | None) -> Deferred:
    """Run `steps` on from `value` until it ends (`outcome` fired; a fired Deferred when
    there is none yet) or waits (`outcome`, made now if need be, fires later)."""
    while True:
        try:
            if value.__class__ is Failure:
                awaited = value.throwExceptionIntoGenerator(steps)
            else:
                awaited = steps.send(value)
        except StopIteration as stop:
            if outcome is None:
                return succeed(stop.value)
            outcome.callback(stop.value)
            return outcome
        except BaseException:
            if outcome is None:
                return fail()
            outcome.errback(Failure())
            return outcome
        if not isinstance(awaited, Deferred):
            value = awaited
            continue
        if awaited.called:  # fired already (a local store's answer): its value, at once
            value = awaited.result
            if value.__class__ is not Failure and value.__class__ is not Deferred:
                continue
        if outcome is None:
            outcome = Deferred()
        box = [_PENDING]

        def resume(result, box=box, outcome=outcome):
            if box[0] is _PENDING:
                box[0] = result  # fired within addBoth: the loop goes on
            else:
                _advance(steps, result, outcome)

        awaited.addBoth(resume)
        if box[0] is _PENDING:
            box[0] = None  # it will fire later: resume() takes over then
            return outcome
        value = box[0]


def as_deferred(answer) -> Deferred:
    """A Deferred of `answer`: a value given at once, or already a Deferred of one."""
    return answer if isinstance(answer, Deferred) else succeed(answer)
