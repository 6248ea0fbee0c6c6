"""How a client waits: the one thing its three adapters do differently.

The client core (core.py) writes subscribing, redirects, resubscribing, batching and
idempotent publishing once, as generators of *steps*: a step yields what it waits for
(the reply a connection's `call` gave, a result, a pause) and gets back its value, or
has its error raised where it yielded. An IWaiting runs them, as kazoo's IHandler lets
one client run on threads, gevent or asyncio:

- BlockingWaiting (here): the calling thread runs the steps at once; what a step waits
  for is already there (a blocking connection answers its `call` before returning),
  except a result another step settles later: the thread then runs what was scheduled
  meanwhile (its agenda) until the result is there;
- DeferredWaiting (twisted.py): Twisted's inlineCallbacks runs them; a step waits on a
  Deferred;
- AsyncioWaiting (aio.py): a coroutine runs them; a step waits on a Future or a
  coroutine.

A step yields anything: what is not something to wait for (a blocking reply, a
connection already made) is handed straight back.
"""

import heapq
import logging
import threading
import time

from zope.interface import Attribute, Interface, implementer

log = logging.getLogger(__name__)  # (the blocking client imports no Twisted)


class IWaiting(Interface):
    """How a client waits for what its steps yield. Every method is called on the
    client's own thread (the reactor's, the event loop's, or the calling thread)."""

    background = Attribute(
        "True when spawned steps run beside the caller (an event loop); False when they "
        "run only while a caller of this thread waits for a result (blocking)."
    )

    def run(steps):
        """Run a generator of steps; the adapter's form of its return value: the value
        itself (blocking, its error raised), a Deferred, or an awaitable."""

    def spawn(steps):
        """Run a generator of steps on its own; it handles its own errors (any left is
        logged). What it returns has cancel(): the steps stop where they wait."""

    def now():
        """Seconds on the adapter's clock (monotonic)."""

    def sleep(seconds):
        """Something a step yields to resume `seconds` later."""

    def call_later(delay, function, *args):
        """Call function(*args) `delay` seconds from now; what it returns has cancel()."""

    def new_result():
        """A result not known yet (a Deferred, a Future, ...): one caller waits on it."""

    def settle(result, value):
        """Give `result` its value (nothing when it was settled already)."""

    def fail(result, error):
        """Give `result` an exception (nothing when it was settled already)."""

    def settle_seqs(results, first_seq):
        """Settle each of `results` with consecutive seq-ids from first_seq (a batch of
        publishes, answered together)."""

    def fail_all(results, error):
        """Fail each of `results` with `error`."""

    def turn(key):
        """A context manager: one caller at a time holds the turn of `key` (a topic)
        while it waits; nothing for a single-threaded event loop."""


class _Pending:
    """A blocking result: settled once, by this thread or another; waited on by any."""

    __slots__ = ("_event", "error", "settled", "value")

    def __init__(self):
        self.settled = False
        self.value = None
        self.error = None
        self._event = threading.Event()

    def _settle(self, value, error) -> None:
        if self.settled:
            return
        self.value, self.error = value, error
        self.settled = True
        self._event.set()


class _Call:
    """A call on a thread's agenda, ordered by when it is due."""

    __slots__ = ("args", "cancelled", "due", "function", "order")

    _orders = iter(range(1 << 62))

    def __init__(self, due, function, args):
        self.due = due
        self.order = next(self._orders)  # (ties: in the order they were made)
        self.function = function
        self.args = args
        self.cancelled = False

    def __lt__(self, other) -> bool:
        return (self.due, self.order) < (other.due, other.order)

    def cancel(self) -> None:
        self.cancelled = True

    def active(self) -> bool:
        return not self.cancelled


class _NoTurn:
    """turn() of a single-threaded event loop: nothing to take."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


NO_TURN = _NoTurn()


@implementer(IWaiting)
class BlockingWaiting:
    """The blocking client's waiting: no thread of its own. Steps run in the caller's
    thread; what they schedule (`spawn`, `call_later`) goes on that thread's agenda,
    which the thread runs while it waits for a result (`run`, `wait`), so that a
    resend due in a second is sent by the thread that waits for its answer."""

    background = False

    def __init__(self):
        self._local = threading.local()
        self._turns = {}  # key -> the threading.Lock of its turn
        self._turns_lock = threading.Lock()

    def _agenda(self) -> list:
        agenda = getattr(self._local, "agenda", None)
        if agenda is None:
            agenda = self._local.agenda = []
        return agenda

    def run(self, steps):
        """Run the steps now, in this thread; their value (their error raised)."""
        try:
            yielded = steps.send(None)
            while True:
                if yielded.__class__ is not _Pending:
                    yielded = steps.send(yielded)  # (a value already: a blocking call's answer)
                    continue
                self.wait(yielded)
                yielded = steps.send(yielded.value) if yielded.error is None else steps.throw(yielded.error)
        except StopIteration as done:
            return done.value

    def wait(self, pending: _Pending) -> None:
        """Run this thread's agenda until `pending` is settled (by it, or by another
        thread)."""
        agenda = self._agenda()
        while not pending.settled:
            if not agenda:
                pending._event.wait()
                continue
            call = agenda[0]
            delay = call.due - time.monotonic()
            if delay > 0:
                pending._event.wait(delay)
                continue
            heapq.heappop(agenda)
            if not call.cancelled:
                call.function(*call.args)

    def spawn(self, steps) -> "_Call":
        return self.call_later(0.0, self._run_spawned, steps)

    def _run_spawned(self, steps) -> None:
        try:
            self.run(steps)
        except Exception:
            log.exception("steps spawned by a blocking client failed")

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def call_later(self, delay: float, function, *args) -> _Call:
        call = _Call(time.monotonic() + delay, function, args)
        heapq.heappush(self._agenda(), call)
        return call

    new_result = _Pending  # (the class: a call without a frame of ours in between)

    def settle(self, result: _Pending, value) -> None:
        result._settle(value, None)

    def fail(self, result: _Pending, error) -> None:
        result._settle(None, error)

    def settle_seqs(self, results, first_seq: int) -> None:
        for result in results:
            result._settle(first_seq, None)
            first_seq += 1

    def fail_all(self, results, error) -> None:
        for result in results:
            result._settle(None, error)

    def turn(self, key):
        with self._turns_lock:
            lock = self._turns.get(key)
            if lock is None:
                lock = self._turns[key] = threading.Lock()
        return lock
