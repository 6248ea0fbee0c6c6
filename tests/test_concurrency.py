"""hedwig.concurrency.deferreds: waiter groups, shared results, the per-key operation queue,
and run_now."""

from twisted.internet.defer import Deferred, fail, succeed

from hedwig.concurrency.deferreds import OpQueue, SharedOperations, SharedResult, Waiters, run_now
from hedwig.testing.deferreds import fired


def test_waiters_fire_all_and_empty_before_running_callbacks():
    waiters = Waiters()
    seen = []
    again = []
    first = waiters.wait()
    first.addCallback(lambda value: (seen.append(value), again.append(waiters.wait())))
    waiters.wait().addCallback(seen.append)
    assert len(waiters) == 2
    waiters.fire("now")
    assert seen == ["now", "now"]
    assert len(waiters) == 1  # the waiter added by a callback waits for the next time
    assert not again[0].called


def test_waiters_fail_reaches_every_waiter():
    waiters = Waiters()
    failures = []
    for _ in range(2):
        waiters.wait().addErrback(lambda f: failures.append(f.type))
    waiters.fail(ValueError("broken"))
    assert failures == [ValueError, ValueError]


def test_shared_result_gives_each_caller_its_own_deferred():
    operation = Deferred()
    shared = SharedResult(operation)
    a, b = shared.wait(), shared.wait()
    a.addCallback(lambda value: value + 1)
    operation.callback(1)
    assert fired(a) == 2 and fired(b) == 1
    assert shared.done and fired(shared.wait()) == 1


def test_shared_result_failure_reaches_late_waiters():
    operation = Deferred()
    shared = SharedResult(operation)
    operation.errback(KeyError("gone"))
    failures = []
    shared.wait().addErrback(lambda f: failures.append(f.type))
    assert failures == [KeyError]


def test_op_queue_runs_one_operation_per_key_in_order():
    queue = OpQueue()
    started = []
    gates = {name: Deferred() for name in "abc"}

    def op(name):
        started.append(name)
        return gates[name]

    results = [queue.run("t", op, name) for name in "ab"]
    other = queue.run("u", op, "c")  # another key is not held up
    assert started == ["a", "c"]
    assert queue.busy("t") and queue.pending("t") == 1
    gates["a"].callback("A")
    assert fired(results[0]) == "A"
    assert started == ["a", "c", "b"]
    gates["b"].errback(RuntimeError("b broke"))
    failures = []
    results[1].addErrback(lambda f: failures.append(f.type))
    assert failures == [RuntimeError]
    assert not queue.busy("t")
    gates["c"].callback("C")
    assert fired(other) == "C" and not queue.busy("u")


def test_op_queue_failure_does_not_stop_the_queue_and_sync_ops_do_not_recurse():
    queue = OpQueue()

    def boom():
        raise ValueError("first")

    first = queue.run("t", boom)
    failures = []
    first.addErrback(lambda f: failures.append(f.type))
    results = [queue.run("t", succeed, n) for n in range(5000)]
    assert failures == [ValueError]
    assert [fired(d) for d in results] == list(range(5000))


def test_op_queue_caller_sees_result_before_next_operation_starts():
    queue = OpQueue()
    events = []
    gate = Deferred()
    first = queue.run("t", lambda: gate)
    first.addCallback(lambda _: events.append("first answered"))
    queue.run("t", lambda: events.append("second started"))
    gate.callback(None)
    assert events == ["first answered", "second started"]


def test_shared_operations_run_once_per_key_while_running():
    operations = SharedOperations()
    started = []
    gate = Deferred()

    def open_topic(name):
        started.append(name)
        return gate

    first = operations.run("t", open_topic, "t")
    second = operations.run("t", open_topic, "t")
    assert started == ["t"] and operations.running("t")
    seen = []
    first.addCallback(lambda value: seen.append(("first", value, operations.running("t"))))
    second.addCallback(lambda value: seen.append(("second", value)))
    gate.callback("log")
    assert seen == [("first", "log", False), ("second", "log")]
    again = operations.run("t", lambda: succeed("new"))
    assert fired(again) == "new" and not operations.running("t")


def test_shared_operations_share_a_failure_and_free_the_key():
    operations = SharedOperations()
    gate = Deferred()
    waiting = [operations.run("t", lambda: gate) for _ in range(2)]
    gate.errback(OSError("disk"))
    failures = []
    for d in waiting:
        d.addErrback(lambda f: failures.append(f.type))
    assert failures == [OSError, OSError] and not operations.running("t")


# -- run_now -------------------------------------------------------------------------------


def test_run_now_goes_straight_through_what_has_fired():
    seen = []

    def steps():
        seen.append((yield succeed(1)))
        seen.append((yield 2))  # (a plain value comes straight back)
        try:
            yield fail(ValueError("refused"))
        except ValueError as e:
            seen.append(str(e))
        return "done"

    d = run_now(steps())
    assert d.called and d.result == "done" and seen == [1, 2, "refused"]


def test_run_now_waits_for_what_has_not_fired_and_goes_on_when_it_does():
    later, then = Deferred(), Deferred()
    seen = []

    def steps():
        seen.append((yield later))
        seen.append((yield succeed("at once")))
        try:
            yield then
        except KeyError:
            seen.append("failed")
        return len(seen)

    d = run_now(steps())
    assert not d.called and seen == []
    later.callback("later")
    assert not d.called and seen == ["later", "at once"]
    then.errback(KeyError("x"))
    assert d.called and d.result == 3 and seen == ["later", "at once", "failed"]


def test_run_now_fails_as_the_generator_does():
    def at_once():
        yield succeed(None)
        raise LookupError("at once")

    def later(waited):
        yield waited
        raise LookupError("later")

    outcomes = []
    run_now(at_once()).addErrback(lambda f: outcomes.append(f.check(LookupError) and str(f.value)))
    waited = Deferred()
    run_now(later(waited)).addErrback(lambda f: outcomes.append(f.check(LookupError) and str(f.value)))
    assert outcomes == ["at once"]
    waited.callback(None)
    assert outcomes == ["at once", "later"]
