"""A delivery channel for tests: records what it is given and checks there is no gap and
no duplicate per subscription; with `high_water` it pauses itself the way a transport
registered with a push producer does (pauseProducing once its buffer is over the mark)."""

from zope.interface import implementer

from hedwig.delivery import IDeliveryChannel


@implementer(IDeliveryChannel)
class RecordingChannel:
    def __init__(self, manager=None, high_water=None):
        self.manager = manager
        self.high_water = high_water  # messages buffered before the "transport" pauses
        self.buffered = 0
        self.paused = False
        self.deliveries = []  # (handle, first seq, last seq, entry)
        self.next_seq = {}  # handle -> the seq-id expected next
        self.ended = []  # (handle, event)
        self.calls_while_paused = 0
        self.pauses = 0

    def deliver(self, handle, entry, start, stop):
        if self.paused:
            self.calls_while_paused += 1
        assert 0 <= start < stop <= entry.count, (start, stop, entry)
        first = entry.first_seq + start
        expected = self.next_seq.get(handle)
        assert expected is None or first == expected, f"handle {handle}: got {first}, expected {expected}"
        self.next_seq[handle] = entry.first_seq + stop
        self.deliveries.append((handle, first, entry.first_seq + stop - 1, entry))
        self.buffered += stop - start
        if self.high_water is not None and not self.paused and self.buffered >= self.high_water:
            self.paused = True
            self.pauses += 1
            self.manager.pause_channel(self)

    def subscription_ended(self, handle, event):
        self.ended.append((handle, event))

    def drain(self):
        """The socket took everything: resume the producer."""
        self.buffered = 0
        if self.paused:
            self.paused = False
            self.manager.resume_channel(self)

    def messages(self, handle=None):
        return sum(last - first + 1 for h, first, last, _ in self.deliveries if handle is None or h == handle)

    def last_seq(self, handle):
        return self.next_seq.get(handle, 1) - 1
