"""Receiving from a real hub through the blocking client, for the integration tests."""


def receive_all(subscription, count: int, timeout: float = 10.0, ack: bool = True) -> list:
    """The next `count` messages of a blocking-client subscription, each acknowledged
    unless `ack` is False; fails the test when one does not come within `timeout` s."""
    messages = []
    for _ in range(count):
        message = subscription.receive(timeout=timeout)
        assert message is not None, f"only {len(messages)} of {count} messages came"
        messages.append(message)
        if ack:
            subscription.ack(message)
    return messages
