"""Passwords and certificates checked against the users file (IAuthenticator).

scrypt is CPU- and memory-heavy by design, so a check never runs on the reactor thread:
it runs in the reactor's thread pool, at most [auth] max_concurrent_checks at a time
hub-wide (a flood of AUTH requests queues here instead of taking every core). The file is
read again, on that thread, when its size or modification time changed, so `hedwig user
add` takes effect for the next connection to authenticate; a file that no longer reads
is reported once and the last good one kept.
"""

import os

from twisted.internet.defer import DeferredSemaphore
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from zope.interface import implementer

from hedwig.auth.hashing import dummy_hash, verify_password
from hedwig.auth.interface import IAuthenticator
from hedwig.auth.users import UsersFile, UsersFileError


def _stamp(path: str):
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size, status.st_ino


@implementer(IAuthenticator)
class UsersFileAuthenticator:
    log = Logger()

    def __init__(self, path: str, reactor, *, max_concurrent: int = 2, allow_anonymous: bool = False,
                 run_in_thread=None):  # fmt: skip
        """`run_in_thread(f, *args)`: Deferred of f(*args) off the reactor thread (default:
        the reactor's thread pool)."""
        self.path = path
        self._stamp = _stamp(path)
        self.users = UsersFile.load(path)
        self._allow_anonymous = allow_anonymous
        self._checks = DeferredSemaphore(max_concurrent)
        if run_in_thread is None:

            def run_in_thread(f, *args):
                return deferToThreadPool(reactor, reactor.getThreadPool(), f, *args)

        self._run_in_thread = run_in_thread

    def authenticate(self, user: str, password: bytes):
        return self._checks.run(self._run_in_thread, self._check, user, password)

    def _check(self, user: str, password: bytes):
        """On a pool thread: the Principal, or None."""
        self._reload_if_changed()
        users = self.users
        stored = users.password_hash(user)
        if stored is None:
            verify_password(password, dummy_hash())  # as long as a real check
            return None
        return users.principal(user) if verify_password(password, stored) else None

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
        self.log.info(
            "read the users file {path} again ({count} users)", path=self.path, count=len(self.users.users)
        )

    def for_certificate(self, names):
        return self.users.principal_for_certificate(names) if names else None

    def anonymous(self):
        return self.users.anonymous() if self._allow_anonymous else None
