"""The Twisted client as a consumer of its application's producer (IConsumer-like).

An application that publishes from a stream (a file, a socket) registers its
IPushProducer with the client; the client pauses it while it holds `max_in_flight`
messages or more (sent and unanswered, or queued) and resumes it below half of that, so
a fast source never makes the client buffer without bound.
"""


class ProducerBackpressure:
    """Mixed into the Twisted client, which gives in_flight, queued and max_in_flight,
    and calls _check_producer whenever they change."""

    _producer = None  # the registered IPushProducer
    _producer_paused = False  # whether this client paused it

    def registerProducer(self, producer, streaming: bool = True) -> None:
        """Pause `producer` (an IPushProducer) while the client holds max_in_flight
        messages or more; resume it below half of that."""
        self._producer = producer
        self._producer_paused = False
        self._check_producer()

    def unregisterProducer(self) -> None:
        self._producer = None

    def _check_producer(self) -> None:
        producer = self._producer
        if producer is None:
            return
        held = self.in_flight + self.queued
        if not self._producer_paused and held >= self.max_in_flight:
            self._producer_paused = True
            producer.pauseProducing()
        elif self._producer_paused and held < self.max_in_flight // 2:
            self._producer_paused = False
            producer.resumeProducing()
