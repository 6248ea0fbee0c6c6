"""The IWaiting contract (hedwig/client/waiting.py), run against each implementation:
how the blocking, Twisted and asyncio clients run the client core's steps. Twisted's
runs on a task.Clock, asyncio's on an event loop of its own, the blocking one in this
thread (its delays are real, and short)."""

import asyncio
import threading

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from zope.interface.verify import verifyObject

from hedwig.client.aio import AsyncioWaiting
from hedwig.client.twisted import DeferredWaiting
from hedwig.client.waiting import BlockingWaiting, IWaiting


class BlockingWorld:
    name = "blocking"

    def __init__(self):
        self.waiting = BlockingWaiting()

    def result(self, outcome):
        return outcome  # (run returned the value itself, or raised)

    def run(self, steps):
        return self.waiting.run(steps)

    def close(self):
        pass


class TwistedWorld:
    name = "twisted"

    def __init__(self):
        self.clock = Clock()
        self.waiting = DeferredWaiting(self.clock)

    def run(self, steps):
        return self.result(self.waiting.run(steps))

    def result(self, outcome):
        assert isinstance(outcome, Deferred)
        for _ in range(10_000):  # (100 s of the clock at most)
            if outcome.called:
                break
            self.clock.advance(0.01)
        results = []
        outcome.addBoth(results.append)
        [value] = results
        if hasattr(value, "raiseException"):
            value.raiseException()
        return value

    def close(self):
        assert self.clock.getDelayedCalls() == []  # (nothing left waiting)


class AsyncioWorld:
    name = "asyncio"

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.waiting = AsyncioWaiting()

    def run(self, steps):
        return self.result(self.waiting.run(steps))

    def result(self, outcome):
        return self.loop.run_until_complete(asyncio.wait_for(outcome, 10))

    def close(self):
        self.loop.close()


@pytest.fixture(params=(BlockingWorld, TwistedWorld, AsyncioWorld), ids=lambda kind: kind.name)
def world(request):
    made = request.param()
    yield made
    made.close()


def test_every_implementation_provides_the_interface(world):
    assert verifyObject(IWaiting, world.waiting)


def _later(waiting, delay, settle, *args):
    """A result settled (settle(result, *args)) `delay` seconds from now."""
    result = waiting.new_result()
    waiting.call_later(delay, settle, result, *args)
    return result


def test_steps_get_back_what_they_yield_or_what_it_settles_to(world):
    waiting = world.waiting

    def steps():
        plain = yield 3  # (not something to wait for: handed straight back)
        settled = yield _later(waiting, 0.01, waiting.settle, 4)
        return plain + settled

    assert world.run(steps()) == 7


def test_a_failure_waited_for_is_raised_where_the_step_waits(world):
    waiting = world.waiting

    def steps():
        try:
            yield _later(waiting, 0.01, waiting.fail, KeyError("gone"))
        except KeyError as e:
            return f"caught {e}"
        return "not raised"

    assert world.run(steps()) == "caught 'gone'"


def test_an_error_of_the_steps_is_the_adapters_error(world):
    def steps():
        yield 1
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        world.run(steps())


def test_a_result_is_settled_once(world):
    waiting = world.waiting

    def steps():
        result = waiting.new_result()
        waiting.settle(result, "first")
        waiting.settle(result, "second")
        waiting.fail(result, KeyError("late"))
        return (yield result)

    assert world.run(steps()) == "first"


def test_a_batch_of_results_is_settled_with_consecutive_seq_ids_or_failed_together(world):
    waiting = world.waiting

    def steps():
        results = [waiting.new_result() for _ in range(3)]
        waiting.settle_seqs(results, 7)
        seqs = []
        for result in results:
            seqs.append((yield result))
        failed = [waiting.new_result() for _ in range(2)]
        waiting.fail_all(failed, KeyError("all"))
        errors = []
        for result in failed:
            try:
                yield result
            except KeyError as e:
                errors.append(str(e))
        return seqs, errors

    assert world.run(steps()) == ([7, 8, 9], ["'all'", "'all'"])


def test_sleep_resumes_the_steps_that_long_after(world):
    waiting = world.waiting

    def steps():
        started = waiting.now()
        yield waiting.sleep(0.05)
        return waiting.now() - started

    assert world.run(steps()) >= 0.05


def test_calls_later_run_in_time_order_and_a_cancelled_one_never(world):
    waiting = world.waiting
    calls = []

    def steps():
        waiting.call_later(0.03, calls.append, "late")
        waiting.call_later(0.01, calls.append, "early")
        waiting.call_later(0.02, calls.append, "cancelled").cancel()
        yield _later(waiting, 0.05, waiting.settle, None)
        return list(calls)

    assert world.run(steps()) == ["early", "late"]


def test_spawned_steps_run_on_their_own_and_stop_when_cancelled(world):
    waiting = world.waiting
    ran = []

    def spawned(name, delay):
        yield waiting.sleep(delay)
        ran.append(name)

    def steps():
        waiting.spawn(spawned("kept", 0.01))
        waiting.spawn(spawned("dropped", 0.02)).cancel()
        yield _later(waiting, 0.05, waiting.settle, None)
        return list(ran)

    assert world.run(steps()) == ["kept"]


def test_a_turn_is_held_by_one_caller_at_a_time(world):
    waiting = world.waiting
    with waiting.turn("topic"):
        pass  # (an event loop's turn is nothing to take: it runs one thing at a time)
    if world.name != "blocking":
        return
    holding = []
    inside = threading.Event()
    release = threading.Event()

    def hold():
        with waiting.turn("topic"):
            holding.append("other")
            inside.set()
            release.wait(10)

    other = threading.Thread(target=hold)
    other.start()
    assert inside.wait(10)
    assert not waiting.turn("topic").acquire(blocking=False), "the other thread holds it"
    with waiting.turn("another topic"):
        holding.append("this")  # (another key's turn is free)
    release.set()
    other.join(10)
    with waiting.turn("topic"):
        assert holding == ["other", "this"]


def test_a_blocking_wait_runs_what_other_steps_scheduled_meanwhile():
    """The blocking client's resends run in the thread that waits for their answer."""
    waiting = BlockingWaiting()
    answered = waiting.new_result()

    def resend(attempt):
        if attempt < 3:
            waiting.call_later(0.01, resend, attempt + 1)
        else:
            waiting.settle(answered, attempt)

    def steps():
        waiting.spawn(_resend_steps(resend))
        return (yield answered)

    assert waiting.run(steps()) == 3


def _resend_steps(resend):
    resend(1)
    yield None
