"""A hub whose Kafka Produce stores nothing: every batch answered at once as stored,
its records neither read nor kept (the request is still decoded and the answer encoded
by the Kafka front end, as for any request). What a Kafka producer reaches against it is
the producer's own ceiling on this machine: bench/kafka_bench.py measures confluent-kafka
against it in the same run, to tell the client's cost from the hub's.

    python bench/kafka_null_sink.py --port P --data-dir D --kafka-port K  (`hedwig hub`'s options)

Used as HubProcess's launcher; not a hub anyone should run.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hedwig.commands.main import main
from hedwig.kafka import listener
from hedwig.kafka.apis import KafkaApis


class NullSinkApis(KafkaApis):
    """The hub's Kafka APIs, Produce answered without reading or storing a record."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.handlers[0] = self.produce

    def produce(self, _version, request, _peer):
        if int(request.acks) == 0:
            return None
        return {
            "responses": [
                {
                    "name": topic.name,
                    "partition_responses": [
                        {"index": p.index, "error_code": 0, "base_offset": 0, "log_append_time": -1}
                        for p in topic.partition_data
                    ],
                }
                for topic in request.topic_data
            ],
            "throttle_time": 0,
        }


if __name__ == "__main__":
    listener.KafkaApis = NullSinkApis
    sys.exit(main(["hub", *sys.argv[1:]]))
