"""The Twisted hub server.

- core.py: `Hub`, the operations on topics (publish, subscribe, reads, stats);
- connection.py: `HubConnection`, one client connection (frames, ordered replies), and
  `HubFactory`; handlers.py: its request handlers (the op table); flow.py: its
  deliveries and backpressure;
- interface.py: `ITopicManager`; relays.py: `IRelays`, the seam region relays plug into;
- assembly.py: `assemble_hub`, the one place a hub's parts are built and wired;
- logs.py: the hub's log line format;
- topics.py: `TopicManager`, topics opened once each, requests queued behind the open;
- gc.py, stats.py, errors.py, replies.py: garbage collection, counters, statuses, order;
- service.py: `HubService`, the lifecycle (stores, listener, graceful shutdown);
- reactors.py: the event loop ([hub] reactor: Twisted's own, asyncio's or uvloop's);
- main.py: `hedwig hub` (`add_hub_arguments`, `run_hub`); the twistd plugin is
  twisted/plugins/hedwig_plugin.py.

Nothing here imports the global reactor except HubService and run_hub, where the reactor
is chosen; everything else takes its clock as an argument.
"""
