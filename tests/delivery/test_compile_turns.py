"""Issue 41, point 3: each user's share of the reactor for compiling selectors
(hedwig/delivery/compile_turns.py), on a task.Clock. A compile's cost is what the timer
says it took: here the work itself says it (`spend`), as a compile of 4 KB would."""

from twisted.internet.task import Clock

from hedwig.delivery.compile_turns import CompileTurns
from hedwig.delivery.interface import SubscribeError
from hedwig.protocol.status import Status


class Spending:
    """A timer the work advances by what it 'took'."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def work(self, took: float, result, ran: list):
        def compile_():
            self.now += took
            ran.append(result)
            return result

        return compile_


def turns(share=0.1, burst_s=0.25, max_waiting=256):
    clock, timer = Clock(), Spending()
    return clock, timer, CompileTurns(clock, share, burst_s, max_waiting, timer)


def test_a_users_compiles_past_its_share_wait_their_turn_in_order():
    clock, timer, compiles = turns()
    ran, answers = [], []
    for n in range(4):  # 40 ms each: 360 ms of rest after each at a share of 10%
        compiles.run("alice", timer.work(0.04, n, ran)).addCallback(answers.append)
    assert ran == [0]  # (the first at once; its rest is past the burst)
    assert compiles.waiting("alice") == 3
    clock.advance(0.36 - 0.25 - 0.001)
    assert ran == [0]
    clock.advance(0.001)
    assert ran == [0, 1]
    clock.advance(0.36)
    clock.advance(0.36)
    assert ran == answers == [0, 1, 2, 3]
    assert compiles.waiting("alice") == 0


def test_another_user_compiles_at_once_while_one_waits():
    _clock, timer, compiles = turns()
    ran = []
    for n in range(3):
        compiles.run("alice", timer.work(0.04, f"a{n}", ran))
    compiles.run("bob", timer.work(0.04, "b", ran))
    assert ran == ["a0", "b"]


def test_short_compiles_within_the_burst_never_wait():
    _clock, timer, compiles = turns()
    ran = []
    for n in range(28):  # 1 ms each: 9 ms of rest each; 243 ms owed before the 28th
        compiles.run("alice", timer.work(0.001, n, ran))
    assert ran == list(range(28))
    compiles.run("alice", timer.work(0.001, "past", ran))
    assert ran[-1] == 27  # 252 ms owed: past the burst of 250 ms


def test_a_failed_compile_is_the_waiters_failure_and_the_queue_goes_on():
    clock, timer, compiles = turns()
    ran, failures, answers = [], [], []
    compiles.run("alice", timer.work(0.04, 0, ran))

    def refused():
        timer.now += 0.04
        raise SubscribeError(Status.INVALID_MESSAGE_FILTER, "column 3: no")

    compiles.run("alice", refused).addErrback(failures.append)
    compiles.run("alice", timer.work(0.04, 2, ran)).addCallback(answers.append)
    clock.advance(0.11)
    assert len(failures) == 1 and failures[0].value.status is Status.INVALID_MESSAGE_FILTER
    clock.advance(0.36)
    assert answers == [2]


def test_at_most_max_waiting_compiles_wait_per_user():
    clock, timer, compiles = turns(max_waiting=2)
    ran, refusals = [], []
    for n in range(4):
        compiles.run("alice", timer.work(0.04, n, ran)).addErrback(refusals.append)
    assert len(refusals) == 1 and refusals[0].value.status is Status.TOO_MANY_SUBSCRIPTIONS
    clock.pump([1] * 5)
    assert ran == [0, 1, 2]
