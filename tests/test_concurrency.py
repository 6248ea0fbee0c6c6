"""hedwig.concurrency.deferreds: waiter groups, shared results and the per-key operation queue."""

from twisted.internet.defer import Deferred, succeed

from hedwig.concurrency.deferreds import OpQueue, SharedOperations, SharedResult, Waiters
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
