"""One hub's state as plain rows: what the status page, /api and /metrics all show.

HubView reads the parts a hub was assembled from (the Hub with its counters, topic
manager, delivery manager and cache; the ledger store; garbage collection) when it is
asked, and never keeps what it read: the hub's hot paths only bump integers, and the
cost of looking lands on whoever looks. Every read is in memory (no disk, no metadata
store round trip), so a request never waits on I/O and never blocks the reactor for
longer than a walk over the open topics and their subscriptions.
"""

from hedwig import __version__
from hedwig.ledger.interface import NoSuchLedger
from hedwig.region.settings import relay_peer

# Rows a table of /api/status lists at most (the busiest first): a hub with very many
# topics or subscriptions keeps its page and its JSON bounded.
MAX_ROWS = 500


class HubView:
    """The rows of one hub. `ledgers`: its ILedgerStore; `gc`: its GarbageCollector."""

    def __init__(self, hub, ledgers, gc):
        self.hub = hub
        self.ledgers = ledgers
        self.gc = gc

    def identity(self) -> dict:
        hub = self.hub
        return {
            "name": hub.name,
            "region": hub.region,
            "version": __version__,
            "started_at": hub.started_at,
            "uptime_s": round(hub.clock.seconds() - hub.started_at, 3),
            "stopping": hub.stopping,
        }

    def open_topic_logs(self) -> list:
        """[(name, topic log)] of the topics this hub owns and has open, by name."""
        topics = self.hub.topics
        found = ((name, topics.get(name)) for name in sorted(topics.open_topics()))
        return [(name, topic_log) for name, topic_log in found if topic_log is not None]

    def topics(self, rates=None) -> list:
        """A row per open topic: seq-ids, messages held, bytes on disk, subscriptions and
        the publish rate (`rates`: topic -> messages/s, from History)."""
        rates = rates or {}
        delivery = self.hub.delivery
        rows = []
        for name, topic_log in self.open_topic_logs():
            first, last = topic_log.first_seq, topic_log.last_seq
            ranges = topic_log.describe()["ledgers"]
            rows.append(
                {
                    "topic": name,
                    "first_seq": first,
                    "last_seq": last,
                    "messages": max(0, last - first + 1),
                    "bytes": sum(r["bytes"] for r in ranges),
                    "ledgers": len(ranges),
                    "subscriptions": len(delivery.describe(name)),
                    "rate": round(rates.get(name, 0.0), 1),
                }
            )
        rows.sort(key=lambda r: (-r["rate"], r["topic"]))
        return rows

    def subscriptions(self) -> list:
        """A row per durable subscription of the open topics: consumed, delivered,
        backlog (lag behind the last seq-id), window and cursor state, kind, members,
        pending (delivered, unacknowledged) and redeliveries; `relay_to` names the
        neighbour region a hub's own relay subscription feeds."""
        rows = []
        delivery = self.hub.delivery
        for name, _topic_log in self.open_topic_logs():
            for row in delivery.describe(name):
                rows.append(
                    {
                        "topic": name,
                        "subscriber_id": row["subscriber_id"],
                        "consumed_seq": row["consumed_seq"],
                        "delivered_seq": row["delivered_seq"],
                        "backlog": row["backlog"],
                        "window": row["window"],
                        "state": row["state"],
                        "kind": row["kind"],
                        "members": row["members"],
                        "pending": row["pending"],
                        "redeliveries": row["redeliveries"],
                        "relay_to": relay_peer(row["subscriber_id"]),
                    }
                )
        rows.sort(key=lambda r: (-r["backlog"], r["topic"], r["subscriber_id"]))
        return rows

    def connections(self) -> list:
        rows = [
            {
                "peer": connection.peer,
                "client": connection.client_name,
                "hub_peer": connection.is_hub_peer,
                "subscriptions": connection.subscription_count,
                "buffered_bytes": connection.buffered_bytes,
            }
            for connection in self.hub.connections
        ]
        rows.sort(key=lambda r: (-r["subscriptions"], r["peer"]))
        return rows

    def regions(self, subscriptions=None) -> dict | None:
        """The region relays' state (None for a hub without them): the parent link,
        the children linked, and the lag of each neighbour's relay subscriptions here
        (messages stored here and not yet taken by that region)."""
        relays = self.hub.regions
        if relays is None:
            return None
        lag = {}
        for row in subscriptions if subscriptions is not None else self.subscriptions():
            if row["relay_to"] is not None:
                lag[row["relay_to"]] = lag.get(row["relay_to"], 0) + row["backlog"]
        stats = relays.stats()
        parent = stats.get("parent")
        return {
            "region": stats.get("region"),
            "parent": parent,
            "children": stats.get("children") or [],
            "relay_lag": lag,
            "relayed": stats.get("relay") or {},
        }

    def region(self) -> dict | None:
        """A hub of a region of several (a topic manager on ZooKeeper): its ZooKeeper
        session and the region's live hubs with their load and status pages, from the
        view its watches keep (no ZooKeeper read); None for an embedded hub."""
        topics = self.hub.topics
        zookeeper = getattr(topics, "zookeeper_stats", None)
        if zookeeper is None:
            return None
        stats = zookeeper()
        hubs = [dict(row, here=row.get("hub") == self.hub.name) for row in topics.hubs()]
        return {
            "zookeeper": {key: stats[key] for key in ("servers", "root", "session", "session_id")},
            "hubs": hubs,
            "topics_owned_here": stats["owned"],
            "taken_over_from": stats["taken_over_from"],
            "released_to": stats["released_to"],
            "recent_moves": stats["recent_moves"],
        }

    def messages_stored(self) -> int:
        """Messages stored since the start: clients' publishes and those relayed in from
        other regions (the status page's publish rate counts both)."""
        stored = self.hub.stats.messages_published
        relays = self.hub.regions
        if relays is not None:
            stored += (relays.stats().get("relay") or {}).get("appended_messages", 0)
        return stored

    def ledger_totals(self) -> dict:
        """The ledgers the store lists and the bytes of those whose size it knows. A store
        on RADOS lists a pool's ledgers at start without loading them (a load is a read
        of the pool, which a scrape must not wait on): those are `unsized` until a topic
        opens them, and `bytes` counts the others."""
        store = self.ledgers
        ids = store.list_ledgers()
        sized = unsized = 0
        for ledger_id in ids:
            try:
                sized += store.ledger_bytes(ledger_id)
            except NoSuchLedger:
                unsized += 1
        return {"count": len(ids), "bytes": sized, "unsized": unsized}

    def counters(self) -> dict:
        """The hub's STATS counters with the cache's and delivery's, as STATS has them."""
        return self.hub.hub_stats()

    def status(self, rates=None, history=None) -> dict:
        """Everything the status page shows, each table cut to MAX_ROWS rows."""
        subscriptions = self.subscriptions()
        topics = self.topics(rates)
        connections = self.connections()
        stats = self.hub.stats
        own = [r for r in subscriptions if r["relay_to"] is None]  # (the users', not the hubs' relays)
        return {
            "hub": self.identity(),
            "totals": {
                "topics": len(topics),
                "subscriptions": len(own),
                "relays": len(subscriptions) - len(own),
                "connections": len(connections),
                "messages_published": stats.messages_published,
                "messages_stored": self.messages_stored(),
                "messages_delivered": stats.messages_delivered,
                "backlog": sum(r["backlog"] for r in own),
                "cache_bytes": self.hub.cache.bytes,
                "ledgers": self.ledger_totals(),
            },
            "topics": topics[:MAX_ROWS],
            "subscriptions": subscriptions[:MAX_ROWS],
            "connections": connections[:MAX_ROWS],
            "regions": self.regions(subscriptions),
            "region": self.region(),
            "history": list(history or ()),
        }
