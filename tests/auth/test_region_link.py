"""A child region's link authenticates to a parent with [auth] on, as its region's user
([region] parent_user, parent_password_file), and relays once linked; with a wrong
password the parent refuses it and the child says why, over real hub processes."""

import json

import pytest

from hedwig.client import Client
from hedwig.protocol import Op, Status
from hedwig.protocol.auth_request import Credentials
from hedwig.testing.hubprocess import HubProcess
from hedwig.testing.polling import wait_until
from tests.auth.peers import Peer, write_conf, write_users


def root_stats(root):
    status, message, payload = Peer(root.address, "root").request(Op.STATS, b"")
    assert status is Status.SUCCESS, message
    return json.loads(bytes(payload))["regions"]


@pytest.fixture
def root(tmp_path):
    conf = write_conf(tmp_path, write_users(tmp_path / "users.json"))
    with HubProcess(tmp_path / "root", 0, "--conf", conf) as process:
        yield process


def start_leaf(tmp_path, root, password: str) -> HubProcess:
    secret = tmp_path / "leaf.password"
    secret.write_text(password + "\n")
    conf = tmp_path / "leaf.conf"
    conf.write_text(
        f"[region]\nname = leaf\nparent = root\nparent_address = {root.address}\n"
        f"parent_user = leaf\nparent_password_file = {secret}\n"
    )
    return HubProcess(tmp_path / "leaf", 0, "--conf", str(conf))  # (started by `with`)


def test_a_child_links_as_its_regions_user_and_relays(tmp_path, root):
    with start_leaf(tmp_path, root, "leaf-pw") as leaf:
        linked = lambda: [c["region"] for c in root_stats(root)["children"]] == ["leaf"]  # noqa: E731
        wait_until(linked, "the leaf to link")
        with Client(root.address, credentials=Credentials("alice", "alice-pw")) as at_root:
            subscription = at_root.subscribe("t.up", "s", start="earliest")
            with Client(leaf.address) as at_leaf:  # (the leaf's own [auth] is off)
                at_leaf.publish("t.up", b"from the leaf")
                assert subscription.receive(timeout=30).payload == b"from the leaf"


def test_a_child_with_a_wrong_password_is_refused_and_says_why(tmp_path, root):
    with start_leaf(tmp_path, root, "not-the-password") as leaf:
        wait_until(lambda: "refused AUTH as leaf" in leaf.output(), "the leaf to report the refusal")
        assert root_stats(root)["children"] == []
        assert "AUTHENTICATION_FAILED" in leaf.output()


def test_a_childs_compaction_travels_to_a_parent_with_auth_on(tmp_path, root):
    """TOPIC_OPTIONS is a region link's request: the child's region user may send it."""
    with start_leaf(tmp_path, root, "leaf-pw") as leaf:
        linked = lambda: [c["region"] for c in root_stats(root)["children"]] == ["leaf"]  # noqa: E731
        wait_until(linked, "the leaf to link")
        with Client(leaf.address) as at_leaf:
            at_leaf.create_topic("t.table", compaction=True)
        with Client(root.address, credentials=Credentials("alice", "alice-pw")) as at_root:
            at_root.subscribe("t.table", "s")  # (the root's copy: created plain)
            wait_until(lambda: at_root.describe("t.table")["compaction"], "the root's copy compacted")
        assert "does not take TOPIC_OPTIONS" not in leaf.output()
