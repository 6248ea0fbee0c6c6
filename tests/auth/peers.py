"""Raw-socket peers of a real hub with [auth] on, and the users file the tests share."""

import json

from hedwig.auth import hash_password
from hedwig.protocol import Op, Status, encode_frame
from hedwig.protocol.auth_request import encode_auth
from hedwig.protocol.requests import encode_hello
from tests.hub.rawpeer import RawPeer

FAST = 10  # log2 n: the stored format is the hub's, the cost a test's

# name -> (password, users-file record without it)
USERS = {
    "alice": ("alice-pw", {"publish": ["t.*"], "subscribe": ["t.*"], "create": ["t.*"]}),
    "bob": ("bob-pw", {"publish": ["t.*"], "subscribe": ["t.*"]}),
    "writer": ("writer-pw", {"publish": ["w.*"], "create": ["w.*"]}),  # may publish, not read
    "root": ("root-pw", {"admin": True}),
    "leaf": ("leaf-pw", {"region": "leaf"}),
    "other": ("other-pw", {"region": "other"}),
}


def write_users(path) -> str:
    users = {
        name: {"password": hash_password(pw, log2_n=FAST), **record} for name, (pw, record) in USERS.items()
    }
    path.write_text(json.dumps({"users": users}))
    return str(path)


def write_conf(directory, users_file: str, region: str = "root") -> str:
    conf = directory / "hub.conf"
    conf.write_text(
        f"[region]\nname = {region}\n"
        f"[auth]\nenabled = true\nusers_file = {users_file}\nfailure_delay_s = 0.2\n"
    )
    return str(conf)


class Peer(RawPeer):
    """A socket that said HELLO and (unless `user` is None) AUTH; replies skip the
    parent's REGION_INTEREST frames. The AUTH status is kept, not asserted, so that a
    test run against a hub without authentication shows what that hub lets through."""

    def __init__(self, address, user: str | None, password: str | None = None):
        super().__init__(address)
        self.next_id = 1
        assert self.request(Op.HELLO, encode_hello("forger"))[0] is Status.SUCCESS
        self.auth_status = None
        if user is not None:
            secret = USERS[user][0] if password is None else password
            self.auth_status = self.request(Op.AUTH, encode_auth(user, secret))[0]

    def request(self, op, body):
        """(status, message, payload) of the reply to one request."""
        request_id = self.next_id
        self.next_id += 1
        self.send(encode_frame(op, request_id, body))
        return self.reply(request_id)

    def reply(self, request_id):
        got_id, status, message, payload = self.next_response()
        assert got_id == request_id, (got_id, request_id, status, message)
        return status, message, payload
