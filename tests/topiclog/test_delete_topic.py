"""TopicLogManager.delete_topic: the appends the log accepted finish, the record goes with
its ledgers recorded as garbage in the same transaction, then their files; an open meanwhile
waits and creates the topic afresh; a file that cannot be deleted stays recorded."""

import pytest

from hedwig.ledger.interface import LedgerError
from tests.topiclog.harness import message_set, settle


@pytest.fixture
def stack(make_stack):
    return make_stack()


def test_delete_finishes_accepted_appends_then_frees_every_ledger(stack):
    manager = stack.manager()
    topic_log = settle(stack, manager.open("t"))
    settle(stack, topic_log.append(message_set(3), 3))
    ledgers = {r.ledger_id for r in topic_log.ranges}
    accepted = topic_log.append(message_set(2, tag=1), 2)
    deleted = manager.delete_topic("t")
    assert settle(stack, accepted).last_seq == 5
    assert sorted(settle(stack, deleted)) == sorted(ledgers)
    assert settle(stack, stack.metadata.get_topic("t")) is None
    assert settle(stack, stack.metadata.list_garbage()) == {}
    assert not ledgers & set(stack.ledgers.list_ledgers())
    assert manager.get("t") is None


def test_an_open_during_the_delete_waits_and_starts_the_topic_afresh(stack):
    manager = stack.manager()
    topic_log = settle(stack, manager.open("t"))
    settle(stack, topic_log.append(message_set(4), 4))
    deleted = manager.delete_topic("t")
    reopened = manager.open("t")
    settle(stack, deleted)
    fresh = settle(stack, reopened)
    assert fresh is not topic_log
    assert (fresh.last_seq, settle(stack, fresh.append(message_set(1), 1)).first_seq) == (0, 1)


def test_a_topic_never_created_deletes_nothing(stack):
    assert settle(stack, stack.manager().delete_topic("never")) is None


def test_a_ledger_whose_file_stays_is_left_recorded_as_garbage(stack, monkeypatch):
    manager = stack.manager()
    topic_log = settle(stack, manager.open("t"))
    settle(stack, topic_log.append(message_set(1), 1))
    (ledger_id,) = {r.ledger_id for r in topic_log.ranges}

    def refuse(_ledger_id):
        raise LedgerError("the disk said no")

    monkeypatch.setattr(stack.ledgers, "delete", refuse)
    assert settle(stack, manager.delete_topic("t")) == []
    # The record is gone; the ledger is known as garbage, for the next start's sweep.
    assert settle(stack, stack.metadata.get_topic("t")) is None
    assert settle(stack, stack.metadata.list_garbage()) == {ledger_id: "t"}
