"""The users file, password hashes and permission matching (hedwig.auth), without a hub."""

import json
import os
import stat
import subprocess
import sys

import pytest

from hedwig.auth import Principal, UsersFile, UsersFileError, hash_password, verify_password
from hedwig.auth.hashing import HashError, parse_hash
from hedwig.auth.principal import CREATE, PUBLISH, SUBSCRIBE
from hedwig.auth.scram import MECHANISMS as SCRAM_MECHANISMS
from hedwig.auth.scram import derive_keys, stored_keys

FAST = 4  # log2 n for tests: the format is the same, the cost is not
_HASH = hash_password("pw", log2_n=FAST)
_KEYS = stored_keys("pw")["SCRAM-SHA-256"]


def test_a_password_verifies_and_a_wrong_one_does_not():
    stored = hash_password("s3cret", log2_n=FAST)
    assert stored.startswith("scrypt$4$8$1$")
    assert verify_password(b"s3cret", stored)
    assert not verify_password(b"s3crex", stored)
    assert not verify_password(b"", stored)
    assert not verify_password(b"x" * 2000, stored)


def test_each_hash_has_its_own_salt():
    assert hash_password("same", log2_n=FAST) != hash_password("same", log2_n=FAST)


@pytest.mark.parametrize(
    "stored",
    ["", "plain", "scrypt$4$8$1$AAAA", "bcrypt$4$8$1$AAAA$AAAA", "scrypt$40$8$1$AAAA$" + "A" * 44,
     "scrypt$x$8$1$AAAA$AAAA", "scrypt$4$8$1$!!!$AAAA", "scrypt$4$8$1$AAAA$AAAA"],
)  # fmt: skip
def test_hashes_that_are_not_ours_are_refused(stored):
    with pytest.raises(HashError):
        parse_hash(stored)


def test_patterns_grant_per_action_and_admin_grants_all():
    alice = Principal("alice", {PUBLISH: ("orders.*",), SUBSCRIBE: ("orders.*", "audit"), CREATE: ()})
    assert alice.may(PUBLISH, "orders.eu")
    assert not alice.may(PUBLISH, "audit")
    assert alice.may(SUBSCRIBE, "audit")
    assert not alice.may(SUBSCRIBE, "audit2")
    assert not alice.may(CREATE, "orders.eu")
    assert not alice.may(PUBLISH, "Orders.eu")  # case-sensitive, as topic names are
    root = Principal("root", admin=True)
    assert root.may(CREATE, "anything") and root.owns("alice") and root.owns(None)
    assert alice.owns("alice") and alice.owns(None) and not alice.owns("bob")


def test_a_region_relays_only_its_origins():
    eu = Principal("eu", region="eu", relay_origins=("eu", "eu-*"))
    assert eu.may_relay_origin("eu") and eu.may_relay_origin("eu-west")
    assert not eu.may_relay_origin("us")
    assert not Principal("alice", relay_origins=("*",)).may_relay_origin("eu")  # not a region


def _write(path, users):
    path.write_text(json.dumps({"users": users}))
    return str(path)


def test_the_file_round_trips_owner_only(tmp_path):
    users = UsersFile({}, str(tmp_path / "users.json"))
    users.put("alice", {"password": hash_password("pw", log2_n=FAST), "publish": ["a.*"]})
    users.put("spark", {"certificates": ["Spark.Example.com"], "subscribe": ["*"]})
    users.save()
    assert stat.S_IMODE(os.stat(users.path).st_mode) == 0o600
    loaded = UsersFile.load(users.path)
    assert loaded.principal("alice").may(PUBLISH, "a.b")
    assert verify_password(b"pw", loaded.password_hash("alice"))
    assert loaded.principal_for_certificate({"spark.example.com"}).name == "spark"
    assert loaded.principal_for_certificate({"other"}) is None
    assert loaded.principal("nobody") is None
    assert not loaded.anonymous().may(SUBSCRIBE, "x")


@pytest.mark.parametrize(
    "users, why",
    [
        ({"al ice": {"password": "x"}}, "not a user name"),
        ({"alice": {"password": "x"}}, "scrypt"),
        ({"alice": {"certificates": ["c"], "publsh": ["*"]}}, "unknown field"),
        ({"alice": {}}, "needs a password or certificates"),
        ({"alice": {"certificates": ["c"], "publish": "*"}}, "list of name patterns"),
        ({"alice": {"certificates": ["c"], "publish": ["a/b"]}}, "list of name patterns"),
        ({"alice": {"certificates": ["c"], "admin": "yes"}}, "admin is true or false"),
        ({"alice": {"certificates": ["c"], "relay_origins": ["eu"]}}, "needs region"),
        ({"anonymous": {"certificates": ["c"]}}, "do not authenticate"),
        ({"alice": {"password": _HASH, "scram": {"SCRAM-SHA-1": _KEYS}}}, "not a SCRAM mechanism"),
        (
            {"alice": {"password": _HASH, "scram": {"SCRAM-SHA-256": {**_KEYS, "iterations": 10}}}},
            "iterations",
        ),
        ({"alice": {"password": _HASH, "scram": {"SCRAM-SHA-512": _KEYS}}}, "keys of 64 bytes"),
        ({"alice": {"certificates": ["c"], "scram": {"SCRAM-SHA-256": _KEYS}}}, "beside a password"),
    ],
)
def test_a_bad_users_file_is_refused_naming_the_problem(tmp_path, users, why):
    with pytest.raises(UsersFileError, match=why):
        UsersFile.load(_write(tmp_path / "users.json", users))


def test_a_file_that_is_not_json_or_not_users_is_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(UsersFileError, match="not JSON"):
        UsersFile.load(str(bad))
    bad.write_text("[]")
    with pytest.raises(UsersFileError, match="is an object"):
        UsersFile.load(str(bad))
    with pytest.raises(UsersFileError, match="cannot read"):
        UsersFile.load(str(tmp_path / "missing.json"))


def _hedwig(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "hedwig", *args],
        capture_output=True, text=True, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_hedwig_user_add_list_remove(tmp_path):
    path = str(tmp_path / "users.json")
    added = _hedwig("user", "--users-file", path, "add", "alice", "--publish", "orders.*", "--subscribe", "*",
                    env={"HEDWIG_PASSWORD": "correct horse"})  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert "correct horse" not in (tmp_path / "users.json").read_text()
    assert verify_password(b"correct horse", UsersFile.load(path).password_hash("alice"))
    listed = _hedwig("user", "--users-file", path, "list")
    assert listed.stdout.split() == [
        "alice", "publish=orders.*", "subscribe=*", "password", "scram=SCRAM-SHA-256,SCRAM-SHA-512"
    ]  # fmt: skip
    assert "scrypt" not in listed.stdout
    removed = _hedwig("user", "--users-file", path, "remove", "alice")
    assert removed.returncode == 0 and UsersFile.load(path).users == {}
    again = _hedwig("user", "--users-file", path, "remove", "alice")
    assert again.returncode == 1 and "has no user alice" in again.stderr


def test_hedwig_user_passwd_writes_the_scram_keys_a_user_without_them_lacks(tmp_path):
    """A user whose password was set before SCRAM was served (a hash, no keys) gets them,
    and keeps its permissions, when `hedwig user passwd` sets its password again."""
    path = tmp_path / "users.json"
    old = {"password": hash_password("old", log2_n=FAST), "subscribe": ["t.*"]}
    path.write_text(json.dumps({"users": {"bob": old}}))
    listed = _hedwig("user", "--users-file", str(path), "list")
    assert listed.stdout.split() == ["bob", "subscribe=t.*", "password", "scram=none"]
    done = _hedwig("user", "--users-file", str(path), "passwd", "bob", env={"HEDWIG_PASSWORD": "new-pw"})
    assert done.returncode == 0, done.stderr
    users = UsersFile.load(str(path))
    assert verify_password(b"new-pw", users.password_hash("bob"))
    assert users.principal("bob").grants["subscribe"] == ("t.*",)
    for mechanism in SCRAM_MECHANISMS:
        keys = users.scram_keys("bob", mechanism)
        assert keys.iterations == 4096
        assert keys == derive_keys(b"new-pw", mechanism, salt=keys.salt)
    assert "new-pw" not in path.read_text()
    missing = _hedwig("user", "--users-file", str(path), "passwd", "eve", env={"HEDWIG_PASSWORD": "x"})
    assert missing.returncode == 1 and "has no user eve" in missing.stderr


def test_hedwig_user_add_without_a_password_source_fails_without_a_prompt(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "HEDWIG_PASSWORD"}
    result = subprocess.run(
        [sys.executable, "-m", "hedwig", "user", "--users-file", str(tmp_path / "u.json"), "add", "bob"],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 1 and "HEDWIG_PASSWORD" in result.stderr
    assert not (tmp_path / "u.json").exists()


def test_hedwig_user_add_creates_the_file_a_conf_names_owner_only(tmp_path):
    """Issue 28: `hedwig user --conf hub.conf add` refused to run until the users file
    existed, though the docs make it with that command; it creates it, mode 0600."""
    conf = tmp_path / "hub.conf"
    conf.write_text("[auth]\nenabled = true\nusers_file = users.json\n")  # (relative to the conf)
    added = _hedwig("user", "--conf", str(conf), "add", "ops", "--admin", env={"HEDWIG_PASSWORD": "pw-1"})
    assert added.returncode == 0, added.stderr
    users = tmp_path / "users.json"
    assert users.stat().st_mode & 0o777 == 0o600
    assert UsersFile.load(str(users)).principal("ops").admin
