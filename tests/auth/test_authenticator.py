"""The users-file authenticator (hedwig.auth.authenticator) without a hub: password checks
leave the reactor thread through run_in_thread, at most max_concurrent at a time; an
unknown user is checked as long as a wrong password; the file is read again when it
changes, and a file that no longer reads keeps the users read before."""

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock

from hedwig.auth.authenticator import UsersFileAuthenticator
from hedwig.auth.hashing import dummy_hash
from tests.auth.peers import write_users


class HeldThreads:
    """run_in_thread that records each call and runs it only when released."""

    def __init__(self):
        self.calls = []

    def __call__(self, f, *args):
        d = Deferred()
        self.calls.append((f, args, d))
        return d

    def release(self, index=0):
        f, args, d = self.calls.pop(index)
        d.callback(f(*args))


def test_checks_run_off_the_reactor_at_most_max_concurrent_at_once(tmp_path):
    threads = HeldThreads()
    auth = UsersFileAuthenticator(
        write_users(tmp_path / "u.json"), Clock(), max_concurrent=2, run_in_thread=threads
    )
    outcomes = []
    for user, password in (("alice", b"alice-pw"), ("bob", b"wrong"), ("nobody", b"x")):
        auth.authenticate(user, password).addCallback(outcomes.append)
    assert len(threads.calls) == 2 and outcomes == []  # nothing checked inline; the third waits
    threads.release()
    assert len(threads.calls) == 2  # the third started as the first ended
    threads.release()
    threads.release()
    assert [p.name if p else None for p in outcomes] == ["alice", None, None]


def test_an_unknown_user_costs_a_real_check(tmp_path, monkeypatch):
    checked = []
    import hedwig.auth.authenticator as module

    monkeypatch.setattr(module, "verify_password", lambda password, stored: checked.append(stored) or False)
    auth = UsersFileAuthenticator(write_users(tmp_path / "u.json"), Clock(), run_in_thread=HeldThreads())
    assert auth._check("nobody", b"pw") is None
    assert checked == [dummy_hash()]


def test_the_file_is_read_again_when_it_changes_and_a_bad_one_is_not_taken(tmp_path):
    path = tmp_path / "u.json"
    auth = UsersFileAuthenticator(write_users(path), Clock(), run_in_thread=HeldThreads())
    assert auth._check("alice", b"alice-pw").name == "alice"
    text = path.read_text()
    path.write_text(text.replace('"alice"', '"carol"') + "\n")  # (another size: a new stamp)
    assert auth._check("alice", b"alice-pw") is None
    assert auth._check("carol", b"alice-pw").name == "carol"
    path.write_text("{not json")
    assert auth._check("carol", b"alice-pw").name == "carol"  # the users read before stay
