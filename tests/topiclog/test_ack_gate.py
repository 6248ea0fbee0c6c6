"""The hub-wide acknowledgement gate (a region hub's ZooKeeper connection SUSPENDED):
appends are stored but acknowledged only once the gate opens, in call order; an append
that fails is answered at once."""

from hedwig.ledger.interface import LedgerStoreFull
from hedwig.topiclog.ack_gate import AckGate
from tests.topiclog.harness import LogStack, message_set, settle


def test_held_appends_are_stored_and_acknowledged_in_order_once_the_gate_opens(make_stack):
    stack = make_stack()
    manager = stack.manager()
    topic_log = settle(stack, manager.open("t"))
    first = settle(stack, topic_log.append(message_set(1), 1))
    manager.gate.hold()
    held = [topic_log.append(message_set(2, tag=i), 2) for i in range(3)]
    stack.clock.advance(0.05)
    assert not any(d.called for d in held)
    assert manager.gate.parked == 1
    assert stack.ledgers.last_entry_id(topic_log.open_ledger_id) == 3  # stored meanwhile
    seen = []
    for d in held:
        d.addCallback(lambda entry: seen.append(entry.first_seq))
    manager.gate.release()
    assert seen == [2, 4, 6] and first.first_seq == 1
    assert manager.gate.parked == 0


def test_failures_are_answered_while_the_gate_is_held_in_their_place(tmp_path):
    stack = LogStack("memory", tmp_path)
    manager = stack.manager()
    topic_log = settle(stack, manager.open("t"))
    manager.gate.hold()
    stack.ledgers.fail_appends(LedgerStoreFull("full"))
    refused = topic_log.append(message_set(1), 1)  # (nothing held before it: answered)
    assert refused.called
    refused.addErrback(lambda f: f.trap(LedgerStoreFull))
    held = topic_log.append(message_set(1), 1)
    stack.ledgers.fail_appends(LedgerStoreFull("full"))
    behind = topic_log.append(message_set(1), 1)  # (answered in its place: after `held`)
    assert not held.called and not behind.called
    manager.gate.release()
    assert held.result.first_seq == 1
    behind.addErrback(lambda f: f.trap(LedgerStoreFull))
    assert behind.called
    stack.close()


def test_a_gate_never_held_costs_nothing_to_a_log():
    gate = AckGate()
    assert not gate.held and gate.parked == 0
    gate.release()  # (nothing parked: nothing to do)
