"""What a password guess costs, hub-wide: failures counted per user and per source, and
one bounded queue of checks in which a known-good source goes first.

A failed AUTH is answered late and its connection closed, but that delay is paid per
connection: two hundred connections guess two hundred times as fast as one, and every
guess runs scrypt (tens of milliseconds, 16 MiB) on the hub's few check threads, so a
flood of guesses also keeps real users waiting behind it. So, before a password is
checked:

- a source (the peer's host, whatever its port) that failed `max_failures_per_source`
  times in the current window is refused at once, with no check, until the window ends;
- a user name that failed `max_failures_per_user` times in the window is refused at once
  from every source except those it authenticated from before (its known-good sources),
  so that a guesser cannot lock the user out of the machines it really uses;
- from a known-good source, the user is held to neither limit above but to one of its
  own: `max_failures_per_user` failures for that user from that source in the window.
  So neither a guesser elsewhere nor one on the same host guessing other users (a
  shared machine, a NAT) locks the user out there, and that host gets no unthrottled
  guesses at the user either: the user is refused there only after that many wrong
  passwords for it from that very host;
- the check waits in one queue of at most `max_waiting` checks from unknown sources (a
  full queue refuses at once: the hub is busy), and checks from known-good sources wait
  in a lane of their own that goes first;
- a check whose connection closed while it waited is dropped, not run.

Memory stays bounded: at most `max_tracked` sources and users are counted (the oldest
window goes first), and as many known-good (user, source) pairs are remembered.
"""

from collections import OrderedDict, deque

from twisted.internet.defer import Deferred, fail


class LoginRefused(Exception):
    """Refused without a check; the message is for the client (and the log)."""


class FailureWindow:
    """Failures per key in a fixed window of `window_s` from each key's first failure."""

    def __init__(self, clock, window_s: float, max_keys: int):
        self._clock = clock
        self.window_s = window_s
        self._max_keys = max_keys
        self._counts = OrderedDict()  # key -> [window start, failures], oldest window first

    def count(self, key) -> int:
        """Failures of `key` in its current window (0 once the window ended)."""
        entry = self._counts.get(key)
        if entry is None:
            return 0
        if self._clock.seconds() - entry[0] >= self.window_s:
            del self._counts[key]
            return 0
        return entry[1]

    def seconds_left(self, key) -> float:
        """How long until `key`'s window ends (0 when it has none)."""
        entry = self._counts.get(key)
        return 0.0 if entry is None else max(0.0, entry[0] + self.window_s - self._clock.seconds())

    def add(self, key) -> int:
        """Count one failure; the failures in the window, this one included."""
        failures = self.count(key)
        if failures:
            self._counts[key][1] = failures + 1
            return failures + 1
        self._counts[key] = [self._clock.seconds(), 1]
        while len(self._counts) > self._max_keys:
            self._counts.popitem(last=False)
        return 1

    def __len__(self) -> int:
        return len(self._counts)


class LoginThrottle:
    """Decides whether a guess is checked at all. A check admitted and not yet ended
    counts against its source's and user's limits as a failure would, so that guesses
    sent at once, on many connections, get no more checks than guesses sent in turn."""

    def __init__(
        self,
        clock,
        *,
        window_s: float = 60.0,
        max_failures_per_source: int = 20,
        max_failures_per_user: int = 10,
        max_tracked: int = 10_000,
    ):
        self.window_s = window_s
        self.max_failures_per_source = max_failures_per_source
        self.max_failures_per_user = max_failures_per_user
        self._by_source = FailureWindow(clock, window_s, max_tracked)
        self._by_user = FailureWindow(clock, window_s, max_tracked)
        self._pending_sources = {}  # source -> checks admitted and not ended
        self._pending_users = {}  # user -> the same
        self._by_pair = FailureWindow(clock, window_s, max_tracked)  # (user, known-good source)
        self._pending_pairs = {}  # (user, source) -> the same
        self._max_tracked = max_tracked
        self._known_good = OrderedDict()  # (user, source) -> None, most recent last
        self._good_sources = {}  # source -> how many known-good pairs name it
        self.refused = 0  # guesses refused without a check

    def admit(self, user: str, source: str) -> str | None:
        """Why a guess for `user` from `source` is refused without a check, or None: then
        it is admitted, and `ended` must follow once its check ended (or never ran)."""
        pair = (user, source)
        pending_source = self._pending_sources.get(source, 0)
        pending_user = self._pending_users.get(user, 0)
        pending_pair = self._pending_pairs.get(pair, 0)
        if pair in self._known_good:
            if self._by_pair.count(pair) + pending_pair >= self.max_failures_per_user:
                self.refused += 1
                wait = max(self._by_pair.seconds_left(pair), 1)
                return f"too many failed logins for user {user} from {source}; try again in {wait:.0f} s"
        elif self._by_source.count(source) + pending_source >= self.max_failures_per_source:
            self.refused += 1
            wait = max(self._by_source.seconds_left(source), 1)
            return f"too many failed logins from {source}; try again in {wait:.0f} s"
        elif self._by_user.count(user) + pending_user >= self.max_failures_per_user:
            self.refused += 1
            wait = max(self._by_user.seconds_left(user), 1)
            return f"too many failed logins for user {user}; try again in {wait:.0f} s"
        self._pending_sources[source] = pending_source + 1
        self._pending_users[user] = pending_user + 1
        self._pending_pairs[pair] = pending_pair + 1
        return None

    def ended(self, user: str, source: str, succeeded: bool | None) -> tuple | None:
        """An admitted check ended: True (the password was right), False (wrong: counted,
        and (failures from the source, failures for the user) returned), or None (it never
        ran: the queue was full, or the connection closed while it waited)."""
        _decrement(self._pending_sources, source)
        _decrement(self._pending_users, user)
        _decrement(self._pending_pairs, (user, source))
        if succeeded:
            self._known(user, source)
        elif succeeded is False:
            if (user, source) in self._known_good:
                self._by_pair.add((user, source))
            return self._by_source.add(source), self._by_user.add(user)
        return None

    def is_known_good(self, source: str) -> bool:
        """Whether some user logged in from `source` before (its checks go first)."""
        return source in self._good_sources

    def _known(self, user: str, source: str) -> None:
        pair = (user, source)
        if pair in self._known_good:
            self._known_good.move_to_end(pair)
            return
        self._known_good[pair] = None
        self._good_sources[source] = self._good_sources.get(source, 0) + 1
        while len(self._known_good) > self._max_tracked:
            (_, old_source), _ = self._known_good.popitem(last=False)
            _decrement(self._good_sources, old_source)

    def describe(self) -> dict:
        return {
            "sources_counted": len(self._by_source),
            "users_counted": len(self._by_user),
            "known_good": len(self._known_good),
            "refused_without_check": self.refused,
        }


def _decrement(counts: dict, key) -> None:
    left = counts.pop(key) - 1
    if left:
        counts[key] = left


class CheckQueue:
    """Runs at most `max_running` checks at once. Two lanes wait, at most `max_waiting`
    checks each: those marked `first` (known-good sources), which go ahead, and the rest,
    so a flood from unknown sources fills only its own lane. A waiting check whose
    `still_wanted()` turned False is dropped when its turn comes."""

    def __init__(self, max_running: int, max_waiting: int):
        self.max_running = max_running
        self.max_waiting = max_waiting
        self.running = 0
        self._first = deque()
        self._rest = deque()
        self.dropped = 0  # checks whose connection closed while they waited
        self.turned_away = 0  # checks refused because the queue was full

    @property
    def waiting(self) -> int:
        return len(self._first) + len(self._rest)

    def submit(self, check, still_wanted, first: bool = False) -> Deferred:
        """Deferred of `check()` (itself a Deferred) once a slot is free; fails with
        LoginRefused when the queue is full, or when `still_wanted()` turned False while
        the check waited (it is dropped, not run)."""
        if self.running < self.max_running:
            return self._run(check)
        lane = self._first if first else self._rest
        if len(lane) >= self.max_waiting:
            self.turned_away += 1
            return fail(LoginRefused("the hub has too many logins to check; try again shortly"))
        done = Deferred()
        lane.append((check, still_wanted, done))
        return done

    def _run(self, check) -> Deferred:
        self.running += 1
        try:
            running = check()
        except Exception:
            running = fail()
        running.addBoth(self._ended)
        return running

    def _ended(self, result):
        self.running -= 1
        self._next()
        return result

    def _next(self) -> None:
        while self.running < self.max_running and (self._first or self._rest):
            check, still_wanted, done = (self._first or self._rest).popleft()
            if not still_wanted():
                self.dropped += 1
                done.errback(LoginRefused("the connection closed before its login was checked"))
                continue
            self._run(check).chainDeferred(done)

    def describe(self) -> dict:
        return {
            "running": self.running,
            "waiting": self.waiting,
            "dropped_closed": self.dropped,
            "turned_away": self.turned_away,
        }
