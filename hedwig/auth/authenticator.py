"""Passwords and certificates checked against the users file (IAuthenticator).

scrypt is CPU- and memory-heavy by design, so a check never runs on the reactor thread:
it runs in the reactor's thread pool, at most [auth] max_concurrent_checks at a time
hub-wide. Every check, from AUTH and from the HTTP listener's Basic credentials alike,
first passes the hub's LoginThrottle and waits in its one bounded CheckQueue
(hedwig/auth/throttle.py): guessing is counted per user and per source, and a flood of
guesses neither queues without bound nor keeps a known-good source waiting. Failed logins
are logged when a source's or a user's count in the window reaches 1, 2, 4, 8, ... and
when it reaches its limit, so a thousand guesses are a dozen lines, every one counted.

A SCRAM login (the Kafka port) is admitted by the same throttle and waits in the same
queue for its user's keys (`scram_keys`); its proof, checked by the connection, ends it
(`scram_ended`), counted as a password check is.

The file is read again, on a check's thread, when its size or modification time
changed, so `hedwig user add` takes effect for the next connection to authenticate; a
file that no longer reads is reported once and the last good one kept.
"""

import os

from twisted.internet.defer import fail
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from zope.interface import implementer

from hedwig.auth.hashing import dummy_hash, verify_password
from hedwig.auth.interface import IAuthenticator
from hedwig.auth.throttle import CheckQueue, LoginRefused, LoginThrottle
from hedwig.auth.users import UsersFile, UsersFileError
from hedwig.protocol.names import is_user_name, printable


def _always() -> bool:
    return True


def _worth_a_line(count: int) -> bool:
    """1, 2, 4, 8, ...: a count's log lines grow with its logarithm."""
    return count & (count - 1) == 0


def _stamp(path: str):
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size, status.st_ino


@implementer(IAuthenticator)
class UsersFileAuthenticator:
    log = Logger()

    def __init__(self, path: str, reactor, *, max_concurrent: int = 2, max_waiting: int = 64,
                 allow_anonymous: bool = False, throttle: LoginThrottle | None = None,
                 run_in_thread=None):  # fmt: skip
        """`run_in_thread(f, *args)`: Deferred of f(*args) off the reactor thread (default:
        the reactor's thread pool). `throttle`: the hub's LoginThrottle (default: one with
        its default limits on `reactor`'s clock)."""
        self.path = path
        self._stamp = _stamp(path)
        self.users = UsersFile.load(path)
        self._allow_anonymous = allow_anonymous
        self.throttle = throttle if throttle is not None else LoginThrottle(reactor)
        self.queue = CheckQueue(max_concurrent, max_waiting)
        self.failures = 0  # wrong passwords and unknown users, checked
        self._told_without_keys = set()  # (user, SCRAM mechanism) logged as having no keys
        if run_in_thread is None:

            def run_in_thread(f, *args):
                return deferToThreadPool(reactor, reactor.getThreadPool(), f, *args)

        self._run_in_thread = run_in_thread

    def authenticate(self, user: str, password: bytes, source: str = "?", still_wanted=_always):
        return self._admitted(
            user, source, still_wanted, self._check, password, self._checked, (user, source)
        )

    def scram_keys(self, user: str, mechanism: str, source: str = "?", still_wanted=_always):
        """Deferred[(ScramKeys | None, Principal | None)]: the keys and user a SCRAM login
        as `user` is checked against (None, None when it has none: no such user, or keys
        never written). Admitted by the throttle: `scram_ended` must follow."""
        return self._admitted(
            user, source, still_wanted, self._scram_lookup, mechanism, self._scram_found, (user, mechanism)
        )

    def scram_ended(self, user: str, source: str, principal, abandoned: bool = False):
        """A SCRAM login admitted by `scram_keys` ended: `principal` when the proof was
        right (returned), None when wrong (counted, logged as a wrong password), or
        `abandoned` (the connection closed before its proof came: not counted)."""
        if abandoned:
            self.throttle.ended(user, source, None)
            return None
        return self._checked(principal, user, source)

    def _admitted(self, user: str, source: str, still_wanted, check, argument, done, done_args):
        """Deferred of done(check(user, argument), *done_args), the check run on a pool
        thread once the throttle admitted it and the queue's turn came."""
        if not is_user_name(user):  # (AUTH checks names as it decodes them; HTTP Basic does not)
            return fail(LoginRefused(f"{printable(user)} is not a user name"))
        throttle = self.throttle
        refusal = throttle.admit(user, source)
        if refusal is not None:
            if _worth_a_line(throttle.refused):
                self.log.warn(
                    "login for user {user} from {source} refused without a check: {why}"
                    " ({count} refused so far)",
                    user=user, source=printable(source), why=refusal, count=throttle.refused,
                )  # fmt: skip
            return fail(LoginRefused(refusal))
        checking = self.queue.submit(
            lambda: self._run_in_thread(check, user, argument),
            still_wanted,
            first=throttle.is_known_good(source),
        )
        return checking.addCallbacks(done, self._not_checked, done_args, None, (user, source))

    def _scram_found(self, found, user: str, mechanism: str):
        keys, principal, has_password = found
        if keys is None and has_password and (user, mechanism) not in self._told_without_keys:
            self._told_without_keys.add((user, mechanism))
            self.log.info(
                "user {user} has no {mechanism} keys: a {mechanism} login fails until the"
                " password is set again (hedwig user passwd {user})",
                user=user, mechanism=mechanism,
            )  # fmt: skip
        return keys, principal

    def _not_checked(self, failure, user: str, source: str):
        """The check never ran (the queue was full, the connection closed), or failed."""
        self.throttle.ended(user, source, None)
        return failure

    def _checked(self, principal, user: str, source: str):
        throttle = self.throttle
        counts = throttle.ended(user, source, principal is not None)
        if counts is None:
            return principal
        self.failures += 1
        from_source, for_user = counts
        at_limit = (
            from_source == throttle.max_failures_per_source or for_user == throttle.max_failures_per_user
        )
        if at_limit or _worth_a_line(from_source) or _worth_a_line(for_user):
            self.log.warn(
                "failed login for user {user} from {source}: {from_source} from {source} and"
                " {for_user} for {user} in the last {window:g} s ({total} failed logins in all)",
                user=user, source=printable(source), from_source=from_source, for_user=for_user,
                window=throttle.window_s, total=self.failures,
            )  # fmt: skip
        return None

    def _check(self, user: str, password: bytes):
        """On a pool thread: the Principal, or None."""
        self._reload_if_changed()
        users = self.users
        stored = users.password_hash(user)
        if stored is None:
            verify_password(password, dummy_hash())  # as long as a real check
            return None
        return users.principal(user) if verify_password(password, stored) else None

    def _scram_lookup(self, user: str, mechanism: str):
        """On a pool thread: (ScramKeys or None, Principal or None, whether the user has
        a password)."""
        self._reload_if_changed()
        users = self.users
        keys = users.scram_keys(user, mechanism)
        principal = None if keys is None else users.principal(user)
        return keys, principal, users.password_hash(user) is not None

    def _reload_if_changed(self) -> None:
        stamp = _stamp(self.path)
        if stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            self.users = UsersFile.load(self.path)
        except UsersFileError as e:
            self.log.error("keeping the users read before: {error}", error=str(e))
            return
        self._told_without_keys = set()
        self.log.info(
            "read the users file {path} again ({count} users)", path=self.path, count=len(self.users.users)
        )

    def for_certificate(self, names):
        return self.users.principal_for_certificate(names) if names else None

    def anonymous(self):
        return self.users.anonymous() if self._allow_anonymous else None

    def describe(self) -> dict:
        """The logins checked and refused, for STATS and the metrics."""
        return {"failed": self.failures, **self.throttle.describe(), **self.queue.describe()}
