"""The Twisted hub server.

- core.py: `Hub`, the operations on topics (publish, subscribe, reads, stats);
- connection.py: `HubConnection`, one client connection (frames, ordered replies,
  handles, deliveries, backpressure), and `HubFactory`;
- topics.py: `TopicManager`, topics opened once each, requests queued behind the open;
- gc.py, stats.py, errors.py, replies.py: garbage collection, counters, statuses, order;
- service.py: `HubService`, the lifecycle (stores, listener, graceful shutdown);
- main.py: `hedwig hub` (`add_hub_arguments`, `run_hub`); the twistd plugin is
  twisted/plugins/hedwig_plugin.py.

Nothing here imports the global reactor except HubService and run_hub, where the reactor
is chosen; everything else takes its clock as an argument.
"""
