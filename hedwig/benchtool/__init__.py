"""`hedwig bench`: measure a deployment from a client's side, as `nats bench` and
kafka-producer-perf-test do: publish rate and request latency, delivery rate and
publish-to-delivery latency with subscribers attached, and the one-message round trip.

measure.py holds the arithmetic (percentiles, rates), runs.py the three runs over the
blocking client, command.py the subcommand's options and report. bench/ at the top of
the repository is different: the project's own benchmarks, against hubs it starts.
"""
