"""Kafka's wire protocol on a hub: a listener beside the native one, over the same topics.

A Kafka client (librdkafka, the Java client, kafka-python, aiokafka, kcat) produces to and
fetches from the hub's topics through `[kafka] port`: each hedwig topic is a Kafka topic of
one partition, a Kafka offset is a seq-id - 1, a record's key is the message key, its
headers the message properties and its timestamp the publish time (docs/kafka.md).

    listener.KafkaFactory -> connection.KafkaConnection (frames, headers, replies in order)
        -> apis.KafkaApis (one method per API, calling the Hub's core API)
        ; records.py (record batches v2), produced.py (records kept as producers sent
        them, for Fetches), envelope.py (kio's message types), waits.py
"""
